"""Search a query and the statement it was rewritten into, and fuse the two rankings by rank.

The rewrite (:mod:`rag_app.search.statement_rewrite`) reads like the statements we index, the query like what
people type; each finds what the other misses. Reciprocal rank fusion needs no common score scale,
and the query's own ranking keeps the larger weight: a wrong rewrite can move hits, not replace them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import retriever.deadline as deadline
from retriever.search_filter import SearchFilter
from retriever.types import Query, ResultSearcher, ScoredBy, SearchHit, SearchResult, StatementSearcher, run_search


class RewriteFusingSearcher(ResultSearcher):
    """``search`` as the inner searcher, fused by rank with the inner search of ``rewrite(query)``."""

    def __init__(
        self,
        statements: StatementSearcher,
        rewrite: Callable[[str], str],
        rewrite_weight: float = 0.5,
        rrf_k: float = 60.0,
        depth: int = 50,
    ) -> None:
        self.statements = statements
        self.rewrite = rewrite
        self.rewrite_weight = rewrite_weight
        self.rrf_k = rrf_k
        self.depth = depth  # each ranking's depth before fusion

    def run(self, query: str, k: int, mode: str, where: SearchFilter | None = None) -> SearchResult:
        query = Query.of(query)
        deadline.check("the statement rewrite")
        rewrite = self.rewrite(query)
        if not rewrite:
            return run_search(self.statements, query, k, mode, where)
        depth = max(k, self.depth)
        asked = run_search(self.statements, query, depth, mode, where)
        rewritten = run_search(self.statements, Query(rewrite), depth, mode, where)
        fused: dict[str, float] = {}
        hit_of: dict[str, SearchHit] = {}
        for weight, result in ((1.0, asked), (self.rewrite_weight, rewritten)):
            for rank, hit in enumerate(result.hits, start=1):
                fused[hit.record.id] = fused.get(hit.record.id, 0.0) + weight / (self.rrf_k + rank)
                hit_of.setdefault(hit.record.id, hit)
        order = sorted(fused, key=lambda id_: -fused[id_])[:k]
        hits = [dataclasses.replace(hit_of[id_], score=fused[id_], rank=rank) for rank, id_ in enumerate(order, 1)]
        timings = {name: ms + rewritten.timings_ms.get(name, 0.0) for name, ms in asked.timings_ms.items()}
        return asked.with_hits(
            hits,
            vectors={**rewritten.vectors, **asked.vectors},
            scored_by=ScoredBy.REWRITE_FUSION,
            timings_ms=timings,
        )
