"""The serving backend for callers that block: the Streamlit chat, whose pages run in plain threads.

:class:`ServingBackend` is asynchronous (its limits are asyncio semaphores, bound to one event loop). The
chat's sessions each run in their own thread with no loop, so this adapter runs one loop in a daemon thread
and hands each call to it: every session of the chat shares the same search limit, the same queue at the
LLM and the same deadlines as the HTTP API and the MCP server (before, two browser tabs asking at once sent
two prompts to a llama.cpp server that serves one).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from rag_app.answering.answer import AnswerStream
from rag_app.api.serving_backend import ServingBackend
from rag_app.pipeline import MathRAG
from retriever.deadline import within

T = TypeVar("T")


class BlockingBackend:
    """:class:`ServingBackend`'s searches and answers, called from any thread and waited for."""

    def __init__(self, rag: MathRAG) -> None:
        self.rag = rag
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="serving-backend", daemon=True)
        self._thread.start()
        # Its asyncio semaphores bind to the loop that first waits on them: this one, as every call goes there.
        self.backend = ServingBackend(rag)

    def search(self, work: Callable[[], T]) -> T:
        """``work`` (a search, a paper search, a statement) in its turn among the searches, by the search
        time limit; :class:`~rag_app.api.serving_backend.DeadlineError` past it."""
        return self._wait(self.backend.search(work))

    @contextmanager
    def answer(self, question: str, k: int | None = None, **options: Any) -> Iterator[AnswerStream]:
        """The answer's stream once its turn at the LLM came and its sources were found, to iterate and read
        inside the block: the turn is given back when the block ends, however it ends. Iterating past the
        answer's deadline raises :class:`~retriever.deadline.DeadlinePassedError` and stops the LLM.
        ``options``: the rest of ``MathRAG.ask_stream``'s."""
        stream, release, deadline = self._wait(self.backend.start_answer(question, k, **options))
        try:
            with within(deadline):  # the loop's clock is time.monotonic(), the deadline's
                yield stream
        finally:
            self._wait(_called(release))  # on the loop (the queue's semaphore is the loop's), done on return

    def close(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)

    def _wait(self, work: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(work, self._loop).result()


async def _called(function: Callable[[], None]) -> None:
    function()
