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

The routes are router modules (:mod:`rag_app.api.routes`: ``health``, ``search``, ``answers``), thin
adapters over the :class:`ServingBackend` in the app's state, which the app's lifespan creates and closes
(shared with the ``/mcp`` tools): searches in worker threads, at most ``api.max_concurrent_searches`` at
once (two CPUs gain nothing from more), answers in :class:`AskQueue`, one deadline per request. Every
error is JSON, ``{"error": {"status", "reason"}}``, its text without the server's paths. Every response
carries ``Server-Timing: app;dur=MS``, the server's own time on it (:mod:`rag_app.api.server_timing`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from rag_app.api.connection_limits import BodyReadTimeout
from rag_app.api.errors import STATUS_OF, ApiError, redacted
from rag_app.api.guards import BearerTokenGuard, BodySizeLimit, LoopbackHostGuard, PlainErrorsAsJson
from rag_app.api.mcp_tools import build_mcp_server
from rag_app.api.routes import answers, health, search
from rag_app.api.routes.answers import CHECKS, ReleasingStream
from rag_app.api.server_timing import ServerTiming
from rag_app.api.serving_backend import HEALTHZ_LLM_WAIT_S, ServingBackend
from rag_app.pipeline import MathRAG
from rag_app.settings import ApiSettings

API_VERSION = "1"
__all__ = ["API_VERSION", "CHECKS", "HEALTHZ_LLM_WAIT_S", "ApiError", "ReleasingStream", "create_app"]


def error_response(status: int, reason: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": {"status": status, "reason": reason}}, status_code=status, headers=headers)


def create_app(rag: MathRAG, limits: ApiSettings | None = None, mcp: bool = True) -> FastAPI:
    """The API over ``rag``; with ``mcp``, the MCP server's tools (:mod:`rag_app.api.mcp_tools`) are served
    under ``/mcp`` by streamable HTTP, over the same backend (the same queue for answers)."""
    limits = limits or rag.settings.api
    token = limits.token.get_secret_value() if limits.token else None
    mcp_server = build_mcp_server(lambda: app.state.backend) if mcp else None
    mcp_app = mcp_server.streamable_http_app(**_mcp_transport(limits)) if mcp_server is not None else None

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        app.state.backend = ServingBackend(rag, limits)
        async with AsyncExitStack() as stack:
            if mcp_server is not None:
                await stack.enter_async_context(mcp_server.session_manager.run())
            try:
                yield
            finally:
                await app.state.backend.close()

    app = FastAPI(
        title="rag-app",
        version=API_VERSION,
        summary="Search and cite theorems, lemmas and definitions from LaTeX papers and Math StackExchange.",
        lifespan=lifespan,
    )
    if mcp_app is not None:
        app.router.routes.extend(mcp_app.routes)
    # The middleware added last runs first: a body over the limit is refused before the token is read.
    app.add_middleware(PlainErrorsAsJson)  # innermost: what the MCP app answers in plain text, as JSON
    app.add_middleware(BearerTokenGuard, token=token)
    app.add_middleware(LoopbackHostGuard, host=limits.host, token=token)
    app.add_middleware(BodySizeLimit, max_bytes=limits.max_body_bytes)
    app.add_middleware(BodyReadTimeout, timeout_s=limits.body_timeout_s)
    app.add_middleware(ServerTiming)  # outermost: the refusals above are timed too
    _handle_errors(app, rag)
    for routes in (health, search, answers):
        app.include_router(routes.router)
    return app


def _handle_errors(app: FastAPI, rag: MathRAG) -> None:
    """Every error as JSON, ``{"error": {"status", "reason"}}``, its text without the server's paths."""

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
    """The MCP app's transport settings: its own DNS-rebinding check is off, because the app's
    :class:`LoopbackHostGuard` checks every route, ``/mcp`` included, by one rule (an exact authority, one Host
    header, the target and Origin too); beyond loopback the bearer token guards every request instead."""
    from mcp.server.transport_security import TransportSecuritySettings

    return {"host": limits.host, "transport_security": TransportSecuritySettings(enable_dns_rebinding_protection=False)}
