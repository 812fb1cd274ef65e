"""One result per duplicate group: the best-scored statement stands for the others and names them.

Composed around any statement searcher (the index, or the index followed by the reranker). It searches a
little deeper than asked, so that the k results left after collapsing are still the best k groups.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import retriever.deadline as deadline
from retriever.search_filter import SearchFilter
from retriever.store.duplicate_groups import DuplicateGroups
from retriever.types import Query, ResultSearcher, SearchHit, SearchResult, StatementSearcher, run_search


class DuplicateCollapsingSearcher(ResultSearcher):
    """``search`` as the inner searcher, with statements of one duplicate group shown once."""

    EXTRA = 10  # results searched beyond k by default, to refill the places duplicates leave

    def __init__(self, statements: StatementSearcher, groups: DuplicateGroups, extra: int = EXTRA) -> None:
        self.statements = statements
        self.groups = groups
        self.extra = extra  # results searched beyond k, to refill the places duplicates leave

    def run(self, query: str, k: int, mode: str, where: SearchFilter | None = None) -> SearchResult:
        query = Query.of(query)  # one embedding for every depth searched
        return self.collapse_result(lambda depth: run_search(self.statements, query, depth, mode, where), k)

    def collapse(self, search: Callable[[int], list[SearchHit]], k: int) -> list[SearchHit]:
        """The top ``k`` groups of what ``search(depth)`` finds, searching deeper while groups fill places."""
        return self.collapse_result(lambda depth: SearchResult(search(depth), Query("")), k).hits

    def collapse_result(self, search: Callable[[int], SearchResult], k: int) -> SearchResult:
        """:meth:`collapse` of results: the last depth's result, with its hits collapsed."""
        depth = k + self.extra
        while True:
            deadline.check("a deeper pass for the places duplicates left")
            result = search(depth)
            kept = self._collapsed(result.hits)
            if len(kept) >= k or len(result.hits) < depth:
                break
            depth *= 2
        return result.with_hits([dataclasses.replace(hit, rank=rank) for rank, hit in enumerate(kept[:k], start=1)])

    def _collapsed(self, hits: list[SearchHit]) -> list[SearchHit]:
        ids = [hit.record.id for hit in hits]
        group_of = self.groups.groups_of(ids)
        places = self.groups.places(ids)
        seen: set[str] = set()
        kept: list[SearchHit] = []
        for hit in hits:
            group = group_of.get(hit.record.id, hit.record.id)
            if group in seen:
                continue  # a lower-scored place of a statement already shown
            seen.add(group)
            kept.append(dataclasses.replace(hit, duplicates=tuple(places.get(hit.record.id, ()))))
        return kept
