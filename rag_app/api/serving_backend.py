"""The one backend behind the HTTP API, the MCP server and the chat: what they serve, with its limits,
deadlines and queue, in one place.

Its calls are the domain's: :meth:`~ServingBackend.search`, ``papers``, ``formula``,
``statement``, ``ask`` (and its stream), ``status`` and ``llm_health``. Each takes the front end's typed
request (:mod:`rag_app.api.requests`), checks it against the ``[api]`` limits, and returns the domain's
records (hits, papers, a statement's view, the answer); a front end only turns them into its own shape
(JSON for HTTP, a tool's result for MCP, widgets for the chat).

A search, a paper search, a statement and the retrieval of an answer each run in a worker thread in their
turn among the searches (``api.max_concurrent_searches``); an answer also waits for the LLM in the
:class:`AskQueue`. Every request has one deadline from its start (``api.search_timeout_s``, or
``api.ask_timeout_s`` for the queue, the retrieval and the answer together), and a request past it gets
:class:`DeadlineError`.

A Python thread cannot be stopped from outside, so a request given up at its deadline does not free its
slot: the slot is freed when its thread ends. The searches running are therefore never more than the limit,
however many requests time out (a slot freed at the deadline while its thread runs on would let threads
pile up behind a slow index). The thread ends soon after the deadline all the same: its work runs
within it (``retriever.deadline``), and each stage of a search and each chunk of an answer checks it first.
"""

from __future__ import annotations

import asyncio
import functools
import json
from collections.abc import Callable
from typing import Any, TypeVar

from rag_app.answering.answer import Answer, AnswerStream
from rag_app.answering.answer_record import AnswerRecord
from rag_app.api.errors import BadRequestError, redacted
from rag_app.api.guards import AskQueue
from rag_app.api.requests import FormulaRequest, SearchRequest, check_id, check_k, check_text
from rag_app.api.streamed_answer import StreamedAnswer
from rag_app.pipeline import MathRAG
from rag_app.search.statement_links import StatementView
from rag_app.settings import ApiSettings
from retriever import PaperHit, SearchHit
from retriever.deadline import run_within
from retriever.store.index_health import IndexHealth

T = TypeVar("T")
CLOSE_MARGIN_S = 5.0  # a stream's read ends within the LLM client's timeout for more text, and this
HEALTHZ_LLM_WAIT_S = 0.5  # /healthz answers in milliseconds; a hung LLM server is "unknown" after this


class DeadlineError(TimeoutError):
    """A request ran past its deadline (HTTP 504; the MCP tool says so to the model)."""


