"""The checks of Chroma's vector index files: an intact index passes, each damaged file is named."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from retriever.storage import hnsw_files
from retriever.storage.hnsw_files import SEGMENT_FILES, check_segment, segment_directories


@pytest.fixture(scope="module")
def segment(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real Chroma collection whose vectors are written to its HNSW files (past its sync threshold)."""
    import chromadb
    from chromadb.config import Settings as ChromaSettings

    directory = tmp_path_factory.mktemp("chroma")
    client = chromadb.PersistentClient(str(directory), settings=ChromaSettings(anonymized_telemetry=False))
    collection = client.create_collection("vectors", metadata={"hnsw:space": "cosine", "hnsw:sync_threshold": 100})
    vectors = np.random.default_rng(0).normal(size=(300, 16)).astype(np.float32)
    for start in range(0, 300, 100):
        ids = [f"s{i}" for i in range(start, start + 100)]
        collection.add(ids=ids, embeddings=vectors[start : start + 100].tolist())
    assert collection.query(query_embeddings=[vectors[0].tolist()], n_results=1)["ids"] == [["s0"]]
    del collection, client
    [found] = segment_directories(directory)
    return found


def test_an_intact_segment_passes_with_its_vectors_counted(segment: Path) -> None:
    state = check_segment(segment)
    assert state.problem == "" and state.vectors >= 100


@pytest.mark.parametrize("name", SEGMENT_FILES)
@pytest.mark.parametrize("how", ["truncated", "overwritten"])
def test_each_damaged_file_is_named(segment: Path, tmp_path: Path, name: str, how: str) -> None:
    copy = tmp_path / segment.name
    copy.mkdir()
    for file in segment.iterdir():
        (copy / file.name).write_bytes(file.read_bytes())
    damaged = copy / name
    if not damaged.exists() or damaged.stat().st_size == 0:
        pytest.skip(f"this Chroma wrote no {name} for a small collection")
    data = damaged.read_bytes()
    if how == "truncated":
        damaged.write_bytes(data[: len(data) // 2])
    else:
        noise = np.random.default_rng(1).integers(0, 256, size=min(len(data), 4096), dtype=np.uint8).tobytes()
        damaged.write_bytes(noise + data[len(noise) :])
    state = check_segment(copy)
    assert state.problem.startswith(f"{damaged} is "), (name, how, state.problem)


def test_a_missing_file_is_named(segment: Path, tmp_path: Path) -> None:
    copy = tmp_path / segment.name
    copy.mkdir()
    for file in segment.iterdir():
        if file.name != "data_level0.bin":
            (copy / file.name).write_bytes(file.read_bytes())
    assert check_segment(copy).problem.startswith(f"{copy / 'data_level0.bin'} is missing")
    assert os.path.exists(copy / "header.bin")


def test_a_passed_check_is_remembered_until_a_file_changes(
    segment: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A new process (rag-app show, a search) stats the files a check passed on, and reads them again
    # only after a write: the full read costs about 0.4 s on the 17,780 Stacks statements.
    chroma = tmp_path / "chroma"
    shutil.copytree(segment.parent, chroma)
    read: list[Path] = []
    real_check = hnsw_files.check_segment
    monkeypatch.setattr(hnsw_files, "check_segment", lambda directory: read.append(directory) or real_check(directory))
    stamp = hnsw_files.check_vector_files(chroma)
    assert len(read) == 1 and (chroma / hnsw_files.CHECKED).exists()
    assert hnsw_files.check_vector_files(chroma) == stamp and len(read) == 1  # as a second process would
    [copy] = hnsw_files.segment_directories(chroma)
    header = copy / "header.bin"
    header.write_bytes(bytes(range(100)))  # same size, a new modification time
    os.utime(header, ns=(header.stat().st_atime_ns, header.stat().st_mtime_ns + 1_000_000))
    with pytest.raises(hnsw_files.VectorIndexDamagedError, match=r"header\.bin is damaged"):
        hnsw_files.check_vector_files(chroma, already_checked=stamp)
    (chroma / hnsw_files.CHECKED).write_text("not json")
    with pytest.raises(hnsw_files.VectorIndexDamagedError):  # a damaged record of the check is no pass
        hnsw_files.check_vector_files(chroma)
