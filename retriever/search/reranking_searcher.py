"""A first-stage search followed by the cross-encoder over its top N (composed around StatementIndex)."""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

import retriever.deadline as deadline
from retriever.models.cross_encoder_reranker import CrossEncoderReranker
from retriever.search_filter import SearchFilter
from retriever.search_mode import SearchMode
from retriever.types import ResultSearcher, ScoredBy, SearchResult, StatementSearcher, run_search

# Formula-only search matches formula structure; a text cross-encoder has nothing to add there.
_NOT_RERANKED = frozenset({SearchMode.FORMULA})


@dataclass
class RerankingSearcher(ResultSearcher):
    """``index.search`` (the index, or a searcher composed around it), then ``reranker`` orders its top
    ``candidates`` (N); the best ``k`` are returned.

    When ``k`` is larger than N (an evaluation 100 deep), the results past N keep the first stage's
    order after the reranked ones, with scores below theirs (rerank scores lie in [0, 1]).
    The result's ``rerank_ms`` is the reranker's share of the search (the latency it adds).
    """

    index: StatementSearcher
    reranker: CrossEncoderReranker
    candidates: int = 30
    weight: float = 1.0

    def run(
        self, query: str, k: int, mode: SearchMode | str = SearchMode.HYBRID, where: SearchFilter | None = None
    ) -> SearchResult:
        mode = SearchMode(mode)
        if mode in _NOT_RERANKED:
            return run_search(self.index, query, k, mode, where)
        result = run_search(self.index, query, max(k, self.candidates), mode, where)
        first = result.hits
        deadline.check("the cross-encoder")
        started = time.perf_counter()
        head = self.reranker.rerank(query, first[: self.candidates], self.candidates, self.weight)
        rerank_ms = (time.perf_counter() - started) * 1000
        tail = first[self.candidates :]
        rest = [
            replace(hit, score=round(-(position + 1) / len(tail), 6), rank=len(head) + position + 1)
            for position, hit in enumerate(tail)
        ]
        return result.with_hits(
            [*head, *rest][:k],
            scored_by=ScoredBy.CROSS_ENCODER,
            reranker=self.reranker.identity,
            timings_ms={**result.timings_ms, "rerank": rerank_ms},
        )
