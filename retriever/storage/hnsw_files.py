"""Checks of the vector index files Chroma keeps beside ``chroma.sqlite3`` (one directory per HNSW segment).

Chroma reads these files without checking them: a damaged ``header.bin`` or ``index_metadata.pickle``
makes every read of the collection fail with an ``InternalError`` that names no file, and garbage in
``data_level0.bin`` can crash the process; a truncated one silently drops statements from dense
search. Chroma keeps no other copy of the vectors once they are in these files. So they are checked
here, by their layout (hnswlib's, as Chroma writes it), before they are trusted:

    header.bin             100 bytes: format version, then hnswlib's fields (element counts, sizes,
                           offsets, graph parameters)
    data_level0.bin        one record per element: its neighbour list, its vector, its label
    length.bin             per element, its vector's norm (float32)
    link_lists.bin         per element, the byte size of its upper-level neighbour lists, then the lists
    index_metadata.pickle  Chroma's label <-> id maps (parsed opcode by opcode, never unpickled)

The check reads every file once (a few seconds at a million statements). A passed check is remembered
beside the files (``vector_files_checked.json``: each file's name, modification time and size), so that a
new process opening files already checked (``rag-app show``, a search) only stats them; any write to a
file changes its stamp and brings the full check back. `rag-app status` always reads every file.
"""

from __future__ import annotations

import json
import math
import pickletools
import struct
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

HEADER = "header.bin"
DATA = "data_level0.bin"
LENGTHS = "length.bin"
LINKS = "link_lists.bin"
METADATA = "index_metadata.pickle"
SEGMENT_FILES = (HEADER, DATA, LENGTHS, LINKS, METADATA)
# int32 version, then offsetLevel0, max_elements, cur_element_count, size_data_per_element,
# label_offset, offsetData (size_t each), maxlevel (int), enterpoint_node (uint32), maxM, maxM0, M
# (size_t), mult (double), ef_construction (size_t).
_HEADER = struct.Struct("<iQQQQQQiIQQQdQ")
_DELETED = 0x01  # hnswlib marks a deleted element in the third byte of its level-0 list size
CHECKED = "vector_files_checked.json"
VectorFilesStamp = tuple[tuple[str, int, int], ...]


@dataclass(frozen=True, slots=True)
class HnswHeader:
    elements: int
    capacity: int
    record_size: int
    label_offset: int
    data_offset: int
    max_level: int
    entry_point: int
    max_links: int  # maxM: neighbours per upper level
    max_links0: int  # maxM0: neighbours at level 0

    @property
    def dimensions(self) -> int:
        return (self.label_offset - self.data_offset) // 4


@dataclass(frozen=True, slots=True)
class HnswSegmentState:
    """One segment directory: how many vectors it holds (live), or the first damage found."""

    directory: Path
    vectors: int = 0
    problem: str = ""  # "FILE is damaged (why)", naming the file


VECTOR_REPAIR = "`rag-app repair` embeds the statements again from their stored text"
CHECK_ATTEMPTS = 5  # files found damaged while being written are read again, this many times at most
SETTLE_S = 0.1  # how long a write of the files is given before they are read again


class VectorIndexDamagedError(ValueError):
    """A vector index file is damaged; the message names it."""


def vector_files_stamp(chroma_dir: Path) -> VectorFilesStamp:
    """Name, modification time and size of every vector index file: what a check was made of."""
    stamps = []
    for directory in segment_directories(chroma_dir):
        for name in SEGMENT_FILES:
            try:
                stat = (directory / name).stat()
            except OSError:
                continue
            stamps.append((str(directory / name), stat.st_mtime_ns, stat.st_size))
    return tuple(stamps)


