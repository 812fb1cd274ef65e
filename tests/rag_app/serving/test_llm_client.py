"""Retries and errors, against a scripted HTTP server on loopback."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from rag_app.serving.llm_client import ChatClient, LLMUnavailableError

# A scripted status: 200 with a stream that closes before any text or finish reason.
EMPTY_STREAM = 0


class ScriptedServer:
    """Answers chat requests with a scripted list of status codes, then a streamed reply."""

    def __init__(self, statuses: list[int], delay_s: float = 0.0) -> None:
        self.statuses = statuses
        self.requests: list[dict] = []
        self.in_flight = 0
        self.max_in_flight = 0
        lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                with lock:
                    outer.in_flight += 1
                    outer.max_in_flight = max(outer.max_in_flight, outer.in_flight)
                try:
                    time.sleep(delay_s)
                    self._answer()
                finally:
                    with lock:
                        outer.in_flight -= 1

            def _answer(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                if not self.path.endswith("/chat/completions"):
                    self.send_response(404)
                    self.end_headers()
                    return
                outer.requests.append(body)
                status = outer.statuses.pop(0) if outer.statuses else 200
                if status not in (200, EMPTY_STREAM):
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.end_headers()
                    self.wfile.write(json.dumps({"error": {"message": f"status {status}"}}).encode())
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                if status == EMPTY_STREAM:  # a 200 that closes at once, as a restarting server may send
                    self.wfile.write(b"data: [DONE]\n\n")
                    return
                for piece in ("By [1], ", "yes."):
                    chunk = {"id": "x", "object": "chat.completion.chunk", "created": 0, "model": "m",
                             "choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}]}  # fmt: skip
                    self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                self.wfile.write(b"data: [DONE]\n\n")

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()


@pytest.fixture
def scripted() -> Iterator[callable]:
    servers: list[ScriptedServer] = []

    def make(statuses: list[int], delay_s: float = 0.0) -> ScriptedServer:
        servers.append(ScriptedServer(statuses, delay_s))
        return servers[-1]

    yield make
    for server in servers:
        server.close()


MESSAGES = [{"role": "user", "content": "hi"}]


def test_a_stream_closed_before_any_text_is_opened_again(scripted) -> None:
    server = scripted([EMPTY_STREAM])
    client = ChatClient(server.url, model="m", retries=1)
    assert client.chat(MESSAGES) == "By [1], yes."
    assert len(server.requests) == 2


def test_a_stream_that_stays_empty_gives_an_empty_answer_after_the_retries(scripted) -> None:
    server = scripted([EMPTY_STREAM, EMPTY_STREAM])
    client = ChatClient(server.url, model="m", retries=1)
    assert client.chat(MESSAGES) == ""
    assert len(server.requests) == 2


def test_retries_on_503_and_429_then_streams(scripted) -> None:
    server = scripted([503, 429])
    client = ChatClient(server.url, model="m", retries=3, extra_body={"repeat_penalty": 1.0})
    assert list(client.stream_chat(MESSAGES)) == ["By [1], ", "yes."]
    assert len(server.requests) == 3
    assert server.requests[-1]["repeat_penalty"] == 1.0 and server.requests[-1]["stream"] is True


def test_no_retry_on_other_4xx(scripted) -> None:
    import openai

    server = scripted([400])
    client = ChatClient(server.url, model="m", retries=3)
    with pytest.raises(openai.BadRequestError):
        client.chat(MESSAGES)
    assert len(server.requests) == 1


def test_gives_up_after_retries_with_a_clear_error(scripted) -> None:
    server = scripted([500, 500, 500])
    client = ChatClient(server.url, model="m", retries=2)
    with pytest.raises(LLMUnavailableError, match="not reachable"):
        client.chat(MESSAGES)
    assert len(server.requests) == 3


def test_unreachable_server() -> None:
    client = ChatClient("http://127.0.0.1:9/v1", model="m", retries=0, timeout_s=2)
    with pytest.raises(LLMUnavailableError, match=r"127\.0\.0\.1:9"):
        client.chat(MESSAGES)


def test_concurrent_requests_are_bounded(scripted) -> None:
    server = scripted([], delay_s=0.3)
    client = ChatClient(server.url, model="m", max_concurrency=2)
    threads = [threading.Thread(target=client.chat, args=(MESSAGES,)) for _ in range(5)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(server.requests) == 5 and server.max_in_flight == 2


def test_token_counting_falls_back_to_none_when_the_server_cannot_count(scripted) -> None:
    server = scripted([])
    client = ChatClient(server.url, model="m")
    assert client.count_tokens("some text") is None
    assert client.count_tokens("again") is None and client._token_endpoint == ""  # asked once, then estimated
