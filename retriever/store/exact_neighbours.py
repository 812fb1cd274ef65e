"""Exact nearest neighbours of a collection small enough to hold in memory: the same ranking in every process.

Chroma's HNSW graph is approximate, and what it returns depends on how the graph was built and loaded: on the
17,780-statement index 1-5 of 103 research questions changed their top 10 between two process starts (issue
86), so every evaluation moved by a question or two from run to run. Below ``max_vectors`` the collection's
vectors are read once into one matrix and every query is a matrix product: exact, and the same in every process
(ties broken by id). Above it the HNSW graph answers, as before.

The cost is measured in ``bench/exact_dense.py`` (``bench/results/exact_dense.md``): the limit keeps a query
within a few milliseconds of the graph's and the matrix within some 150 MB. The matrix is dropped at every
write of its store and whenever the store is opened again (another process wrote), then read again by the
next query.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np
from chromadb.api.models.Collection import Collection

from retriever.types import ScoredId

READ_BATCH = 5000  # ids per read of the vectors (Chroma's get by ids; one read of all at 1M would be GBs)


class ExactNeighbours:
    """The vectors of one collection as a matrix, searched exactly while they number at most ``max_vectors``."""

    def __init__(self, max_vectors: int) -> None:
        self.max_vectors = max_vectors
        self._lock = threading.Lock()
        self._generation = 0  # raised by clear(): a matrix read before it is not kept
        self._ids: list[str] = []
        self._matrix: np.ndarray | None = None  # rows normalised, in id order
        self._too_large = False  # the collection was over the limit when last counted (until a clear)

    def clear(self) -> None:
        """The collection changed: the next query reads it again (and counts it again)."""
        with self._lock:
            self._generation += 1
            self._ids, self._matrix, self._too_large = [], None, False

    def nearest(self, collection: Collection, embeddings: np.ndarray, k: int) -> list[list[ScoredId]] | None:
        """The ``k`` most similar stored vectors of each query (cosine, best first, ties by id), or None where
        the collection is over the limit (the caller asks the HNSW graph)."""
        loaded = self._loaded(collection)
        if loaded is None:
            return None
        ids, matrix = loaded
        if not ids:
            return [[] for _ in range(len(embeddings))]
        return [[ScoredId(ids[row], score) for row, score in rows] for rows in nearest_rows(matrix, embeddings, k)]

    def _loaded(self, collection: Collection) -> tuple[list[str], np.ndarray] | None:
        with self._lock:
            if self._matrix is not None:
                return self._ids, self._matrix
            if self._too_large or self.max_vectors <= 0:
                return None
            generation = self._generation
        if collection.count() > self.max_vectors:  # a count is milliseconds below the limit
            with self._lock:
                self._too_large = generation == self._generation
            return None
        ids, matrix = _read_all(collection)
        with self._lock:
            if generation != self._generation:  # written while it was read: use it once, keep nothing
                return ids, matrix
            self._ids, self._matrix = ids, matrix
            return ids, matrix


def nearest_rows(matrix: np.ndarray, embeddings: np.ndarray, k: int) -> list[list[tuple[int, float]]]:
    """The ``k`` rows of ``matrix`` (normalised) most similar to each embedding: (row, cosine), best first, equal
    scores by row, so one order whatever the machine's threads do."""
    queries = np.asarray(embeddings, dtype=np.float32).reshape(len(embeddings), -1)
    norms = np.linalg.norm(queries, axis=1, keepdims=True)
    scores = matrix @ (queries / np.where(norms == 0, 1.0, norms)).T  # (rows, queries)
    top = min(k, len(matrix))
    if top <= 0:
        return [[] for _ in range(len(queries))]
    found = []
    for column in scores.T:
        best = np.argpartition(-column, top - 1)[:top]
        ordered = best[np.lexsort((best, -column[best]))]
        found.append([(int(row), float(column[row])) for row in ordered])
    return found


def _read_all(collection: Collection) -> tuple[list[str], np.ndarray]:
    """Every id and vector of ``collection``, rows in id order and normalised (cosine is then a dot product)."""
    ids = sorted(collection.get(include=[])["ids"])
    if not ids:
        return [], np.zeros((0, 0), dtype=np.float32)
    rows: list[np.ndarray] = []
    kept: list[str] = []
    for batch in _batches(ids, READ_BATCH):
        page = collection.get(ids=batch, include=["embeddings"])
        by_id = dict(zip(page["ids"], page["embeddings"], strict=True))
        for statement_id in batch:
            if statement_id in by_id:  # deleted between the two reads
                kept.append(statement_id)
                rows.append(np.asarray(by_id[statement_id], dtype=np.float32))
    if not rows:  # every listed id was deleted between the two reads (issue 93: np.vstack([]) raised)
        return [], np.zeros((0, 0), dtype=np.float32)
    matrix = np.vstack(rows)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    matrix /= np.where(norms == 0, 1.0, norms)
    matrix.setflags(write=False)
    return kept, matrix


def _batches(items: Sequence[str], size: int) -> list[Sequence[str]]:
    return [items[start : start + size] for start in range(0, len(items), size)]
