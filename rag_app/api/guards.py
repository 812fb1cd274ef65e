"""What keeps `rag-app serve` safe to leave running: the bind rule, the bearer token, the body size limit
and the queue in front of the LLM.

Each is small and framework-light (the token and body checks are plain ASGI middleware), so that the HTTP
API and the MCP server mounted inside it are guarded by the same code.
"""

from __future__ import annotations

import asyncio
import hmac
import ipaddress
import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

OPEN_PATHS = frozenset({"/healthz"})  # answered without the token: a load balancer's probe carries none


class UnsafeBindError(ValueError):
    """Binding beyond loopback without a token (the message says how to set one)."""


def is_loopback(host: str) -> bool:
    """Whether ``host`` is only reachable from this machine (``localhost``, 127.0.0.0/8, ``::1``)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a host name other than localhost: it may resolve to anything


def check_bind(host: str, token: str | None) -> None:
    """Refuse to listen beyond loopback without a token: the API reads the whole index and runs the LLM."""
    if not is_loopback(host) and not token:
        raise UnsafeBindError(
            f"refusing to listen on {host} without a token: anyone who can reach it could read the index and "
            "run the LLM. Set one (RAG_APP_API__TOKEN=... or [api] token in the settings file; clients send "
            "'Authorization: Bearer TOKEN'), or bind 127.0.0.1."
        )


async def send_json_error(send: Send, status: int, reason: str, headers: dict[str, str] | None = None) -> None:
    """A JSON error response, the same shape as the API's own errors."""
    body = json.dumps({"error": {"status": status, "reason": reason}}).encode()
    raw_headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    raw_headers += [(name.lower().encode(), value.encode()) for name, value in (headers or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": raw_headers})
    await send({"type": "http.response.body", "body": body})


class BearerTokenGuard:
    """Every HTTP request but ``/healthz`` carries ``Authorization: Bearer TOKEN`` (compared in constant
    time), else 401. No token set: everything passes (the server is on loopback, see :func:`check_bind`)."""

    def __init__(self, app: ASGIApp, token: str | None) -> None:
        self.app = app
        self.token = token.encode() if token else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or self.token is None or scope.get("path") in OPEN_PATHS:
            await self.app(scope, receive, send)
            return
        given = dict(scope.get("headers") or []).get(b"authorization", b"")
        scheme, _, credential = given.partition(b" ")
        if scheme.lower() != b"bearer" or not hmac.compare_digest(credential.strip(), self.token):
            reason = "a bearer token is required (Authorization: Bearer TOKEN)" if not given else "wrong token"
            await send_json_error(send, 401, reason, {"WWW-Authenticate": "Bearer"})
            return
        await self.app(scope, receive, send)


LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})


class LoopbackHostGuard:
    """On a loopback server with no token, every request but ``/healthz`` names this machine in its
    ``Host`` header, else 403. Without it a web page could rebind its own name to 127.0.0.1 and read
    the index through the visitor's browser (DNS rebinding); the MCP app checks the same for its routes.
    A server bound beyond loopback has a token (:func:`check_bind`), which a rebound page does not send."""

    def __init__(self, app: ASGIApp, host: str, token: str | None) -> None:
        self.app = app
        self.active = is_loopback(host) and not token
        self.allowed = LOOPBACK_NAMES | {host.strip("[]").lower()}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not self.active or scope.get("path") in OPEN_PATHS:
            await self.app(scope, receive, send)
            return
        given = dict(scope.get("headers") or []).get(b"host", b"").decode("latin-1").strip().lower()
        name = given.rsplit("]", 1)[0].lstrip("[") if given.startswith("[") else given.split(":", 1)[0]
        if name not in self.allowed:
            reason = (
                f"the Host header ({given[:100] or 'none'}) does not name this machine: call the API at "
                "127.0.0.1 or localhost (a page that rebinds its name is refused)"
            )
            await send_json_error(send, 403, reason)
            return
        await self.app(scope, receive, send)


class RequestTooLargeError(Exception):
    """A body that passed its bound while being read (no Content-Length, or a false one)."""


class BodySizeLimit:
    """Refuse a request body over ``max_bytes`` with 413: by its Content-Length before reading it, or
    while reading one sent without (chunked)."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.max_bytes):
            await send_json_error(send, 413, self._reason())
            return
        seen = 0
        started = over = False

        async def limited_receive() -> Message:
            nonlocal seen, over
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_bytes:
                    over = True
                    raise RequestTooLargeError
            return message

        async def tracking_send(message: Message) -> None:
            # Past the limit the app's own answer is dropped: FastAPI turns any error raised while it
            # reads the body into 400 "error parsing the body", and a chunked body over the limit got that.
            nonlocal started
            if over:
                if not started and message["type"] == "http.response.start":
                    started = True
                    await send_json_error(send, 413, self._reason())
                return
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, limited_receive, tracking_send)
        except RequestTooLargeError:
            if not started:
                await send_json_error(send, 413, self._reason())

    def _reason(self) -> str:
        return f"the request body is over the limit of {self.max_bytes:,} bytes (api.max_body_bytes)"


class QueueFullError(Exception):
    """More answers waiting than the queue holds: the client is told to come back later (429)."""


class AskQueue:
    """At most ``concurrent`` answers generated at once (the LLM serves one prompt at a time on a CPU);
    up to ``queued`` more wait their turn, first come first served; past that, :class:`QueueFullError`."""

    def __init__(self, concurrent: int, queued: int) -> None:
        self.concurrent = concurrent
        self.queued = queued
        self._slots = asyncio.Semaphore(concurrent)
        self._waiting = 0
        self._running = 0

    @property
    def waiting(self) -> int:
        return self._waiting

    @property
    def running(self) -> int:
        return self._running

    async def enter(self) -> None:
        """Wait for a slot, or raise :class:`QueueFullError` at once when the queue is full. Every
        ``enter`` that returns is matched by one :meth:`leave`."""
        if self._slots.locked() and self._waiting >= self.queued:
            raise QueueFullError
        self._waiting += 1
        try:
            await self._slots.acquire()
        finally:
            self._waiting -= 1
        self._running += 1

    def leave(self) -> None:
        self._running -= 1
        self._slots.release()