def check_vector_files(chroma_dir: Path, already_checked: VectorFilesStamp | None = None) -> VectorFilesStamp:
    """Check every segment under ``chroma_dir`` unless its files are as they were when a check passed
    (``already_checked`` in this process, or the check remembered beside the files); returns the files'
    stamp. The first damaged file raises :class:`VectorIndexDamagedError` naming it."""
    for _attempt in range(CHECK_ATTEMPTS):
        stamp = vector_files_stamp(chroma_dir)
        if stamp == already_checked or stamp == checked_stamp(chroma_dir):
            return stamp
        problem = _first_problem(chroma_dir)
        if not problem:
            remember_checked(chroma_dir, stamp)
            return stamp
        # Chroma writes the files again whenever a client first loads them (any process's): a file read
        # in the middle of that write looks damaged. Damage is a file that reads the same once at rest.
        time.sleep(SETTLE_S)
        if vector_files_stamp(chroma_dir) == stamp:
            break
    raise VectorIndexDamagedError(f"{problem}; {VECTOR_REPAIR}")


def _first_problem(chroma_dir: Path) -> str:
    for directory in segment_directories(chroma_dir):
        state = check_segment(directory)
        if state.problem:
            return state.problem
    return ""


def checked_stamp(chroma_dir: Path) -> VectorFilesStamp | None:
    """The stamp of the files as they were when a check last passed (any process), or None."""
    try:
        stamps = json.loads((chroma_dir / CHECKED).read_text(encoding="utf-8"))
        return tuple((str(name), int(mtime), int(size)) for name, mtime, size in stamps)
    except (OSError, ValueError, TypeError):
        return None  # never written, unreadable or damaged: the files are checked again


def remember_checked(chroma_dir: Path, stamp: VectorFilesStamp) -> None:
    """Record that the files as ``stamp`` describes them passed the check (a read-only index skips it)."""
    temporary = chroma_dir / f"{CHECKED}.tmp"
    try:
        temporary.write_text(json.dumps([list(entry) for entry in stamp]), encoding="utf-8")
        temporary.replace(chroma_dir / CHECKED)
    except OSError:
        pass


def segment_directories(chroma_dir: Path) -> list[Path]:
    """The HNSW segment directories under a Chroma directory (those that hold a ``header.bin``)."""
    if not chroma_dir.is_dir():
        return []
    return sorted(path.parent for path in chroma_dir.glob(f"*/{HEADER}"))


def check_segment(directory: Path) -> HnswSegmentState:
    """The state of one segment directory, with the first damaged file named."""
    try:
        return HnswSegmentState(directory, vectors=_live_vectors(directory))
    except VectorIndexDamagedError as error:
        return HnswSegmentState(directory, problem=str(error))


def _live_vectors(directory: Path) -> int:
    header = read_header(directory / HEADER)
    data = _sized(directory / DATA, header, header.record_size, "a record per element")
    norms = np.fromfile(_sized(directory / LENGTHS, header, 4, "a norm per element"), dtype="<f4")
    if not np.all(np.isfinite(norms[: header.elements])):
        raise VectorIndexDamagedError(f"{directory / LENGTHS} is damaged (a vector norm that is not a number)")
    _check_upper_lists(directory / LINKS, header)
    live = _check_records(data, header)
    metadata = directory / METADATA
    if metadata.exists():
        _check_pickle(metadata)
    return live


def read_header(path: Path) -> HnswHeader:
    try:
        raw = path.read_bytes()
    except OSError as error:
        raise VectorIndexDamagedError(f"{path} is unreadable ({error.strerror or error})") from error
    if len(raw) != _HEADER.size:
        raise VectorIndexDamagedError(f"{path} is damaged ({len(raw)} bytes, a header has {_HEADER.size})")
    (version, offset0, capacity, elements, record_size, label_offset, data_offset, max_level, entry_point,
     max_links, max_links0, m, mult, _ef) = _HEADER.unpack(raw)  # fmt: skip
    header = HnswHeader(elements, capacity, record_size, label_offset, data_offset, max_level, entry_point,
                        max_links, max_links0)  # fmt: skip
    empty = elements == 0 and max_level == -1  # a new index: no entry point yet
    sane = (
        version == 1
        and offset0 == 0
        and 0 <= elements <= capacity < 2**40
        and data_offset == (max_links0 + 1) * 4
        and 0 < max_links <= 4096
        and max_links0 == 2 * m
        and label_offset + 8 == record_size
        and (label_offset - data_offset) % 4 == 0
        and 0 < header.dimensions <= 65536
        and (empty or (0 <= max_level < 64 and entry_point < elements))
        and math.isfinite(mult)
    )
    if not sane:
        raise VectorIndexDamagedError(f"{path} is damaged (its fields do not describe an HNSW index)")
    return header


