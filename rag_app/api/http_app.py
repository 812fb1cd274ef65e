"""`rag-app serve`: the HTTP API over one open :class:`MathRAG` (one index, one model load, many clients).

Routes (the JSON shapes are the CLI's contracts: ``search --json``, ``show --json``, ``ask --json``,
``status --json``):

    GET  /healthz                      {"ok": true, "llm": {...}}: the process answers (no token needed)
    GET  /v1/status                    the index's stores, whether they are in step, the LLM's health
    GET|POST /v1/search                statements (``search --json``'s list)
    GET|POST /v1/papers                papers, each with its best statements (``search --papers --json``)
    GET|POST /v1/formula               statements holding a formula (``search --formula --json``)
    GET  /v1/statements/{id_or_label}  one statement with its uses, used-by, definitions (``show --json``)
    POST /v1/ask                       the quoting answer (``ask --json``); 503 with the sources when the LLM is down
    POST /v1/ask/stream                the same as server-sent events: sources, text chunks, the answer, its checks
    /mcp                               the MCP server (streamable HTTP), same tools as `rag-app mcp`

Every route is a thin adapter over :class:`ServingBackend` (shared with the ``/mcp`` tools): searches in
worker threads, at most ``api.max_concurrent_searches`` at once (two CPUs gain nothing from more), answers
in :class:`AskQueue`, one deadline per request. Every error is JSON, ``{"error": {"status", "reason"}}``,
its text without the server's paths. Every response carries ``Server-Timing: app;dur=MS``, the server's
own time on it (:mod:`rag_app.api.server_timing`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Annotated, Any, TypeVar

from fastapi import FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, StreamingResponse
from starlette.concurrency import iterate_in_threadpool, run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import Receive, Scope, Send

from rag_app.api.errors import STATUS_OF, BadRequestError, redacted
from rag_app.api.guards import BearerTokenGuard, BodySizeLimit, LoopbackHostGuard, QueueFullError
from rag_app.api.mcp_tools import build_mcp_server
from rag_app.api.requests import AskRequest, FormulaRequest, SearchRequest, check_id
from rag_app.api.server_timing import ServerTiming
from rag_app.api.serving_backend import DeadlineError, ServingBackend
from rag_app.pipeline import MathRAG
from rag_app.settings import ApiSettings
from retriever.store.index_health import IndexHealth

T = TypeVar("T")
API_VERSION = "1"
HEALTHZ_LLM_WAIT_S = 0.5  # /healthz answers in milliseconds; a hung LLM server is "unknown" after this
# The stream's last event: what was checked of the answer (the same fields as in its `answer` event).
CHECKS = ("status", "supported", "citations_valid", "invalid_citations", "attributed", "unsupported_sentences",
          "llm_error", "timings_ms")  # fmt: skip


class ApiError(Exception):
    def __init__(self, status: int, reason: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(reason)
        self.status, self.reason, self.headers = status, reason, headers or {}


def error_response(status: int, reason: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": {"status": status, "reason": reason}}, status_code=status, headers=headers)


def create_app(rag: MathRAG, limits: ApiSettings | None = None, mcp: bool = True) -> FastAPI:
    """The API over ``rag``; with ``mcp``, the MCP server's tools (:mod:`rag_app.api.mcp_tools`) are served
    under ``/mcp`` by streamable HTTP, their answers waiting in the same queue."""
    limits = limits or rag.settings.api
    token = limits.token.get_secret_value() if limits.token else None
    backend = ServingBackend(rag, limits)
    asks = backend.asks
    mcp_server = build_mcp_server(backend) if mcp else None
    mcp_app = mcp_server.streamable_http_app(**_mcp_transport(limits)) if mcp_server is not None else None

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        if mcp_server is None:
            yield
            return
        async with mcp_server.session_manager.run():
            yield

    app = FastAPI(
        title="rag-app",
        version=API_VERSION,
        summary="Search and cite theorems, lemmas and definitions from LaTeX papers and Math StackExchange.",
        lifespan=lifespan,
    )
    if mcp_app is not None:
        app.router.routes.extend(mcp_app.routes)
    # The middleware added last runs first: a body over the limit is refused before the token is read.
    app.add_middleware(BearerTokenGuard, token=token)
    app.add_middleware(LoopbackHostGuard, host=limits.host, token=token)
    app.add_middleware(BodySizeLimit, max_bytes=limits.max_body_bytes)
    app.add_middleware(ServerTiming)  # outermost: the refusals above are timed too

    async def in_thread(work: Callable[[], T]) -> T:
        """``work`` in its turn among the searches, by the request's deadline (504 past it)."""
        try:
            return await backend.search(work)
        except DeadlineError as error:
            raise ApiError(504, str(error)) from None

    @app.exception_handler(ApiError)
    async def api_error(_request: Request, error: ApiError) -> JSONResponse:
        return error_response(error.status, error.reason, error.headers)

    @app.exception_handler(RequestValidationError)
    async def invalid_request(_request: Request, error: RequestValidationError) -> JSONResponse:
        return error_response(400, _validation_reason(error))

    @app.exception_handler(StarletteHTTPException)
    async def http_error(_request: Request, error: StarletteHTTPException) -> JSONResponse:
        reason = "no such route" if error.status_code == 404 else str(error.detail)
        return error_response(error.status_code, reason, getattr(error, "headers", None))

    async def known_error(_request: Request, error: Exception) -> JSONResponse:
        status = next(code for kinds, code in STATUS_OF if isinstance(error, kinds))
        return error_response(status, redacted(str(error), rag.settings))

    for kinds, _status in STATUS_OF:
        for kind in kinds:
            app.add_exception_handler(kind, known_error)

    @app.exception_handler(Exception)
    async def internal_error(_request: Request, error: Exception) -> JSONResponse:
        # The traceback goes to the server's log (Starlette logs what reaches this handler), never to a client.
        text = redacted(" ".join(str(error).split())[:300], rag.settings)
        return error_response(500, f"internal error: {type(error).__name__}: {text}")

    # ------------------------------------------------------------------ health and status
    @app.get("/healthz", summary="Whether the server answers (no token needed)")
    async def healthz() -> dict[str, object]:
        return {"ok": True, "asks_running": asks.running, "asks_waiting": asks.waiting,
                "searches_running": backend.searches_running, "llm": await llm_health()}  # fmt: skip

    async def llm_health(wait_s: float = HEALTHZ_LLM_WAIT_S) -> dict[str, str | None]:
        """The LLM's health: a process check for a server of ours (ms), else one request to the server,
        answered here within ``wait_s`` whatever it does (its thread ends by its own 2 s timeout)."""
        try:
            return (await asyncio.wait_for(asyncio.to_thread(rag.llm.health), wait_s)).to_dict()
        except TimeoutError:
            reason = f"the LLM server did not answer a health check within {wait_s:g} s (busy or hung)"
            return {"state": "unknown", "description": reason, "failure": None}

    @app.get("/v1/status", summary="The index's stores and whether they are in step (`status --json`)")
    async def status(full: bool = False) -> dict[str, object]:
        """Each store's own count against Chroma's (milliseconds, however large the index); ``full=true``
        compares them id by id and checks the vector files, as `rag-app status` does (seconds at 1M)."""
        health = IndexHealth(rag.index)
        stores = await in_thread(health.check if full else health.counts)
        return {
            "index": str(rag.settings.resolved_index_dir),
            "stores": [state.to_dict() for state in stores],
            "in_step": all(state.in_step for state in stores),
            "compared": "ids" if full else "counts",
            "llm": await llm_health(wait_s=3.0),
        }

    # ------------------------------------------------------------------ search
    async def run_search(request: SearchRequest) -> list[dict[str, object]]:
        request = request.checked(limits)
        if request.formula and request.mode is not None:
            raise BadRequestError("formula searches formulas only; leave out mode")

        def work() -> list[dict[str, object]]:
            where = request.where()
            if request.formula:
                hits = rag.search_formula(request.query, request.k, where)
            else:
                hits = rag.search(request.query, request.k, request.mode, where)
            return [hit.to_dict() for hit in hits]

        return await in_thread(work)

    @app.get("/v1/search", summary="Statements that match a query (`search --json`)")
    async def search_get(request: Annotated[SearchRequest, Query()]) -> list[dict[str, Any]]:
        return await run_search(request)

    @app.post("/v1/search", summary="Statements that match a query (`search --json`)")
    async def search_post(request: SearchRequest) -> list[dict[str, Any]]:
        return await run_search(request)

    async def run_papers(request: SearchRequest) -> list[dict[str, object]]:
        request = request.checked(limits)

        def work() -> list[dict[str, object]]:
            papers = rag.search_papers(request.query, request.k, request.where(), request.mode, request.formula)
            return [paper.to_dict() for paper in papers]

        return await in_thread(work)

    @app.get("/v1/papers", summary="Papers whose statements match a query (`search --papers --json`)")
    async def papers_get(request: Annotated[SearchRequest, Query()]) -> list[dict[str, Any]]:
        return await run_papers(request)

    @app.post("/v1/papers", summary="Papers whose statements match a query (`search --papers --json`)")
    async def papers_post(request: SearchRequest) -> list[dict[str, Any]]:
        return await run_papers(request)

    async def run_formula(request: FormulaRequest) -> list[dict[str, object]]:
        request = request.checked(limits)

        def work() -> list[dict[str, object]]:
            return [hit.to_dict() for hit in rag.search_formula(request.formula, request.k, request.where())]

        return await in_thread(work)

    @app.get("/v1/formula", summary="Statements holding a formula or a similar one (`search --formula --json`)")
    async def formula_get(request: Annotated[FormulaRequest, Query()]) -> list[dict[str, Any]]:
        return await run_formula(request)

    @app.post("/v1/formula", summary="Statements holding a formula or a similar one (`search --formula --json`)")
    async def formula_post(request: FormulaRequest) -> list[dict[str, Any]]:
        return await run_formula(request)

    @app.get(
        "/v1/statements/{id_or_label:path}",
        summary="One statement with what it uses, what uses it and its definitions (`show --json`)",
    )
    async def statement(id_or_label: str, depth: Annotated[int, Query(ge=0, le=5)] = 2) -> dict[str, Any]:
        check_id(id_or_label, limits)
        # An id or label is looked up, never opened as a path: "../../etc/passwd" is only an unknown label.
        view = await in_thread(lambda: rag.statement(id_or_label, depth))
        return view.to_dict()

    # ------------------------------------------------------------------ answers
    def queue_full() -> ApiError:
        return ApiError(
            429,
            f"{asks.running} answers are being written and {asks.waiting} wait (api.max_queued_asks); retry later",
            {"Retry-After": str(limits.retry_after_s)},
        )

    @app.post("/v1/ask", summary="The quoting answer with its sources (`ask --json`)")
    async def ask(request: AskRequest) -> JSONResponse:
        request = request.checked(limits)
        try:
            answer = (await backend.ask(request.question, request.k)).to_dict()
        except QueueFullError:
            raise queue_full() from None
        except DeadlineError as error:
            raise ApiError(504, str(error)) from None
        # As `ask` does: when the LLM is down the sources are still returned, with the reason.
        return JSONResponse(answer, status_code=503 if answer.get("llm_error") else 200)

    @app.post(
        "/v1/ask/stream",
        summary="The answer as server-sent events: `sources` (with `next_results`, the same search's next results), "
        "`text` chunks, `answer` (`ask --json`), then `checks`. "
        "Where the model chooses, the first `text` quotes the search's first result at once; the model's choice "
        "follows as a `text` event that also carries `replace` (the answer as it now stands), `changed` and `notice`",
    )
    async def ask_stream(request: AskRequest) -> StreamingResponse:
        request = request.checked(limits)
        try:
            stream, release, deadline = await backend.start_answer(request.question, request.k)
        except QueueFullError:
            raise queue_full() from None
        except DeadlineError as error:
            raise ApiError(504, str(error)) from None

        async def events() -> AsyncIterator[str]:
            sources = [hit.to_dict() for hit in stream.sources]
            yield _event(
                "sources", {"sources": sources, "next_results": [hit.to_dict() for hit in stream.next_results]}
            )
            chunks = stream.events()
            try:
                async with asyncio.timeout_at(deadline):
                    async for chunk in iterate_in_threadpool(chunks):
                        # An update (the model's choice after the quote shown first) is text to append that says
                        # what changed, and for a client that redraws, the answer as it now stands ("replace").
                        yield _event("text", {"text": chunk} if isinstance(chunk, str) else chunk.to_dict())
                    record = (await run_in_threadpool(stream.result)).to_dict()
            except TimeoutError:
                reason = f"the answer ran past its time limit (api.ask_timeout_s = {limits.ask_timeout_s:g} s)"
                yield _event("error", {"error": {"status": 504, "reason": reason}})
                return
            finally:  # ended early (a client that left, the deadline): the LLM's stream is closed, not left running
                await run_in_threadpool(_close, chunks)
            yield _event("answer", record)
            yield _event("checks", {key: record[key] for key in CHECKS})

        return ReleasingStream(events(), release, media_type="text/event-stream", headers={"Cache-Control": "no-cache"})

    return app


