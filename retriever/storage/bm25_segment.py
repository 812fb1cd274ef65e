"""One immutable segment of the BM25 index: the postings of a batch of documents.

A segment is a term -> documents matrix in compressed sparse form. Term ids are global (the index's
vocabulary); only the terms that occur in the segment are stored, sorted, so a term's postings are
found by binary search. On disk each array is one ``.npy`` file, memory-mapped when loaded: opening
an index reads no postings, and the operating system keeps the hot ones in its page cache.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from retriever.storage.atomic_files import directory_written_whole

_ARRAYS = ("terms", "indptr", "rows", "tf", "lengths", "ids")
REPAIR = "`rag-app repair --index INDEX` rebuilds the lexical indexes from Chroma"


@dataclass(frozen=True, slots=True)
class BM25Segment:
    name: str
    terms: np.ndarray  # sorted global ids of the terms with postings here (int64)
    indptr: np.ndarray  # the postings of terms[i] are rows/tf[indptr[i]:indptr[i + 1]] (int64)
    rows: np.ndarray  # document rows, ascending within a term (int32)
    tf: np.ndarray  # how often the term occurs in that document (float32)
    lengths: np.ndarray  # each document's length in terms (float32)
    ids: np.ndarray  # each document's id (bytes)

    @property
    def size(self) -> int:
        return len(self.lengths)

    @property
    def total_length(self) -> float:
        return float(self.lengths.sum(dtype=np.float64))

    @classmethod
    def from_documents(cls, name: str, ids: Sequence[str], documents: Sequence[np.ndarray]) -> BM25Segment:
        """A segment of documents given as arrays of global term ids (repeats count)."""
        lengths = np.array([len(terms) for terms in documents], dtype=np.int64)
        all_terms = np.concatenate(documents).astype(np.int64) if len(documents) else np.zeros(0, np.int64)
        rows = np.repeat(np.arange(len(documents), dtype=np.int64), lengths)
        # one key per (term, document): sorting and counting them gives term-major postings with their tf
        width = max(len(documents), 1)
        keys, tf = np.unique(all_terms * width + rows, return_counts=True)
        encoded = np.array([i.encode() for i in ids], dtype=bytes) if len(ids) else np.zeros(0, dtype="S1")
        return cls._from_postings(name, keys // width, keys % width, tf, lengths, encoded)

    @classmethod
    def merge(cls, name: str, segments: Sequence[BM25Segment], deleted: Sequence[np.ndarray]) -> BM25Segment:
        """One segment holding the live documents of ``segments`` (``deleted``: each one's deleted rows)."""
        term_parts, row_parts, tf_parts, length_parts, id_parts = [], [], [], [], []
        offset = 0
        for segment, gone in zip(segments, deleted, strict=True):
            live = np.ones(segment.size, dtype=bool)
            live[np.asarray(gone, dtype=np.int64)] = False
            new_row = np.cumsum(live) - 1 + offset  # the row each live document gets in the merged segment
            keep = live[segment.rows]
            per_posting_term = np.repeat(np.asarray(segment.terms), np.diff(segment.indptr))
            term_parts.append(per_posting_term[keep])
            row_parts.append(new_row[np.asarray(segment.rows)[keep]])
            tf_parts.append(np.asarray(segment.tf)[keep])
            length_parts.append(np.asarray(segment.lengths)[live])
            id_parts.append(np.asarray(segment.ids)[live])
            offset += int(live.sum())
        terms = np.concatenate(term_parts).astype(np.int64)
        rows = np.concatenate(row_parts).astype(np.int64)
        order = np.lexsort((rows, terms))
        return cls._from_postings(
            name, terms[order], rows[order], np.concatenate(tf_parts)[order], np.concatenate(length_parts),
            np.concatenate(id_parts),
        )  # fmt: skip

    @classmethod
    def _from_postings(
        cls, name: str, terms: np.ndarray, rows: np.ndarray, tf: np.ndarray, lengths: np.ndarray, ids: np.ndarray
    ) -> BM25Segment:
        """From postings sorted by (term, row), one per pair."""
        unique_terms, starts = np.unique(terms, return_index=True)
        return cls(
            name=name,
            terms=unique_terms.astype(np.int64),
            indptr=np.append(starts, len(terms)).astype(np.int64),
            rows=rows.astype(np.int32),
            tf=tf.astype(np.float32),
            lengths=np.asarray(lengths, dtype=np.float32),
            ids=ids,
        )

    def locate(self, term_ids: np.ndarray) -> np.ndarray:
        """For each term id, its position in ``terms``, or -1 when it has no postings here."""
        term_ids = np.asarray(term_ids, dtype=np.int64)
        if len(self.terms) == 0:
            return np.full(len(term_ids), -1)
        positions = np.minimum(np.searchsorted(self.terms, term_ids), len(self.terms) - 1)
        return np.where(self.terms[positions] == term_ids, positions, -1)

    def document_frequencies(self, positions: np.ndarray) -> np.ndarray:
        """How many documents hold each located term (0 where the position is -1)."""
        found = positions >= 0
        counts = np.zeros(len(positions), dtype=np.int64)
        counts[found] = self.indptr[positions[found] + 1] - self.indptr[positions[found]]
        return counts

    def postings(self, position: int) -> tuple[np.ndarray, np.ndarray]:
        start, end = int(self.indptr[position]), int(self.indptr[position + 1])
        return self.rows[start:end], self.tf[start:end]

    def save(self, directory: Path) -> None:
        """Written beside, then renamed into place: a segment directory is complete or absent."""
        with directory_written_whole(directory) as partial:
            for array in _ARRAYS:
                np.save(partial / f"{array}.npy", getattr(self, array))

    @classmethod
    def load(cls, directory: Path) -> BM25Segment:
        """The segment in ``directory``; ``BM25SegmentError`` (naming the directory) when a file is missing,
        truncated or inconsistent with the others."""
        arrays = {}
        for array in _ARRAYS:
            path = directory / f"{array}.npy"
            try:
                arrays[array] = _load_array(path)
            except FileNotFoundError:
                raise  # merged away by another process: the caller reads the segment list again
            except (OSError, ValueError, EOFError) as error:
                reason = " ".join(f"{type(error).__name__}: {error}".split())[:200]
                raise BM25SegmentError(f"{path} is damaged ({reason}); {REPAIR}") from error
        segment = cls(name=directory.name, **arrays)
        problem = segment.inconsistency()
        if problem:
            raise BM25SegmentError(f"{directory} holds a damaged segment ({problem}); {REPAIR}")
        return segment

    def inconsistency(self) -> str:
        """What does not fit between the arrays ("" when they agree)."""
        if len(self.indptr) != len(self.terms) + 1:
            return f"{len(self.terms)} terms but {len(self.indptr)} postings offsets"
        postings = int(self.indptr[-1]) if len(self.indptr) else 0
        if len(self.rows) != postings or len(self.tf) != postings:
            return f"{postings} postings expected, {len(self.rows)} rows and {len(self.tf)} frequencies found"
        if len(self.ids) != len(self.lengths):
            return f"{len(self.ids)} ids but {len(self.lengths)} document lengths"
        if len(self.rows) and int(self.rows.max()) >= len(self.lengths):
            return "a posting points past the last document"
        return ""


class BM25SegmentError(ValueError):
    """A file of a BM25 index (a segment's array, or the catalogue) is unreadable or damaged; the message
    names it. ``rag-app repair`` rebuilds BM25 from Chroma."""


def _load_array(path: Path) -> np.ndarray:
    try:
        # Still mapped from the file, but a plain ndarray: slicing a np.memmap builds a memmap object per
        # slice (about 4 µs each, some 400 slices a search), a view of it does not.
        return np.load(path, mmap_mode="r").view(np.ndarray)
    except ValueError:  # an empty array cannot be memory-mapped
        return np.load(path)
