"""Exact nearest neighbours of a collection small enough to hold in memory: the same ranking in every process.

Chroma's HNSW graph is approximate, and what it returns depends on how the graph was built and loaded: on the
17,780-statement index 1-5 of 103 research questions changed their top 10 between two process starts, so every
evaluation moved by a question or two from run to run. Below ``max_vectors`` the vectors are read once into one
matrix and every query is a matrix product: exact, and the same in every process (ties broken by id). Above it
the HNSW graph answers.

Where the vectors come from is the caller's: the statement store reads them from the commit log at the
generation its reader pinned (``retriever.storage.commit_log``: one complete write, never half of one), the
second model's index from its own collection. The matrix is kept under the caller's ``key`` (the generation)
and read again when the key changes. The cost is measured in ``bench/exact_dense.py``
(``bench/results/exact_dense.md``): the limit keeps a query within a few milliseconds of the graph's and the
matrix within some 150 MB.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable, Sequence

import numpy as np
from chromadb.api.models.Collection import Collection
from chromadb.errors import InternalError

from retriever.types import ScoredId

READ_BATCH = 5000  # ids per read of the vectors (Chroma's get by ids; one read of all at 1M would be GBs)

VectorsLoader = Callable[[], "tuple[list[str], np.ndarray] | None"]


class ExactNeighbours:
    """Vectors as one matrix, searched exactly while they number at most ``max_vectors``."""

    def __init__(self, max_vectors: int) -> None:
        self.max_vectors = max_vectors
        self._lock = threading.Lock()
        self._key: Hashable = _NOTHING  # what the kept matrix (or the finding that it is too large) is of
        self._ids: list[str] = []
        self._matrix: np.ndarray | None = None  # rows normalised, in id order; None: too large
        self._id_set: frozenset[str] = frozenset()  # the same ids, for every search's visibility check

    def clear(self) -> None:
        """The vectors changed under the same key (this process wrote): the next query reads them again."""
        with self._lock:
            self._key, self._ids, self._matrix, self._id_set = _NOTHING, [], None, frozenset()

    def nearest(
        self, key: Hashable, count: Callable[[], int], load: VectorsLoader, embeddings: np.ndarray, k: int
    ) -> list[list[ScoredId]] | None:
        """The ``k`` most similar vectors of each query (cosine, best first, ties by id), or None where there are
        more than ``max_vectors`` or ``load`` has none to give (the caller asks the HNSW graph). ``count`` and
        ``load`` are called only when ``key`` is not the one the kept matrix was read under."""
        loaded = self._loaded(key, count, load)
        if loaded is None:
            return None
        ids, matrix = loaded
        if not ids:
            return [[] for _ in range(len(embeddings))]
        return [[ScoredId(ids[row], score) for row, score in rows] for rows in nearest_rows(matrix, embeddings, k)]

    def ids_of(self, key: Hashable) -> frozenset[str] | None:
        """The ids of the matrix kept under ``key``, or None if none is."""
        with self._lock:
            if self._key == key and self._matrix is not None:
                return self._id_set
        return None

    def _loaded(
        self, key: Hashable, count: Callable[[], int], load: VectorsLoader
    ) -> tuple[list[str], np.ndarray] | None:
        with self._lock:
            if self._key == key:
                return None if self._matrix is None else (self._ids, self._matrix)
        if self.max_vectors <= 0:
            return None
        found = load() if count() <= self.max_vectors else None  # a count is milliseconds below the limit
        read = None if found is None else _normalised(*found)
        with self._lock:
            self._key = key
            self._ids, self._matrix = read if read is not None else ([], None)
            self._id_set = frozenset(self._ids)
        return read


_NOTHING = object()


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


def _normalised(ids: list[str], matrix: np.ndarray) -> tuple[list[str], np.ndarray]:
    """Rows in id order and of unit length (cosine is then a dot product), read-only."""
    if not ids:
        return [], np.zeros((0, 0), dtype=np.float32)
    order = sorted(range(len(ids)), key=ids.__getitem__)
    matrix = np.array(matrix[order], dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    matrix /= np.where(norms == 0, 1.0, norms)
    matrix.setflags(write=False)
    return [ids[row] for row in order], matrix


def collection_matrix(collection: Collection) -> tuple[list[str], np.ndarray]:
    """Every id and vector of a Chroma collection (the second model's vectors, which the commit log does not keep).

    Another process may be writing it: an id it has listed may be in the records before this process's copy of
    the vector index has it, and Chroma then fails the batch's read ("Error finding id"). Such a batch is read
    again id by id and the ids it cannot read are left out; what a search returns is filtered by the commit log
    in any case (``FirstStageSearcher``), so this only decides which of the committed statements this channel
    ranks."""
    ids = sorted(collection.get(include=[])["ids"])
    rows: list[np.ndarray] = []
    kept: list[str] = []
    for batch in _batches(ids, READ_BATCH):
        for statement_id, vector in _read_batch(collection, batch):
            kept.append(statement_id)
            rows.append(np.asarray(vector, dtype=np.float32))
    if not rows:  # every listed id was deleted between the two reads
        return [], np.zeros((0, 0), dtype=np.float32)
    return kept, np.vstack(rows)


def _read_batch(collection: Collection, batch: Sequence[str]) -> list[tuple[str, object]]:
    try:
        page = collection.get(ids=list(batch), include=["embeddings"])
    except InternalError:  # a writer in another process is mid-batch: one by one, leaving out what it has not finished
        found: list[tuple[str, object]] = []
        for statement_id in batch:
            try:
                one = collection.get(ids=[statement_id], include=["embeddings"])
            except InternalError:
                continue
            found.extend(zip(one["ids"], one["embeddings"], strict=True))
        return found
    by_id = dict(zip(page["ids"], page["embeddings"], strict=True))
    return [(statement_id, by_id[statement_id]) for statement_id in batch if statement_id in by_id]


def _batches(items: Sequence[str], size: int) -> list[Sequence[str]]:
    return [items[start : start + size] for start in range(0, len(items), size)]
