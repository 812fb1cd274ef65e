"""The ``Server-Timing`` header: how long the server spent on a request, read by clients and benchmarks.

Every HTTP response of `rag-app serve` carries ``Server-Timing: app;dur=MS``, the milliseconds from the
request reaching the application (past uvicorn's parsing) to the response's headers. A client that sees
more than this spent the difference on the connection and on its own side: ``bench/serve_load.py``
splits one client's latency that way.
"""

from __future__ import annotations

import time

from rag_app.api.guards import ASGIApp, Message, Receive, Scope, Send


class ServerTiming:
    """Plain ASGI middleware (no per-request task or copy of the body): it only adds one header."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()

        async def timed_send(message: Message) -> None:
            if message["type"] == "http.response.start":
                spent_ms = (time.perf_counter() - started) * 1000
                headers = list(message.get("headers") or [])
                headers.append((b"server-timing", f"app;dur={spent_ms:.1f}".encode()))
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, timed_send)
