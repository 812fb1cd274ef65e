"""A first-stage search whose top candidates are reordered by the learned ranker."""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

import retriever.deadline as deadline
from retriever.models.learned_ranker import LearnedRanker
from retriever.search_filter import SearchFilter
from retriever.search_mode import SearchMode
from retriever.storage.statement_graph import StatementGraph
from retriever.types import ResultSearcher, ScoredBy, SearchResult, StatementSearcher, run_search


@dataclass
class LearnedRankingSearcher(ResultSearcher):
    """``first.search`` to ``candidates`` deep, ordered by ``ranker``; the best ``k`` are returned.

    The hits keep their records, channel ranks and scores; ``channel_ranks["first-stage"]`` says where
    the first stage had put each one and ``score`` is the ranker's. Results past ``candidates`` (an
    evaluation 100 deep with fewer candidates) keep the first stage's order after the reordered ones.
    The result's ``timings_ms["learned_ranker"]`` is the ranker's share (features and scoring). Only the mode
    the ranker was trained on is reordered (``hybrid-formula``): on dense alone, whose candidates lack
    the BM25 and formula scores it learned from, it lost to the first stage on both development sets
    (research questions MRR@10 0.758 -> 0.697, slogans 0.384 -> 0.338); other modes pass through.
    """

    first: StatementSearcher
    ranker: LearnedRanker
    candidates: int = 100
    graph: StatementGraph | None = None  # read for a ranker trained with the graph's features
    hidden_features: tuple[str, ...] = ()  # read as missing (ranker.hide_features)

    def run(
        self, query: str, k: int, mode: SearchMode | str = SearchMode.HYBRID, where: SearchFilter | None = None
    ) -> SearchResult:
        mode = SearchMode(mode)
        if mode.value != self.ranker.mode:
            return run_search(self.first, query, k, mode, where)
        first = run_search(self.first, query, max(k, self.candidates), mode, where)
        hits = first.hits
        deadline.check("the learned ranker")
        started = time.perf_counter()
        head, tail = hits[: self.candidates], hits[self.candidates :]
        scores = self.ranker.scores(query, head, self.graph, self.hidden_features)
        order = sorted(range(len(head)), key=lambda i: (-scores[i], head[i].rank))
        # Only the k returned are rebuilt (a search keeps 10 of the ranker's 100: rebuilding all cost a millisecond).
        ranked = [
            replace(
                head[i],
                score=round(float(scores[i]), 6),
                rank=position,
                channel_ranks={**head[i].channel_ranks, "first-stage": head[i].rank},
            )
            for position, i in enumerate(order[:k], start=1)
        ]
        floor = min((round(float(score), 6) for score in scores), default=0.0)
        rest = [
            replace(hit, score=round(floor - (position + 1), 6), rank=len(head) + position + 1)
            for position, hit in enumerate(tail[: max(0, k - len(head))])
        ]
        timings = {**first.timings_ms, "learned_ranker": (time.perf_counter() - started) * 1000}
        return first.with_hits([*ranked, *rest], scored_by=ScoredBy.LEARNED_RANKER, timings_ms=timings)
