"""The learned ranker's order, moved by what the statements' citers say of them (the citing channel).

A statement's citers often name it by what it is for, or by a name it never writes ("by Nakayama's
lemma"); the statement graph keeps their sentences as each statement's *citing text*, ranked by BM25
(:mod:`retriever.storage.citing_text`). This stage fuses that ranking with the learned ranker's by min-max
linear fusion, the citing channel weighed ``weight`` against the ranker's 1, over the ranker's own
candidates only: a filter applies as before, and the scores stay in the ranker's units (each hit's score
moves by ``weight`` times the spread of the ranker's scores times its normalized citing score), so the
quoting answer's trust in a clear lead keeps its meaning. The channel is read on its own thread while
the ranker searches. Measured in docs/retrieval-and-evaluation.md, "How others cite a statement".
"""

from __future__ import annotations

import dataclasses
import logging
import sqlite3
import time
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as ChannelTimeout

import retriever.deadline as deadline
from retriever.search_filter import SearchFilter
from retriever.search_mode import SearchMode
from retriever.storage.statement_graph import StatementGraph
from retriever.types import Query, ResultSearcher, SearchResult, StatementSearcher, run_search

logger = logging.getLogger(__name__)
# The longest a search waits for the channel outside a request's deadline (it takes about 10 ms; a graph
# file another process holds could keep it longer): past it, the ranker's order stands.
CHANNEL_WAIT_S = 5.0


class CitingFusingSearcher(ResultSearcher):
    """``learned`` (the learned ranker's searcher, in its ``mode``) with the citing channel fused in."""

    def __init__(
        self, learned: StatementSearcher, graph: StatementGraph, mode: str, weight: float = 0.1, depth: int = 100
    ) -> None:
        self.learned = learned
        self.graph = graph
        self.mode = SearchMode(mode)
        self.weight = weight
        self.depth = depth  # the ranker's candidates, and the citing channel's depth
        self._channel = ThreadPoolExecutor(max_workers=2, thread_name_prefix="citing-channel")

    def run(
        self, query: str, k: int, mode: SearchMode | str = SearchMode.HYBRID, where: SearchFilter | None = None
    ) -> SearchResult:
        mode = SearchMode(mode)
        if mode != self.mode or self.weight <= 0:
            return run_search(self.learned, query, k, mode, where)
        query = Query.of(query)
        cited = self._channel.submit(self.graph.citing_text.best, str(query), self.depth)
        result = run_search(self.learned, query, max(k, self.depth), mode, where)
        deadline.check("the citing channel")
        started = time.perf_counter()
        channel = self._channel_scores(cited)
        head = [hit for hit in result.hits if hit.rank <= self.depth]
        if not channel or len(head) < 2:
            return result.with_hits(result.hits[:k])
        high, low = max(channel.values()), min(channel.values())
        spread = max(hit.score for hit in head) - min(hit.score for hit in head)
        moved = {
            hit.record.id: hit.score
            + self.weight * spread * ((channel[hit.record.id] - low) / (high - low) if high > low else 1.0)
            for hit in head
            if hit.record.id in channel
        }
        order = sorted(range(len(head)), key=lambda i: (-moved.get(head[i].record.id, head[i].score), i))
        ranked = [
            dataclasses.replace(
                head[i],
                score=round(moved.get(head[i].record.id, head[i].score), 6),
                rank=position,
                channel_ranks={**head[i].channel_ranks, "learned-ranker": head[i].rank},
            )
            for position, i in enumerate(order[:k], start=1)
        ]
        tail = [hit for hit in result.hits if hit.rank > self.depth][: max(0, k - len(ranked))]
        timings = {**result.timings_ms, "citing_channel": (time.perf_counter() - started) * 1000}
        return result.with_hits([*ranked, *tail], timings_ms=timings)

    def _channel_scores(self, cited: Future[list[tuple[str, float]]]) -> dict[str, float]:
        """The channel's scores, waited for until the request's deadline (else :data:`CHANNEL_WAIT_S`);
        none where the graph cannot be read (`rag-app status` names it) or the wait ran out."""
        limit = deadline.current()
        wait = max(0.0, limit - time.monotonic()) if limit is not None else CHANNEL_WAIT_S
        try:
            return dict(cited.result(timeout=wait))
        except (sqlite3.DatabaseError, ChannelTimeout) as error:
            logger.warning("the citing channel was not read (%s): the learned ranker's order stands", error)
            return {}
