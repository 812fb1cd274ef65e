"""Limits at the connection for `rag-app serve`: what a client that never finishes its request may hold.

uvicorn has options for some of them (``h11_max_incomplete_event_size``: the request line and headers,
``timeout_keep_alive``: an idle keep-alive connection) and none for the rest: a half-sent request line, or
headers sent a byte a minute, keeps a connection (and its file) open for good, and 2,000 idle connections
stay open. :class:`LimitedH11Protocol` is uvicorn's h11 protocol with those limits added:

- the request line and headers must arrive within ``api.header_timeout_s`` of the connection's start (or of
  the previous response's end): past it the client gets 408 and the connection is closed;
- a connection that sends no byte within ``api.first_byte_timeout_s`` of opening is closed (else sockets
  that send nothing hold their place in the table for the whole header timeout, and 64 of them hold the API);
- at most ``api.max_connections`` connections are open at once. A new one past the cap takes the place of an idle
  one (no byte of a request in): the oldest idle connection of the client address that holds the most goes first.
  Only when none is idle does the newcomer get 503, at its request;
- a request line with another version than HTTP/1.0 or HTTP/1.1 gets 505;
- a response sent before the request's body was all in (a 404, a 405) closes the connection: the rest of that body
  can never be read as the next request (else such a connection waits out the keep-alive and header timeouts).

The body's own timeout is ASGI middleware (:class:`BodyReadTimeout`): a body that stops arriving for
``api.body_timeout_s`` gets 408. Every status here is the API's JSON error. What h11 cannot parse (a 1 MB
URL, ``Content-Length: -1``, a NUL in a header) gets uvicorn's own plain-text 400 "Invalid HTTP request
received." and a closed connection: no application code runs for a request that is not HTTP.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from typing import Any

import h11
from uvicorn.config import Config
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.server import ServerState

from rag_app.api.guards import ASGIApp, Message, Receive, Scope, Send, send_json_error
from rag_app.settings import ApiSettings


def raw_json_error(status: int, phrase: str, reason: str) -> bytes:
    """A whole HTTP/1.1 response with the API's JSON error, for a connection the application never saw."""
    body = json.dumps({"error": {"status": status, "reason": reason}}).encode()
    head = (
        f"HTTP/1.1 {status} {phrase}\r\ncontent-type: application/json\r\ncontent-length: {len(body)}\r\n"
        "connection: close\r\n\r\n"
    )
    return head.encode() + body


class LimitedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with a header read timeout and a cap on open connections (see the module).
    The limits come from :func:`limited_protocol`, which binds them to a subclass."""

    header_timeout_s = 10.0
    first_byte_timeout_s = 2.0
    max_connections = 64
    max_header_bytes = 32_768

    def __init__(self, config: Config, server_state: ServerState, app_state: dict[str, Any], **rest: Any) -> None:
        super().__init__(config, server_state, app_state, **rest)
        self._header_timer: asyncio.TimerHandle | None = None
        self._first_byte_timer: asyncio.TimerHandle | None = None
        self._over_cap = False
        self._opened_at = 0.0
        self._idle = True  # no byte of a request in since the connection opened or its last response ended

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._opened_at = self.loop.time()
        if len(self.connections) > self.max_connections:
            # One past the cap takes an idle one's place; with none idle it is answered 503 when its request
            # comes (closing it before it has sent anything would reset the connection under the client's
            # request: no answer at all), or closed at its first-byte timeout.
            victim = self._idle_to_evict()
            if victim is not None:
                victim.transport.close()  # it sent nothing: closed without a word, as at its own timeout
            else:
                self._over_cap = True
        self._arm_header_timer()
        self._first_byte_timer = self.loop.call_later(self.first_byte_timeout_s, self._no_first_byte)

    def _idle_to_evict(self) -> LimitedH11Protocol | None:
        """The idle connection that gives way to a new one: of the client address holding the most connections,
        its oldest (a client that opens many and sends nothing loses its own first)."""
        idle = [
            other
            for other in self.connections
            if isinstance(other, LimitedH11Protocol) and other is not self and other._idle
            and not other.transport.is_closing()
        ]  # fmt: skip
        if not idle:
            return None
        held = Counter(other.client[0] if other.client else "" for other in self.connections
                       if isinstance(other, LimitedH11Protocol))  # fmt: skip
        return min(idle, key=lambda other: (-held[other.client[0] if other.client else ""], other._opened_at))

    def _no_first_byte(self) -> None:
        self._first_byte_timer = None
        if self._idle and not self.transport.is_closing():
            self.transport.close()  # nothing was asked: nothing to answer

    def data_received(self, data: bytes) -> None:
        if data:
            self._idle = False
            if self._first_byte_timer is not None:
                self._first_byte_timer.cancel()
                self._first_byte_timer = None
        if self.conn.their_state is h11.IDLE and self._unknown_version(data):
            reason = "this server speaks HTTP/1.0 and HTTP/1.1 only"
            self.transport.write(raw_json_error(505, "HTTP Version Not Supported", reason))
            self.transport.close()
            return
        if self._over_cap:
            reason = f"{self.max_connections} connections are open already (api.max_connections): try again later"
            self.transport.write(raw_json_error(503, "Service Unavailable", reason))
            self.transport.close()
            return
        if self.conn.their_state is h11.IDLE and self._headers_too_large(data):
            reason = f"the request line and headers are over {self.max_header_bytes:,} bytes (api.max_header_bytes)"
            self.transport.write(raw_json_error(431, "Request Header Fields Too Large", reason))
            self.transport.close()
            return
        super().data_received(data)
        if self.cycle is not None and self.conn.their_state is not h11.IDLE:
            self._disarm_header_timer()  # the request line and headers are in: the request is the app's now

    def _unknown_version(self, data: bytes) -> bool:
        """Whether the request line, once it is in, names another version than HTTP/1.0 or HTTP/1.1 (h11 read
        ``HTTP/9.9`` as 1.1 and the API answered 200)."""
        buffered = self.conn.trailing_data[0] + data
        end = buffered.find(b"\r\n")
        if end < 0:
            return False
        version = buffered[:end].rsplit(b" ", 1)[-1]
        return version.startswith(b"HTTP/") and version not in (b"HTTP/1.0", b"HTTP/1.1")

    def _headers_too_large(self, data: bytes) -> bool:
        """Whether the request line and headers, as far as they came, pass the limit (h11's own limit holds
        only for headers that arrive in pieces: 100 KB sent at once passed it)."""
        buffered = self.conn.trailing_data[0] + data
        end = buffered.find(b"\r\n\r\n")
        return (end if end >= 0 else len(buffered)) > self.max_header_bytes

    def on_response_complete(self) -> None:
        unread_body = self.conn.their_state is h11.SEND_BODY  # answered before the client's body was all in
        super().on_response_complete()
        if unread_body and not self.transport.is_closing():
            self.transport.close()  # the rest of that body would be read as the next request: none can follow
            return
        if not self.transport.is_closing():
            self._idle = True  # waiting for the next request: idle again, and so the first to give way
            self._arm_header_timer()  # the next request on this connection has the same time for its headers

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm_header_timer()
        if self._first_byte_timer is not None:
            self._first_byte_timer.cancel()
            self._first_byte_timer = None
        super().connection_lost(exc)

    def _arm_header_timer(self) -> None:
        self._disarm_header_timer()
        self._header_timer = self.loop.call_later(self.header_timeout_s, self._headers_too_slow)

    def _disarm_header_timer(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _headers_too_slow(self) -> None:
        self._header_timer = None
        if self.transport.is_closing() or (self.cycle is not None and not self.cycle.response_complete):
            return
        if self.conn.their_state is h11.SEND_BODY:  # the headers came; the body has its own timeout
            return
        if self.conn.their_state is not h11.IDLE or self.conn.trailing_data[0]:
            reason = (
                f"the request line and headers did not arrive within {self.header_timeout_s:g} s (api.header_timeout_s)"
            )
            self.transport.write(raw_json_error(408, "Request Timeout", reason))
        self.transport.close()  # an idle connection that sent nothing is closed without a word


def limited_protocol(limits: ApiSettings) -> type[LimitedH11Protocol]:
    """:class:`LimitedH11Protocol` with ``limits``' header timeout and connection cap."""
    return type(
        "LimitedH11Protocol",
        (LimitedH11Protocol,),
        {
            "header_timeout_s": limits.header_timeout_s,
            "first_byte_timeout_s": limits.first_byte_timeout_s,
            "max_connections": limits.max_connections,
            "max_header_bytes": limits.max_header_bytes,
        },
    )


