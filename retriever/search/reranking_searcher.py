"""A first-stage search followed by the cross-encoder over its top N (composed around StatementIndex)."""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

from retriever.models.cross_encoder_reranker import CrossEncoderReranker
from retriever.search.search_filter import SearchFilter
from retriever.search.search_mode import SearchMode
from retriever.types import SearchHit, StatementSearcher

# Formula-only search matches formula structure; a text cross-encoder has nothing to add there.
_NOT_RERANKED = frozenset({SearchMode.FORMULA})


@dataclass
class RerankingSearcher:
    """``index.search`` (the index, or a searcher composed around it), then ``reranker`` orders its top
    ``candidates`` (N); the best ``k`` are returned.

    When ``k`` is larger than N (an evaluation 100 deep), the results past N keep the first stage's
    order after the reranked ones, with scores below theirs (rerank scores lie in [0, 1]).
    ``last_rerank_ms`` is the reranker's share of the last search (the latency it adds).
    """

    index: StatementSearcher
    reranker: CrossEncoderReranker
    candidates: int = 30
    weight: float = 1.0
    last_rerank_ms: float = 0.0

    def search(
        self, query: str, k: int, mode: SearchMode | str = SearchMode.HYBRID, where: SearchFilter | None = None
    ) -> list[SearchHit]:
        mode = SearchMode(mode)
        if mode in _NOT_RERANKED:
            self.last_rerank_ms = 0.0
            return self.index.search(query, k, mode, where)
        first = self.index.search(query, max(k, self.candidates), mode, where)
        started = time.perf_counter()
        head = self.reranker.rerank(query, first[: self.candidates], self.candidates, self.weight)
        self.last_rerank_ms = (time.perf_counter() - started) * 1000
        tail = first[self.candidates :]
        rest = [
            replace(hit, score=round(-(position + 1) / len(tail), 6), rank=len(head) + position + 1)
            for position, hit in enumerate(tail)
        ]
        return [*head, *rest][:k]
