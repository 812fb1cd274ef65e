"""Several searchers fused into one ranking (reciprocal rank or linear fusion)."""

from __future__ import annotations

import contextvars
from collections.abc import Mapping, Sequence
from concurrent.futures import Executor

from retriever.search.rank_fusion import RankFusionMethod, fuse
from retriever.types import ChannelSearcher, ScoredId


class HybridSearcher:
    """Ask each searcher for ``candidates`` results and fuse them (RRF or linear).

    With an ``executor``, the first searcher (the vector channel: its query embedding runs outside
    the interpreter's lock) runs in a worker thread while the others (lexical: BM25, formulas) run in
    the caller's: a search then takes about the longer of the two, not their sum.
    """

    name = "hybrid"

    def __init__(
        self,
        searchers: Sequence[ChannelSearcher],
        candidates: int = 50,
        rrf_k: float = 60.0,
        weights: Mapping[str, float] | None = None,
        method: RankFusionMethod = "rrf",
        executor: Executor | None = None,
    ) -> None:
        self.method = method
        self.searchers = list(searchers)
        self.candidates = candidates
        self.rrf_k = rrf_k
        self.weights = weights
        self.executor = executor

    def runs(self, query: str, k: int) -> dict[str, list[ScoredId]]:
        depth = max(k, self.candidates)
        if self.executor is None or len(self.searchers) < 2:
            return {searcher.name: searcher.search(query, depth) for searcher in self.searchers}
        first, *rest = self.searchers
        # the worker runs in this search's context: its deadline (retriever.deadline) goes with it
        context = contextvars.copy_context()
        pending = self.executor.submit(context.run, first.search, query, depth)
        try:
            others = {searcher.name: searcher.search(query, depth) for searcher in rest}
        except BaseException:
            pending.cancel()
            raise
        return {first.name: pending.result(), **others}

    def search(self, query: str, k: int) -> list[ScoredId]:
        return self.fuse(self.runs(query, k), k)

    def fuse(self, runs: Mapping[str, Sequence[ScoredId]], k: int) -> list[ScoredId]:
        return fuse(runs, self.method, self.rrf_k, self.weights)[:k]