def uvicorn_options(limits: ApiSettings) -> dict[str, Any]:
    """The options `rag-app serve` runs uvicorn with: the h11 protocol with the limits above, its header size
    limit, the keep-alive timeout."""
    return {
        "http": limited_protocol(limits),
        "h11_max_incomplete_event_size": limits.max_header_bytes,
        "timeout_keep_alive": limits.keep_alive_s,
    }


class BodyReadTimeout:
    """A request body that stops arriving for ``timeout_s`` gets 408 (JSON) and the request ends: a body
    shorter than its Content-Length kept the server waiting for good."""

    def __init__(self, app: ASGIApp, timeout_s: float) -> None:
        self.app = app
        self.timeout_s = timeout_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        body_done = too_slow = started = False
        headers = dict(scope.get("headers") or [])
        has_body = headers.get(b"content-length", b"0") not in (b"0", b"") or b"transfer-encoding" in headers

        async def timed_receive() -> Message:
            nonlocal body_done, too_slow
            if body_done:  # past the body: the app waits for the client to leave, as long as it likes
                return await receive()
            try:
                message = await asyncio.wait_for(receive(), self.timeout_s)
            except TimeoutError:
                too_slow = True
                raise BodyTooSlowError from None
            if message["type"] != "http.request" or not message.get("more_body", False):
                body_done = True
            return message

        async def tracking_send(message: Message) -> None:
            # Past the timeout the app's own answer is dropped: FastAPI turns an error raised while it reads the
            # body into 400 "error parsing the body" (as for the body size limit).
            nonlocal started
            if too_slow:
                if not started and message["type"] == "http.response.start":
                    started = True
                    await self._refuse(send)
                return
            if message["type"] == "http.response.start" and has_body and not body_done:
                # answered before its body was all in (a 404, a 405): the connection closes after this response
                # (the rest of the body cannot be read as a next request), and the client is told so up front
                message = {**message, "headers": [*message.get("headers", []), (b"connection", b"close")]}
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, timed_receive, tracking_send)
        except BodyTooSlowError:
            if not started:
                await self._refuse(send)

    async def _refuse(self, send: Send) -> None:
        reason = f"the request body stopped arriving for {self.timeout_s:g} s (api.body_timeout_s)"
        await send_json_error(send, 408, reason, {"Connection": "close"})


class BodyTooSlowError(Exception):
    """A request body that stopped arriving (see :class:`BodyReadTimeout`)."""
