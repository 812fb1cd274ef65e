"""A server's warm-up: what every search would otherwise pay for at its first meeting, paid once at start.

A search reads its ~100 candidates' records and vectors (from Chroma: 14-25 ms) and the learned ranker
reads each candidate's profile (made at ingest, read from ``ranking_profiles.sqlite``); both are kept between
searches (``RecordCache``,
``StatementProfiles``). A server whose index fits in the cache reads every statement and its profile at
start, in a thread beside the first requests: on the 17,780-statement development index about 10 s,
after which a search meets no statement for the first time (bench/results/search_profile.md: p50 56 ms
cold, 24 ms warm). A larger index is left to fill the cache as it is searched.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from rag_app.pipeline import MathRAG

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class WarmedUp:
    statements: int  # read into memory (0: the index is larger than the cache)
    seconds: float


def warm_up(rag: MathRAG) -> WarmedUp:
    """Load the models, read every statement into the store's cache and make its ranking profile."""
    started = time.perf_counter()
    rag.search("warm up", k=1)  # the models, the query encoder, the search stack
    stage = rag.answerer.verdict
    if stage is not None:
        stage.reader.load()  # the verdict's cross-encoder (about a second)
    index = rag.index
    index.follow_other_writers()
    with index.reads.reading():  # a reload for another process's write waits for the read
        records = index.store.preload()
    stack = rag.search_stack
    if records and stack.learned_ranker_configured():
        profiles = stack.learned_ranker.profiles
        for start in range(0, len(records), 500):  # read as made at ingest (made here only where missing)
            profiles.of_many(records[start : start + 500])
    return WarmedUp(len(records), time.perf_counter() - started)


def start_warm_up(rag: MathRAG, report: Callable[[str], None] = logger.info) -> threading.Thread:
    """:func:`warm_up` in a thread of its own, its outcome given to ``report`` (``rag-app serve`` prints it);
    a failure is logged, and the server serves all the same, only cold."""

    def run() -> None:
        try:
            done = warm_up(rag)
        except Exception as error:
            logger.warning("warm-up failed (%s: %s); searches read statements as they meet them",
                           type(error).__name__, error)  # fmt: skip
            return
        report(f"warm-up: {done.statements} statements in memory in {done.seconds:.1f} s")

    thread = threading.Thread(target=run, name="warm-up", daemon=True)
    thread.start()
    return thread
