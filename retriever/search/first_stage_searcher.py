"""A ranker's ids made into search hits: their records and vectors read from the store once, the filter applied."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

import retriever.deadline as deadline
from retriever.search_filter import SearchFilter
from retriever.search_mode import SearchMode
from retriever.store.statement_index import StatementIndex
from retriever.types import Query, Ranker, Ranking, ResultSearcher, SearchHit, SearchResult

# A filtered search looks at most this deep for statements that pass the filter.
MAX_FILTER_DEPTH = 20_000


class FirstStageSearcher(ResultSearcher):
    """The first stage as a statement searcher: ``ranker``'s best ``k`` with their records.

    The filter is applied here, once, after every channel is fused: post-filtering keeps each mode's
    ranking intact, and a rare filter costs deeper rankings (x4 each time), bounded by
    ``MAX_FILTER_DEPTH``. The records of a ranking and their vectors are read from Chroma in one call, for the
    statements committed at the generation the index pinned (``CommittedGenerations.visible``) and those alone.
    """

    def __init__(self, ranker: Ranker, index: StatementIndex, candidates: int = 50) -> None:
        self.ranker = ranker
        self.index = index
        self.candidates = candidates  # the first depth of a filtered search: max(4k, candidates)

    def run(
        self, query: str, k: int, mode: SearchMode | str = SearchMode.HYBRID, where: SearchFilter | None = None
    ) -> SearchResult:
        """The ``k`` best statements for ``query``; with ``where``, only statements that pass it."""
        mode, query = SearchMode(mode), Query.of(query)
        self.index.follow_other_writers()  # statements another process added are searched too
        with self.index.reads.reading():  # a reload for another process's write waits until this ends
            return self._run(query, k, mode, where)

    def _run(self, query: Query, k: int, mode: SearchMode, where: SearchFilter | None) -> SearchResult:
        total = self.index.searchable_count()  # also brings BM25 in step with the store after a crash
        if not query.strip() or total == 0:
            return SearchResult([], query)
        deadline.check("the first stage")
        if where is None or not where.active:
            return self._result(query, self.ranker.rank(query, k, mode))
        depth = max(4 * k, self.candidates)
        while True:
            deadline.check("a deeper pass of the filtered search")
            ranking = self.ranker.rank(query, min(depth, total), mode)
            result = self._result(query, ranking)
            passed = [hit for hit in result.hits if where.matches(hit.record)][:k]
            if len(passed) >= k or depth >= min(total, MAX_FILTER_DEPTH) or len(result.hits) < min(depth, total):
                return result.with_hits([replace(hit, rank=rank) for rank, hit in enumerate(passed, start=1)])
            depth *= 4

    def _result(self, query: Query, ranking: Ranking) -> SearchResult:
        deadline.check("reading the statements found")
        # Only statements of complete writes, at the generation this process pinned: every channel (BM25, the
        # graph, the second model, the formula index) may know statements of a write another process has not
        # finished, and Chroma may hold their records before this process's vector index has them.
        visible = self.index.commits.visible([scored.id for scored in ranking.ids])
        records, vectors = self.index.store.get_with_vectors([i.id for i in ranking.ids if i.id in visible])
        by_id = {record.id: record for record in records}
        hits: list[SearchHit] = []
        for scored in ranking.ids:
            record = by_id.get(scored.id)
            if record is None:
                continue  # not visible at this generation, or deleted from the store since
            ranks = dict(ranking.channel_ranks.get(scored.id, {}))
            scores = dict(ranking.channel_scores.get(scored.id, {}))
            hits.append(SearchHit(record, scored.score, len(hits) + 1, ranks, channel_scores=scores))
        kept: dict[str, np.ndarray] = {hit.record.id: vectors[hit.record.id] for hit in hits}
        return SearchResult(hits, query, kept, second_embedding=ranking.second_embedding)
