"""The serving backend for callers that block: the Streamlit chat, whose pages run in plain threads, and the
command line's `search` and `ask`: one way in, with the same deadlines.

Every page of the chat goes through it: its searches, papers and formulas, the statement views,
the LLM's health, the answers, and the ingests of the Library page.

:class:`ServingBackend` is asynchronous (its limits are asyncio semaphores, bound to one event loop). The
chat's sessions each run in their own thread with no loop, so this adapter runs one loop in a daemon thread
and hands each call to it: every session of the chat shares the same search limit, the same queue at the
LLM and the same deadlines as the HTTP API and the MCP server (so two browser tabs asking at once take turns
at a llama.cpp server that serves one prompt at a time).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from rag_app.answering.answer import Answer, AnswerStream
from rag_app.answering.answer_record import AnswerRecord
from rag_app.api.requests import SearchRequest
from rag_app.api.serving_backend import ServingBackend
from rag_app.pipeline import MathRAG
from rag_app.search.statement_links import StatementView
from rag_app.settings import ApiSettings
from retriever import PaperHit, SearchFilter, SearchHit
from retriever.deadline import within

T = TypeVar("T")


class BackendClosedError(RuntimeError):
    """A call to a :class:`BlockingBackend` that is closed, or whose loop no longer answers."""


class BlockingBackend:
    """:class:`ServingBackend`'s searches and answers, called from any thread and waited for."""

    def __init__(self, rag: MathRAG, limits: ApiSettings | None = None) -> None:
        self.rag = rag
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="serving-backend", daemon=True)
        self._thread.start()
        # Its asyncio semaphores bind to the loop that first waits on them: this one, as every call goes there.
        self.backend = ServingBackend(rag, limits)

    def search(
        self, query: str, k: int | None, mode: str | None = None, where: SearchFilter | None = None, **options: Any
    ) -> list[SearchHit]:
        """Statements matching ``query``, in its turn among the searches, by the search time limit
        (:class:`~rag_app.api.serving_backend.DeadlineError` past it); ``options``: ``MathRAG.search``'s."""
        return self._wait(self.backend.search(search_request(query, k, mode, where), **options))

    def papers(
        self,
        query: str,
        k: int | None,
        where: SearchFilter | None = None,
        mode: str | None = None,
        formula: bool = False,
        **options: Any,
    ) -> list[PaperHit]:
        return self._wait(self.backend.papers(search_request(query, k, mode, where, formula), **options))

    def formula(self, formula: str, k: int | None, where: SearchFilter | None = None) -> list[SearchHit]:
        """Statements holding ``formula`` or a similar one, under the sidebar's whole filter (dates and
        categories too, which ``/v1/formula`` does not take)."""
        return self._wait(self.backend.search(search_request(formula, k, None, where, formula=True)))

    def statement(self, id_or_label: str, depth: int = 2) -> StatementView:
        return self._wait(self.backend.statement(id_or_label, depth))

    def llm_health(self, wait_s: float = 3.0) -> dict[str, str | None]:
        return self._wait(self.backend.llm_health(wait_s))

    def record(self, answer: Answer) -> AnswerRecord:
        """The answer's one JSON record (``ask --json``), with the LLM's health."""
        return self._wait(self.backend.record(answer))

    def ingest(self, work: Callable[[], T]) -> T:
        """``work`` (an ingest: ``rag.ingest``, ``rag.ingest_demo``) in the calling thread, which reports its
        progress to its page. Two sessions ingesting at once take turns at the index's writer lock
        (``retriever.storage.index_lock.WriterLock``: threads and processes, with its own deadline)."""
        return work()

    def in_turn(self, work: Callable[[], T]) -> T:
        """Any other read of the index, in its turn among the searches, by the search time limit."""
        return self._wait(self.backend.in_turn(work))

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
            stream.close()  # a page that stopped reading early: the model stops before its turn is given back
            self._wait(_called(release))  # on the loop (the queue's semaphore is the loop's), done on return

    def close(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)

    def __enter__(self) -> BlockingBackend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _wait(self, work: Coroutine[Any, Any, T]) -> T:
        """``work`` run on the loop and waited for: at most as long as the longest request may take (an answer's
        time limit, with a margin: each call has its own deadline inside), and never on a closed backend (where
        the call would hang for good after :meth:`close`)."""
        if not self._thread.is_alive() or self._loop.is_closed() or not self._loop.is_running():
            work.close()
            raise BackendClosedError("the serving backend is closed: open the chat again")
        limits = self.backend.limits
        wait_s = max(limits.ask_timeout_s, limits.search_timeout_s) + 30.0
        future = asyncio.run_coroutine_threadsafe(work, self._loop)
        try:
            return future.result(timeout=wait_s)
        except TimeoutError:
            if future.done():  # the work's own deadline error (a TimeoutError too): the caller's to read
                raise
            future.cancel()
            raise BackendClosedError(f"the serving backend did not answer within {wait_s:g} s") from None


async def _called(function: Callable[[], None]) -> None:
    function()


def search_request(
    query: str, k: int | None, mode: str | None, where: SearchFilter | None, formula: bool = False
) -> SearchRequest:
    """The chat's controls (its sidebar's filter) as the request every front end sends."""
    where = where or SearchFilter()
    return SearchRequest(
        query=query,
        k=k,
        mode=mode,
        formula=formula,
        source=sorted(where.sources),
        kind=sorted(where.kinds),
        category=sorted(where.categories),
        date_from=where.date_from,
        date_to=where.date_to,
    )