def _sized(path: Path, header: HnswHeader, unit: int, what: str) -> Path:
    """``path``, when its size holds ``unit`` bytes per element counted (Chroma writes the whole
    capacity of an index still empty, the elements' only otherwise)."""
    try:
        size = path.stat().st_size
    except OSError as error:
        raise VectorIndexDamagedError(f"{path} is missing or unreadable ({error.strerror or error})") from error
    if size % unit or not header.elements * unit <= size <= header.capacity * unit:
        expected = header.elements * unit
        raise VectorIndexDamagedError(f"{path} is damaged ({size:,} bytes where {what} take {expected:,})")
    return path


def _check_upper_lists(path: Path, header: HnswHeader) -> None:
    """Each element's size (a whole number of upper levels, no higher than the top) and lists, end to end."""
    try:
        data = path.read_bytes()
    except OSError as error:
        raise VectorIndexDamagedError(f"{path} is missing or unreadable ({error.strerror or error})") from error
    level_bytes = (header.max_links + 1) * 4
    top = max(header.max_level, 0) * level_bytes
    position = 0
    for _ in range(header.elements):
        if position + 4 > len(data):
            raise VectorIndexDamagedError(f"{path} is damaged (it ends before its last element)")
        (size,) = struct.unpack_from("<I", data, position)
        if size % level_bytes or size > top:
            raise VectorIndexDamagedError(f"{path} is damaged (a neighbour list size that fits no level)")
        position += 4 + size
    if position != len(data):
        raise VectorIndexDamagedError(f"{path} is damaged ({len(data):,} bytes where its lists take {position:,})")


def _check_records(path: Path, header: HnswHeader) -> int:
    """Level-0 neighbour lists inside the graph, labels unique; returns the live (undeleted) elements."""
    if header.elements == 0:
        return 0
    records = np.memmap(path, dtype=np.uint8, mode="r", shape=(header.elements, header.record_size))
    live = 0
    chunk = 65536  # elements at a time: flat memory at any size
    seen_labels: list[np.ndarray] = []
    for start in range(0, header.elements, chunk):
        block = np.asarray(records[start : start + chunk])
        links = block[:, : header.data_offset].view("<u4")
        counts = links[:, 0] & 0xFFFF
        deleted = (links[:, 0] >> 16) & 0xFF
        if int(counts.max()) > header.max_links0 or np.any(deleted & np.uint32(0xFF ^ _DELETED)):
            raise VectorIndexDamagedError(f"{path} is damaged (a neighbour list longer than the graph allows)")
        neighbours = links[:, 1:]
        used = np.arange(header.max_links0)[None, :] < counts[:, None]
        if np.any(neighbours[used] >= header.elements):
            raise VectorIndexDamagedError(f"{path} is damaged (a neighbour that is not in the index)")
        labels = block[:, header.label_offset : header.record_size].copy().view("<u8").ravel()
        seen_labels.append(labels)
        live += int(np.count_nonzero(deleted == 0))
    labels = np.concatenate(seen_labels)
    if len(np.unique(labels)) != len(labels):
        raise VectorIndexDamagedError(f"{path} is damaged (two vectors under one label)")
    return live


def _check_pickle(path: Path) -> None:
    """Walk the pickle's opcodes to its STOP (nothing is executed): a cut or overwritten file fails."""
    try:
        data = path.read_bytes()
        opcodes = [opcode.name for opcode, _argument, _position in pickletools.genops(data)]
        if not opcodes or opcodes[-1] != "STOP":
            raise ValueError("no end")
    except (OSError, ValueError, EOFError) as error:
        why = " ".join(str(error).split())[:80]
        raise VectorIndexDamagedError(f"{path} is damaged (not a whole pickle: {why})") from error