class ServingBackend:
    """What the front ends serve (see the module); created per front end, closed when it stops."""

    def __init__(self, rag: MathRAG, limits: ApiSettings | None = None) -> None:
        self.rag = rag
        self.limits = limits or rag.settings.api
        self.asks = AskQueue(self.limits.max_concurrent_asks, self.limits.max_queued_asks)
        self._search_slots = asyncio.Semaphore(self.limits.max_concurrent_searches)
        self.searches_running = 0  # threads at work for searches (timed-out requests' threads included)
        self.closed = False

    def deadline(self, seconds: float) -> float:
        # The loop's clock is time.monotonic(), the clock of retriever.deadline: one instant serves both.
        return asyncio.get_running_loop().time() + seconds

    # ------------------------------------------------------------------ the domain's calls
    async def search(self, request: SearchRequest, **options: Any) -> list[SearchHit]:
        """Statements matching a query (``search --json``), or holding a formula (``request.formula``).
        ``options``: the rest of ``MathRAG.search``'s (the chat's ``rerank``)."""
        request = request.checked(self.limits)
        if request.formula and request.mode is not None:
            raise BadRequestError("formula searches formulas only; leave out mode")
        where = request.where()
        if request.formula:
            return await self.in_turn(lambda: self.rag.search_formula(request.query, request.k, where))
        return await self.in_turn(lambda: self.rag.search(request.query, request.k, request.mode, where, **options))

    async def papers(self, request: SearchRequest, **options: Any) -> list[PaperHit]:
        """Papers (MSE: threads) ranked by their statements (``search --papers --json``)."""
        request = request.checked(self.limits)
        where = request.where()
        return await self.in_turn(
            lambda: self.rag.search_papers(request.query, request.k, where, request.mode, request.formula, **options)
        )

    async def formula(self, request: FormulaRequest) -> list[SearchHit]:
        """Statements holding a formula or a similar one (``search --formula --json``)."""
        request = request.checked(self.limits)
        return await self.in_turn(lambda: self.rag.search_formula(request.formula, request.k, request.where()))

    async def statement(self, id_or_label: str, depth: int = 2) -> StatementView:
        """One statement with what it uses, what uses it and its definitions (``show --json``). An id or label
        is looked up, never opened as a path: "../../etc/passwd" is only an unknown label."""
        check_id(id_or_label, self.limits)
        return await self.in_turn(lambda: self.rag.statement(id_or_label, depth))

    async def status(self, full: bool = False) -> dict[str, object]:
        """Each store's own count against Chroma's (milliseconds, however large the index); ``full`` compares
        them id by id and checks the vector files, as `rag-app status` does (seconds at 1M)."""
        health = IndexHealth(self.rag.index)
        stores = await self.in_turn(health.check if full else health.counts)
        status = {
            "index": str(self.rag.settings.resolved_index_dir),
            "stores": [state.to_dict() for state in stores],
            "in_step": all(state.in_step for state in stores),
            "compared": "ids" if full else "counts",
            "llm": await self.llm_health(wait_s=3.0),
        }
        # a client is told which store and what to run, never where the server keeps its files ("<index>")
        return json.loads(redacted(json.dumps(status), self.rag.settings))

    async def llm_health(self, wait_s: float = HEALTHZ_LLM_WAIT_S) -> dict[str, str | None]:
        """The LLM's health: a process check for a server of ours (ms), else one request to the server,
        answered here within ``wait_s`` whatever it does (its thread ends by its own 2 s timeout)."""
        try:
            return (await asyncio.wait_for(asyncio.to_thread(self.rag.llm.health), wait_s)).to_dict()
        except TimeoutError:
            reason = f"the LLM server did not answer a health check within {wait_s:g} s (busy or hung)"
            return {"state": "unknown", "description": reason, "failure": None}

    async def ask(self, question: str, k: int | None = None, **options: Any) -> Answer:
        """The answer, by one deadline for its turn at the LLM, its retrieval and its writing."""
        stream, release, deadline = await self.start_answer(question, k, **options)
        write = functools.partial(run_within, deadline, stream.result)
        future = asyncio.get_running_loop().run_in_executor(None, write)

        def done(finished: asyncio.Future[Answer]) -> None:
            # The LLM is held until the answer's thread ends: at its deadline, it stops at the next chunk.
            release()
            _retrieve(finished)

        future.add_done_callback(done)
        return await self._by(future, deadline, "wrote the answer")

    async def record(self, answer: Answer) -> AnswerRecord:
        """The answer's one JSON record (``ask --json``, ``POST /v1/ask``, the stream's ``answer`` event, MCP),
        with the LLM's health as it stands now."""
        return answer.to_dict(llm=await self.llm_health(wait_s=3.0))

    async def stream_answer(self, question: str, k: int | None = None, **options: Any) -> StreamedAnswer:
        """The answer to read chunk by chunk (``/v1/ask/stream``), once its turn came and its sources were found;
        the caller closes it (:meth:`StreamedAnswer.close`), which gives the turn back after the LLM stopped."""
        stream, release, deadline = await self.start_answer(question, k, **options)
        return StreamedAnswer(stream, release, deadline, self._late, self.rag.settings.llm.timeout_s + CLOSE_MARGIN_S)

    async def start_answer(
        self, question: str, k: int | None = None, **options: Any
    ) -> tuple[AnswerStream, Callable[[], None], float]:
        """The turn at the LLM, then the retrieval (in the search limit); returns the answer's stream (not yet
        written), the release of the turn (call it once the stream ends or is abandoned: it runs once) and the
        request's deadline. :class:`QueueFullError` when the queue is full, :class:`DeadlineError` past it.
        ``options``: the rest of ``MathRAG.ask_stream``'s (the chat's mode, history, filter ...)."""
        question = check_text(question, "question", self.limits)  # read once: the pipeline takes it as it is
        check_k(k, self.limits)
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

    # ------------------------------------------------------------------ scheduling
    async def in_turn(self, work: Callable[[], T]) -> T:
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

    async def _by(self, future: asyncio.Future[T], deadline: float, doing: str) -> T:
        remaining = max(0.0, deadline - asyncio.get_running_loop().time())
        try:
            return await asyncio.wait_for(asyncio.shield(future), remaining)
        except TimeoutError:
            raise self._late(doing) from None

    async def close(self, wait_s: float = 10.0) -> None:
        """At shutdown: wait (at most ``wait_s``) for the searches' and answers' threads still at work, so that
        no thread reads the index or writes to the LLM after the server said it stopped."""
        self.closed = True
        ends = asyncio.get_running_loop().time() + wait_s
        while (self.searches_running or self.asks.running) and asyncio.get_running_loop().time() < ends:
            await asyncio.sleep(0.05)

    def _late(self, doing: str) -> DeadlineError:
        return DeadlineError(f"the request ran past its time limit ({doing}); try again, or with a smaller k")


def _retrieve(future: asyncio.Future[T]) -> None:
    """Take the outcome of a thread whose request may have been given up, so that its error (the deadline
    that ended it) is not logged as "never retrieved"."""
    if not future.cancelled():
        future.exception()
