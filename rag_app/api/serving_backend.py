"""The one backend behind the HTTP API and the MCP server: their limits, deadlines and queue in one place.

Both front ends are thin adapters over :class:`ServingBackend`: a search, a paper search, a statement
and the retrieval of an answer each run in a worker thread in their turn among the searches
(``api.max_concurrent_searches``); an answer also waits for the LLM in the :class:`AskQueue`. Every
request has one deadline from its start (``api.search_timeout_s``, or ``api.ask_timeout_s`` for the queue,
the retrieval and the answer together), and a request past it gets :class:`DeadlineError`.

A Python thread cannot be stopped from outside, so a request given up at its deadline does not free its
slot: the slot is freed when its thread ends. The searches running are therefore never more than the limit,
however many requests time out (before, each timed-out search freed its slot while its thread ran on, and
threads piled up behind a slow index). The thread ends soon after the deadline all the same: its work runs
within it (``retriever.deadline``), and each stage of a search and each chunk of an answer checks it first.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from typing import Any, TypeVar

from rag_app.answering.answer import Answer, AnswerStream
from rag_app.api.guards import AskQueue
from rag_app.pipeline import MathRAG
from rag_app.settings import ApiSettings
from retriever.deadline import run_within

T = TypeVar("T")


class DeadlineError(TimeoutError):
    """A request ran past its deadline (HTTP 504; the MCP tool says so to the model)."""


class ServingBackend:
    def __init__(self, rag: MathRAG, limits: ApiSettings | None = None) -> None:
        self.rag = rag
        self.limits = limits or rag.settings.api
        self.asks = AskQueue(self.limits.max_concurrent_asks, self.limits.max_queued_asks)
        self._search_slots = asyncio.Semaphore(self.limits.max_concurrent_searches)
        self.searches_running = 0  # threads at work for searches (timed-out requests' threads included)

    def deadline(self, seconds: float) -> float:
        # The loop's clock is time.monotonic(), the clock of retriever.deadline: one instant serves both.
        return asyncio.get_running_loop().time() + seconds

    async def search(self, work: Callable[[], T]) -> T:
        """``work`` (a search, a statement, the index's status) within ``api.search_timeout_s``."""
        return await self.in_search_slot(work, self.deadline(self.limits.search_timeout_s))

    async def in_search_slot(self, work: Callable[[], T], deadline: float) -> T:
        """``work`` in a worker thread, in its turn among the searches, by ``deadline`` (loop time)."""
        loop = asyncio.get_running_loop()
        try:
            await asyncio.wait_for(self._search_slots.acquire(), max(0.0, deadline - loop.time()))
        except TimeoutError:
            raise self._late("waited for a turn among the searches") from None
        self.searches_running += 1
        future = loop.run_in_executor(None, functools.partial(run_within, deadline, work))

        def free(done: asyncio.Future[T]) -> None:
            self.searches_running -= 1
            self._search_slots.release()
            _retrieve(done)

        future.add_done_callback(free)
        return await self._by(future, deadline, "searched")

    async def ask(self, question: str, k: int | None = None) -> Answer:
        """The answer, by one deadline for its turn at the LLM, its retrieval and its writing."""
        stream, release, deadline = await self.start_answer(question, k)
        write = functools.partial(run_within, deadline, stream.result)
        future = asyncio.get_running_loop().run_in_executor(None, write)

        def done(finished: asyncio.Future[Answer]) -> None:
            # The LLM is held until the answer's thread ends: at its deadline, it stops at the next chunk.
            release()
            _retrieve(finished)

        future.add_done_callback(done)
        return await self._by(future, deadline, "wrote the answer")

    async def start_answer(
        self, question: str, k: int | None = None, **options: Any
    ) -> tuple[AnswerStream, Callable[[], None], float]:
        """The turn at the LLM, then the retrieval (in the search limit); returns the answer's stream (not yet
        written), the release of the turn (call it once the stream ends or is abandoned: it runs once) and the
        request's deadline. :class:`QueueFullError` when the queue is full, :class:`DeadlineError` past it.
        ``options``: the rest of ``MathRAG.ask_stream``'s (the chat's mode, history, filter ...)."""
        deadline = self.deadline(self.limits.ask_timeout_s)
        loop = asyncio.get_running_loop()
        try:
            await asyncio.wait_for(self.asks.enter(), max(0.0, deadline - loop.time()))
        except TimeoutError:
            raise self._late("waited for a turn at the LLM") from None
        released = False

        def release() -> None:
            nonlocal released
            if not released:
                released = True
                self.asks.leave()

        try:
            stream = await self.in_search_slot(lambda: self.rag.ask_stream(question, k, **options), deadline)
        except BaseException:
            release()  # nothing was generated: the next answer may start
            raise
        return stream, release, deadline

    async def _by(self, future: asyncio.Future[T], deadline: float, doing: str) -> T:
        remaining = max(0.0, deadline - asyncio.get_running_loop().time())
        try:
            return await asyncio.wait_for(asyncio.shield(future), remaining)
        except TimeoutError:
            raise self._late(doing) from None

    def _late(self, doing: str) -> DeadlineError:
        return DeadlineError(f"the request ran past its time limit ({doing}); try again, or with a smaller k")


def _retrieve(future: asyncio.Future[T]) -> None:
    """Take the outcome of a thread whose request may have been given up, so that its error (the deadline
    that ended it) is not logged as "never retrieved"."""
    if not future.cancelled():
        future.exception()