class ReleasingStream(StreamingResponse):
    """A stream that gives its turn at the LLM back however it ends: finished, failed before its first
    chunk, or left by its client (whose body generator is then never resumed, so a ``finally`` in it would
    not run: three abandoned streams used to hold the queue)."""

    def __init__(self, content: AsyncIterator[str], release: Callable[[], None], **kwargs: Any) -> None:
        super().__init__(content, **kwargs)
        self._release = release

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            aclose = getattr(self.body_iterator, "aclose", None)
            if aclose is not None:
                await aclose()  # runs the body's own clean-up when its client left mid-stream
            self._release()


def _close(iterator: object) -> None:
    close = getattr(iterator, "close", None)
    if close is not None:
        with contextlib.suppress(ValueError):  # still running in another thread: it ends with that thread
            close()


def _event(name: str, data: object) -> str:
    return f"event: {name}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"


def _validation_reason(error: RequestValidationError) -> str:
    """FastAPI's list of validation errors as one sentence: which field, and what is wrong with it."""
    parts = []
    for item in error.errors()[:5]:
        if item.get("type") == "json_invalid":
            parts.append("the body is not valid JSON")
            continue
        where = ".".join(str(part) for part in item.get("loc", ()) if part not in ("body", "query", "path"))
        message = item.get("msg", "invalid")
        parts.append(f"{where}: {message}" if where else message)
    return "; ".join(parts) or "invalid request"


def _mcp_transport(limits: ApiSettings) -> dict[str, Any]:
    """The MCP app's transport settings: its DNS-rebinding protection allows loopback host names only,
    which is right on loopback; beyond it the bearer token guards every request instead."""
    from mcp.server.transport_security import TransportSecuritySettings

    from rag_app.api.guards import is_loopback

    if is_loopback(limits.host):
        return {"host": limits.host}
    return {"host": limits.host, "transport_security": TransportSecuritySettings(enable_dns_rebinding_protection=False)}
