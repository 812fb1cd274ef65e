"""The servers LLM tests talk to: the real local server (llama.cpp, or vLLM for the opt-in check),
a fault-injecting proxy in front of it, and a server that accepts connections and never answers.

``RAG_APP_TEST_VLLM_MODEL`` (a Hugging Face model folder) and ``RAG_APP_TEST_VLLM`` (the ``vllm``
command) switch the integration tests from llama.cpp to vLLM: ``scripts/vllm_cpu_check.sh`` sets them.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import threading
from dataclasses import dataclass, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import httpx

from rag_app.serving.llm_server import LlamaCppServer, LLMServerProcess, VLLMServer
from rag_app.serving.packaged_models import resolve_gguf

# The smallest packaged chat model keeps the suite fast; the app's default is Qwen2.5-Coder-1.5B.
TEST_CHAT_MODEL = "smollm2-135m-instruct"
VLLM_MODEL = os.environ.get("RAG_APP_TEST_VLLM_MODEL")
VLLM_COMMAND = os.environ.get("RAG_APP_TEST_VLLM", "vllm")
SERVER_KIND = "vLLM" if VLLM_MODEL else "llama.cpp"


def make_test_server(data_dir: Path, port: int = 0) -> LLMServerProcess:
    """A (not yet started) server with the test model: llama.cpp by default, vLLM when configured."""
    if VLLM_MODEL:
        return VLLMServer(
            model=VLLM_MODEL,
            model_alias=TEST_CHAT_MODEL,
            port=port,
            executable=VLLM_COMMAND,
            max_model_len=4096,
            dtype="bfloat16",
            startup_timeout_s=900,
            log_path=data_dir / "server.log",
            # Eager mode skips torch.compile: a CPU start takes about a minute instead of three.
            extra_args=["--enforce-eager"],
            extra_env={"VLLM_CPU_KVCACHE_SPACE": "1", "VLLM_TARGET_DEVICE": "cpu"},
        )
    return LlamaCppServer(
        model_path=resolve_gguf(TEST_CHAT_MODEL, data_dir, show_progress=False),
        model_alias=TEST_CHAT_MODEL,
        port=port,
        context_window=4096,
        startup_timeout_s=120,
        log_path=data_dir / "server.log",
    )


@dataclass
class ScriptedLLMServer(LLMServerProcess):
    """A real server process (tests/scripted_llm_server.py) that fails on cue: ``fail`` is ``sigill``,
    ``hang``, ``exit`` or ``none``, after ``after`` completions (the warm-up is the first). Its safe
    variant (what a watched server retries with after SIGILL) is the same server with ``safe_fail``."""

    fail: str = "none"
    after: int = 0
    safe_fail: str | None = None  # None: no safe variant
    reply: str = "[1]"
    seconds: float = 0.0  # how long each completion takes
    chunk_seconds: float = 0.0  # a streamed reply one character at a time, this far apart
    kind: ClassVar[str] = "scripted"

    @property
    def variant(self) -> str:
        return f"fails: {self.fail} after {self.after}"

    def command(self) -> list[str]:
        script = Path(__file__).with_name("scripted_llm_server.py")
        return [sys.executable, str(script), "--port", str(self.port), "--model", self.model_alias,
                "--fail", self.fail, "--after", str(self.after), "--reply", self.reply,
                "--seconds", str(self.seconds), "--chunk-seconds", str(self.chunk_seconds)]  # fmt: skip

    def safe_variant(self) -> ScriptedLLMServer | None:
        if self.safe_fail is None or self.fail == self.safe_fail:
            return None
        return replace(self, fail=self.safe_fail, safe_fail=None)


def forced_output(text: str) -> dict[str, object]:
    """Request fields that make the real server generate exactly ``text`` (constrained decoding)."""
    if VLLM_MODEL:
        return {"structured_outputs": {"choice": [text]}}
    return {"grammar": "root ::= " + json.dumps(text)}


class FaultProxy:
    """Forwards to ``upstream`` (streaming included), first answering chat requests with ``faults``.

    ``faults`` is a list of HTTP statuses for the first chat completions; every chat request body is
    recorded in ``chat_requests``.
    """

    def __init__(self, upstream: str, faults: list[int] | None = None) -> None:
        self.upstream = upstream.rstrip("/").removesuffix("/v1")
        self.faults = list(faults or [])
        self.chat_requests: list[dict] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                self._forward(None)

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                if self.path.endswith("/chat/completions"):
                    outer.chat_requests.append(json.loads(body))
                    if outer.faults:
                        status = outer.faults.pop(0)
                        payload = json.dumps({"error": {"message": f"injected {status}"}}).encode()
                        self.send_response(status)
                        self.send_header("Content-Type", "application/json")
                        self.send_header("Content-Length", str(len(payload)))
                        self.end_headers()
                        self.wfile.write(payload)
                        return
                self._forward(body)

            def _forward(self, body: bytes | None) -> None:
                method = "GET" if body is None else "POST"
                headers = {"Content-Type": self.headers.get("Content-Type", "application/json")}
                with (
                    httpx.Client(timeout=600) as client,
                    client.stream(method, outer.upstream + self.path, content=body, headers=headers) as response,
                ):
                    self.send_response(response.status_code)
                    self.send_header("Content-Type", response.headers.get("content-type", "application/json"))
                    self.send_header("Transfer-Encoding", "chunked")
                    self.end_headers()
                    for piece in response.iter_raw():
                        self.wfile.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
                        self.wfile.flush()
                    self.wfile.write(b"0\r\n\r\n")

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


class HangingServer:
    """Accepts connections and reads requests, but never answers."""

    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/v1"
        self.connections: list[socket.socket] = []
        self._open = True
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while self._open:
            try:
                connection, _ = self.sock.accept()
            except OSError:
                return
            self.connections.append(connection)

    def close(self) -> None:
        self._open = False
        for connection in self.connections:
            connection.close()
        self.sock.close()


class MalformedServer:
    """An HTTP server on loopback that answers like a broken LLM server: ``/v1/models`` with an HTML page
    (``html_models``), or a model list and then a chat stream of ``data: {not json`` (``html_reply``: an
    HTML error page with status 200 for every completion)."""

    def __init__(self, html_models: bool = False, html_reply: bool = False) -> None:
        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def _send(self, body: bytes, content_type: str) -> None:
                self.send_response(200)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:
                if html_models:
                    self._send(b"<html><body><h1>Welcome to nginx!</h1></body></html>", "text/html")
                else:
                    models = {"object": "list", "data": [{"id": "broken-model", "object": "model", "owned_by": "x"}]}
                    self._send(json.dumps(models).encode(), "application/json")

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                if html_reply:  # a proxy's error page, sent with status 200 and labelled JSON
                    self._send(b"<html><body>502 Bad Gateway</body></html>", "application/json")
                    return
                self._send(b"data: {not json\n\ndata: [DONE]\n\n", "text/event-stream")

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
