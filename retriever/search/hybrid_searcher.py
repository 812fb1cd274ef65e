"""Several searchers fused into one ranking (reciprocal rank or linear fusion)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from retriever.search.rank_fusion import RankFusionMethod, fuse
from retriever.types import ChannelSearcher, ScoredId


class HybridSearcher:
    """Ask each searcher for ``candidates`` results and fuse them (RRF or linear)."""

    name = "hybrid"

    def __init__(
        self,
        searchers: Sequence[ChannelSearcher],
        candidates: int = 50,
        rrf_k: float = 60.0,
        weights: Mapping[str, float] | None = None,
        method: RankFusionMethod = "rrf",
    ) -> None:
        self.method = method
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
        return fuse(runs, self.method, self.rrf_k, self.weights)[:k]
