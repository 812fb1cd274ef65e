"""The hybrid searcher's channels: the vector channel in a worker thread beside the lexical ones (issue 75)."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

import retriever.deadline as deadline
from retriever.search.hybrid_searcher import HybridSearcher
from retriever.types import ScoredId


class Channel:
    """A channel that takes ``seconds``, notes the thread it ran in, and checks the request's deadline."""

    def __init__(
        self, name: str, ids: list[str], seconds: float = 0.0, fails: bool = False, checks: bool = True
    ) -> None:
        self.name, self.ids, self.seconds, self.fails, self.checks = name, ids, seconds, fails, checks
        self.threads: list[str] = []

    def search(self, query: str, k: int) -> list[ScoredId]:
        if self.checks:
            deadline.check(f"the {self.name} channel")
        self.threads.append(threading.current_thread().name)
        time.sleep(self.seconds)
        if self.fails:
            raise ValueError(f"{self.name} failed")
        return [ScoredId(i, 1.0 / rank) for rank, i in enumerate(self.ids[:k], start=1)]


def test_with_an_executor_the_channels_overlap_and_fuse_as_before() -> None:
    dense, bm25 = Channel("dense", ["a", "b", "c"], 0.5), Channel("bm25", ["c", "a", "d"], 0.5)
    alone = HybridSearcher([Channel("dense", ["a", "b", "c"]), Channel("bm25", ["c", "a", "d"])], 10)
    with ThreadPoolExecutor(2, thread_name_prefix="vector-channel") as pool:
        together = HybridSearcher([dense, bm25], 10, executor=pool)
        started = time.perf_counter()
        fused = together.search("q", 3)
        elapsed = time.perf_counter() - started
    assert fused == alone.search("q", 3)
    assert dense.threads[0].startswith("vector-channel") and bm25.threads == [threading.current_thread().name]
    # one after the other takes 1 s; 0.4 s of margin for a busy machine
    assert elapsed < 0.9, "the two 0.5 s channels ran one after the other"


def test_the_worker_keeps_the_requests_deadline_and_errors_come_back() -> None:
    with ThreadPoolExecutor(1) as pool:
        # only the worker checks here: the error says its deadline went with it
        late = HybridSearcher([Channel("dense", ["a"]), Channel("bm25", ["a"], checks=False)], 10, executor=pool)
        with deadline.within(time.monotonic() - 1), pytest.raises(deadline.DeadlinePassedError, match="dense"):
            late.search("q", 3)
        dense = Channel("dense", ["a"], fails=True)
        with pytest.raises(ValueError, match="dense failed"):
            HybridSearcher([dense, Channel("bm25", ["a"])], 10, executor=pool).search("q", 3)
        with pytest.raises(ValueError, match="bm25 failed"):
            HybridSearcher([Channel("dense", ["a"]), Channel("bm25", ["a"], fails=True)], 10, executor=pool).search(
                "q", 3
            )
