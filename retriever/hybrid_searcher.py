"""Several searchers fused into one ranking by reciprocal rank fusion."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from retriever.fusion import reciprocal_rank_fusion
from retriever.types import ScoredId


class Searcher(Protocol):
    name: str

    def search(self, query: str, k: int) -> list[ScoredId]: ...


class HybridSearcher:
    """Ask each searcher for ``candidates`` results and fuse them (RRF)."""

    name = "hybrid"

    def __init__(
        self,
        searchers: Sequence[Searcher],
        candidates: int = 50,
        rrf_k: float = 60.0,
        weights: Mapping[str, float] | None = None,
    ) -> None:
        self.searchers = list(searchers)
        self.candidates = candidates
        self.rrf_k = rrf_k
        self.weights = weights

    def runs(self, query: str, k: int) -> dict[str, list[ScoredId]]:
        depth = max(k, self.candidates)
        return {searcher.name: searcher.search(query, depth) for searcher in self.searchers}

    def search(self, query: str, k: int) -> list[ScoredId]:
        return self.fuse(self.runs(query, k), k)

    def fuse(self, runs: Mapping[str, Sequence[ScoredId]], k: int) -> list[ScoredId]:
        return reciprocal_rank_fusion(runs, k=self.rrf_k, weights=self.weights)[:k]
