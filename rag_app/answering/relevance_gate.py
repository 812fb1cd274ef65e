"""The gate of an answer: is any source found close enough to the question to answer from?

In: the :class:`Retrieval`. Out: the question's cosine with each source (:class:`Relevance`: nothing is generated
when the best is under ``answers.min_relevance``) and the sources' vectors (the written answer's checks read them).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np

from rag_app.answering.stages import Relevance, Retrieval
from retriever import Embedder

StoredVectors = Callable[[Sequence[str]], Mapping[str, np.ndarray]]


class RelevanceGate:
    """``vectors`` gives the stored vectors of statement ids a search did not bring with its hits (a searcher
    written outside this package)."""

    def __init__(self, threshold: float, embedder: Embedder, vectors: StoredVectors) -> None:
        self.threshold = threshold
        self.embedder = embedder
        self.vectors = vectors

    def read(self, retrieval: Retrieval) -> tuple[Relevance, Mapping[str, np.ndarray]]:
        """The question's cosine with each source, and the sources' vectors."""
        hits = retrieval.hits
        vectors = self._hit_vectors(retrieval)
        hit_vectors = np.stack([vectors[h.record.id] for h in hits]) if hits else np.zeros((0, 1), np.float32)
        # the question's vector is the one its search embedded (embedded here only if no channel did)
        similarities = hit_vectors @ retrieval.result.query.vector(self.embedder) if hits else np.zeros(0)
        return Relevance(similarities, self.threshold), vectors

    def _hit_vectors(self, retrieval: Retrieval) -> Mapping[str, np.ndarray]:
        """The hits' stored vectors: those the search read with the records (all of them, for the searchers composed
        here), any other read from the store."""
        brought = retrieval.result.vectors
        missing = [hit.record.id for hit in retrieval.hits if hit.record.id not in brought]
        return {**brought, **self.vectors(missing)} if missing else brought
