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
import re
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
# host[:port]: a name or IPv4 address, or a bracketed IPv6 address; nothing before or after it
_AUTHORITY = re.compile(r"^(?:\[(?P<ipv6>[0-9a-f:.]+)\]|(?P<name>[a-z0-9.-]+))(?::(?P<port>[0-9]{1,5}))?$")
_ABSOLUTE_TARGET = re.compile(r"^[a-z][a-z0-9+.-]*://(?P<authority>[^/?#]*)(?P<path>[^?#]*)", re.IGNORECASE)


def authority_names_this_machine(authority: str, allowed: frozenset[str], port: int | None) -> bool:
    """Whether ``authority`` (a Host header's value, an Origin's or an absolute target's ``host[:port]``) is
    exactly a name of this machine, at this server's ``port`` where it gives one: ``127.0.0.1:8765``,
    ``localhost``, ``[::1]:8765``; not ``[::1].evil.example``, ``127.0.0.1:80@evil.example`` nor
    ``localhost:8765.evil.example``. Without a port, the name alone (as HTTP clients send for port 80)."""
    match = _AUTHORITY.match(authority.strip().lower())
    if match is None:
        return False
    name = match.group("ipv6") or match.group("name")
    given_port = match.group("port")
    return name in allowed and (given_port is None or port is None or int(given_port) == port)


class LoopbackHostGuard:
    """On a loopback server with no token, every request but ``/healthz`` names this machine, else 403: its
    one ``Host`` header is exactly a loopback name (at this port, where it gives one), an absolute-form target
    (``GET http://127.0.0.1:8765/v1/search``) names it too, and an ``Origin``, where a browser sends one, is a
    page of this machine. Without it a web page could rebind its own name to 127.0.0.1 and read the index
    through the visitor's browser (DNS rebinding). The MCP app's routes are guarded by this same rule (its own
    check is off: :func:`rag_app.api.http_app.create_app`). A server bound beyond loopback has a token
    (:func:`check_bind`), which a rebound page does not send."""

    def __init__(self, app: ASGIApp, host: str, token: str | None) -> None:
        self.app = app
        self.active = is_loopback(host) and not token
        self.allowed = LOOPBACK_NAMES | {host.strip("[]").lower()}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not self.active or scope.get("path") in OPEN_PATHS:
            await self.app(scope, receive, send)
            return
        refused = self._refused(scope)
        if refused is not None:
            await send_json_error(send, 403, refused)
            return
        await self.app(scope, receive, send)

    def _refused(self, scope: Scope) -> str | None:
        """Why the request does not name this machine, or None (an absolute target is rewritten to its path)."""
        server = scope.get("server") or (None, None)
        port = server[1] if isinstance(server[1], int) else None
        hosts = [value.decode("latin-1") for name, value in scope.get("headers") or [] if name == b"host"]
        rebound = (
            "does not name this machine: call the API at 127.0.0.1 or localhost (a page that rebinds its name is "
            "refused)"
        )
        if len(hosts) != 1:
            return f"the request has {len(hosts)} Host headers; it needs one, naming this machine"
        if not authority_names_this_machine(hosts[0], self.allowed, port):
            return f"the Host header ({hosts[0][:100] or 'empty'}) {rebound}"
        target = _ABSOLUTE_TARGET.match(scope.get("path", ""))
        if target is not None:
            if not authority_names_this_machine(target.group("authority"), self.allowed, port):
                return f"the request's target ({target.group('authority')[:100]}) {rebound}"
            scope["path"] = target.group("path") or "/"
            scope["raw_path"] = scope["path"].encode()
        origins = [value.decode("latin-1") for name, value in scope.get("headers") or [] if name == b"origin"]
        for origin in origins:
            page = _ABSOLUTE_TARGET.match(origin)
            if origin != "null" and (
                page is None or not authority_names_this_machine(page.group("authority"), self.allowed, None)
            ):
                return f"the Origin header ({origin[:100]}) is a page of another site"  # fmt: skip
        return None


class PlainErrorsAsJson:
    """An error answered as plain text inside the app (the MCP app's "Invalid Content-Type header", a
    framework's own 405) is sent as the API's JSON error instead, its text the reason."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        held: Message | None = None
        text = b""

        async def json_send(message: Message) -> None:
            nonlocal held, text
            if message["type"] == "http.response.start":
                kind = dict(message.get("headers") or []).get(b"content-type", b"")
                if (
                    message["status"] >= 400
                    and not kind.startswith(b"application/json")
                    and (not kind or kind.startswith(b"text/plain"))
                ):
                    held = message  # rewritten once its text is in
                    return
            elif held is not None and message["type"] == "http.response.body":
                text += message.get("body", b"")
                if not message.get("more_body", False):
                    reason = text.decode("utf-8", "replace").strip() or "error"
                    kept = {k.decode(): v.decode() for k, v in held.get("headers") or []
                            if k.lower() not in (b"content-type", b"content-length")}  # fmt: skip
                    await send_json_error(send, held["status"], reason, kept)
                return
            await send(message)

        await self.app(scope, receive, json_send)


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
