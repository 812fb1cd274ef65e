"""`rag-app serve` against hostile clients (issue 85): text no encoder can read, Host headers that only look
local, clients that never finish their request, errors that were plain text, paths in answers, and a stream
left while the model writes. A real uvicorn server on loopback with the options `serve` runs with."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx
import pytest
from mcp import Client

from rag_app import MathRAG
from rag_app.api.mcp_tools import build_mcp_server
from rag_app.serving.server_watch import WatchedServer
from tests.conftest import make_settings
from tests.llm_servers import ScriptedLLMServer
from tests.rag_app.api.test_http_api import serving

LIMITS = {
    "header_timeout_s": 1.0, "body_timeout_s": 1.0, "keep_alive_s": 1.0, "max_connections": 6,
    "first_byte_timeout_s": 0.5,
}  # fmt: skip


@pytest.fixture(scope="module")
def hostile_api(demo_index_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[MathRAG, str]]:
    rag = MathRAG(make_settings(tmp_path_factory.mktemp("hostile"), index_dir=demo_index_dir))
    with serving(rag, **LIMITS) as url:
        yield rag, url


def raw(url: str, request: bytes, wait_s: float = 10.0) -> tuple[int, dict[str, str], bytes]:
    """``request`` sent as it is; the status, headers and body of the answer (status 0: closed unanswered)."""
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=wait_s) as conn:
        conn.sendall(request)
        data = b""
        try:
            while chunk := conn.recv(65536):
                data += chunk
        except TimeoutError:
            pass
    if not data:
        return 0, {}, b""
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    return int(lines[0].split()[1]), headers, body


def post(url: str, path: str, body: bytes, host: str | None = None) -> tuple[int, dict[str, str], bytes]:
    authority = host or url.removeprefix("http://")
    head = (
        f"POST {path} HTTP/1.1\r\nHost: {authority}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    )
    return raw(url, head.encode() + body)


def get(url: str, target: str, headers: str) -> int:
    return raw(url, f"GET {target} HTTP/1.1\r\n{headers}Connection: close\r\n\r\n".encode())[0]


LONE_SURROGATE = b"group \xed\xa0\x80"  # raw bytes of U+D800: Python's JSON reader decodes it (surrogatepass)


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/v1/search", b'{"query": "' + LONE_SURROGATE + b'"}', "query"),
        ("/v1/search", b'{"query": "group \\ud800"}', "query"),  # the JSON escape
        ("/v1/search", b'{"query": "group \\u0000 ring"}', "query"),  # NUL
        ("/v1/search", b'{"query": "' + LONE_SURROGATE + b'", "mode": "formula"}', "query"),
        ("/v1/search", b'{"query": "group", "kind": ["\\udc80"]}', "kind[0]"),
        ("/v1/papers", b'{"query": "' + LONE_SURROGATE + b'"}', "query"),
        ("/v1/formula", b'{"formula": "x^2 \\udfff"}', "formula"),
        ("/v1/ask", b'{"question": "' + LONE_SURROGATE + b'?"}', "question"),
        ("/v1/ask/stream", b'{"question": "' + LONE_SURROGATE + b'?"}', "question"),
    ],
)  # fmt: skip
def test_text_no_encoder_can_read_is_a_400_that_names_the_field(
    hostile_api: tuple[MathRAG, str], path: str, body: bytes, field: str
) -> None:
    """Issue 85: a lone surrogate answered 500 "TextEncodeInput must be Union[...]" or UnicodeEncodeError."""
    _, url = hostile_api
    status, headers, answer = post(url, path, body)
    assert status == 400, answer
    assert headers["content-type"] == "application/json"
    reason = json.loads(answer)["error"]["reason"]
    assert reason.startswith(f"{field} holds") and "U+" in reason and "Traceback" not in reason


def test_a_surrogate_pair_is_read_as_the_character_it_encodes(hostile_api: tuple[MathRAG, str]) -> None:
    """An emoji sent as CESU-8 (two surrogates) is one character: searched, not refused."""
    _, url = hostile_api
    status, _, answer = post(url, "/v1/search", b'{"query": "group \xed\xa0\xbd\xed\xb8\x80", "k": 2}')
    assert status == 200 and len(json.loads(answer)) == 2


@pytest.mark.parametrize(
    "host",
    ["[::1].evil.example", "127.0.0.1:{port}, evil.example", "127.0.0.1:80@evil.example",
     "localhost:{port}.evil.example", "127.0.0.1:1", ""],
)  # fmt: skip
def test_a_host_that_only_looks_local_is_refused(hostile_api: tuple[MathRAG, str], host: str) -> None:
    """Issue 85: the Host check parsed loosely (200 for each of these)."""
    _, url = hostile_api
    port = url.rsplit(":", 1)[1]
    for path in ("/v1/search?query=ring", "/mcp"):
        assert get(url, path, f"Host: {host.format(port=port)}\r\n") == 403, (host, path)


def test_one_host_header_an_absolute_target_and_the_origin_are_checked_too(hostile_api: tuple[MathRAG, str]) -> None:
    _, url = hostile_api
    local = url.removeprefix("http://")
    # two Host headers: h11 refuses the request itself (its plain 400), the guard would too (403)
    assert get(url, "/v1/search?query=ring", f"Host: evil.example\r\nHost: {local}\r\n") in (400, 403)
    assert get(url, "/v1/search?query=ring", f"Host: {local}\r\nHost: {local}\r\n") in (400, 403)
    assert get(url, "http://evil.example/v1/search?query=ring", f"Host: {local}\r\n") == 403
    assert get(url, f"http://{local}/v1/search?query=ring", f"Host: {local}\r\n") == 200
    assert get(url, "/v1/search?query=ring", f"Host: {local}\r\nOrigin: http://evil.example\r\n") == 403
    assert get(url, "/v1/search?query=ring", f"Host: {local}\r\nOrigin: http://localhost:8501\r\n") == 200
    # the same rule for HTTP and MCP: a loopback name without its port is this machine, for both
    for path in ("/v1/search?query=ring", "/mcp"):
        assert get(url, path, "Host: 127.0.0.1\r\n") != 403, path


def test_errors_the_mcp_layer_answered_in_plain_text_are_json(hostile_api: tuple[MathRAG, str]) -> None:
    _, url = hostile_api
    head = f"POST /mcp HTTP/1.1\r\nHost: {url.removeprefix('http://')}\r\nContent-Type: text/plain\r\n"
    status, headers, body = raw(url, (head + "Content-Length: 2\r\nConnection: close\r\n\r\n{}").encode())
    assert status >= 400 and headers["content-type"] == "application/json"
    assert json.loads(body)["error"]["status"] == status


def test_a_client_that_never_finishes_gets_a_status_and_a_closed_socket(hostile_api: tuple[MathRAG, str]) -> None:
    """Issue 85: a half-sent request line stayed open past 35 s; a short body kept the server waiting."""
    _, url = hostile_api
    started = time.monotonic()
    status, headers, body = raw(url, b"GET /v1/search?query=ri")  # no end of line, no headers
    assert status == 408 and headers["content-type"] == "application/json"
    assert time.monotonic() - started < 5
    local = url.removeprefix("http://")
    short = f"POST /v1/search HTTP/1.1\r\nHost: {local}\r\nContent-Type: application/json\r\n"
    short += "Content-Length: 100\r\n\r\n"
    status, _, body = raw(url, short.encode() + b'{"query": "ri')
    assert status == 408 and "api.body_timeout_s" in json.loads(body)["error"]["reason"]
    assert raw(url, b"", wait_s=5)[0] == 0, "an idle connection is closed"
    huge = f"GET /v1/search?query=ring HTTP/1.1\r\nHost: {local}\r\nCookie: {'x' * 100_000}\r\n\r\n"
    status, headers, body = raw(url, huge.encode())
    assert status == 431 and "api.max_header_bytes" in json.loads(body)["error"]["reason"]


def test_idle_sockets_past_the_cap_cannot_shut_out_a_search(hostile_api: tuple[MathRAG, str]) -> None:
    """Issue 94: 300 sockets opened and left idle held the whole table (503 "64 connections are open already")
    for the header timeout, and for good when reopened. An idle one gives way to a new connection, and a socket
    that sends nothing is closed at its first-byte timeout."""
    _, url = hostile_api
    host, port = url.removeprefix("http://").split(":")
    idle = [socket.create_connection((host, int(port))) for _ in range(300)]  # 50 times the cap
    try:
        statuses = []
        for query in ("ring", "group", "field", "module", "prime"):
            request = f"GET /v1/search?query={query}&k=2 HTTP/1.1\r\nHost: {host}:{port}\r\nConnection: close\r\n\r\n"
            statuses.append(raw(url, request.encode())[0])
        assert statuses == [200] * 5
        time.sleep(LIMITS["first_byte_timeout_s"] + 0.5)
        for conn in idle:  # each was closed by the server: evicted, or at its first-byte timeout
            conn.settimeout(2)
            assert conn.recv(1) == b""
    finally:
        for conn in idle:
            conn.close()


def test_connections_past_the_cap_none_idle_are_answered_503_and_closed(hostile_api: tuple[MathRAG, str]) -> None:
    """Only where every open connection is at work on a request does one more get 503."""
    _, url = hostile_api
    host, port = url.removeprefix("http://").split(":")
    busy = [socket.create_connection((host, int(port))) for _ in range(LIMITS["max_connections"])]
    try:
        for conn in busy:
            conn.sendall(b"GET /v1/search?query=ri")  # a request begun: not idle (408 at the header timeout)
        time.sleep(0.1)
        status, _, body = raw(url, b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        assert status == 503 and "api.max_connections" in json.loads(body)["error"]["reason"]
    finally:
        for conn in busy:
            conn.close()
    time.sleep(0.5)
    assert raw(url, f"GET /healthz HTTP/1.1\r\nHost: {host}:{port}\r\nConnection: close\r\n\r\n".encode())[0] == 200


def test_an_unknown_http_version_is_505_and_an_unread_body_closes_the_connection(
    hostile_api: tuple[MathRAG, str],
) -> None:
    """Issue 94: ``HTTP/9.9`` was answered as HTTP/1.1 with 200; a 404 sent before a body lying high was all in
    left the connection waiting out the keep-alive and header timeouts (15 s by default)."""
    _, url = hostile_api
    local = url.removeprefix("http://")
    for version in ("HTTP/9.9", "HTTP/2.0", "HTTP/0.9"):
        status, headers, _ = raw(url, f"GET /healthz {version}\r\nHost: {local}\r\n\r\n".encode())
        assert status == 505 and headers["content-type"] == "application/json", version
    started = time.monotonic()
    short = f"POST /nowhere HTTP/1.1\r\nHost: {local}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n"
    status, _, _ = raw(url, short.encode() + b'{"query": "ri')
    assert status == 404 and time.monotonic() - started < LIMITS["keep_alive_s"]  # answered, then closed at once


def test_no_answer_shows_a_path_of_the_machine(hostile_api: tuple[MathRAG, str]) -> None:
    """Issue 85: MCP's get_statement named the index's directory; /v1/status returned its full path."""
    rag, url = hostile_api
    index = str(rag.settings.resolved_index_dir)
    status = httpx.get(f"{url}/v1/status", timeout=60)
    assert status.status_code == 200 and index not in status.text and status.json()["index"] == "<index>"

    async def session() -> str:
        async with Client(f"{url}/mcp") as client:
            missing = await client.call_tool("get_statement", {"id_or_label": "lem:nowhere"})
            assert missing.is_error
        # a lone surrogate cannot cross HTTP from the SDK's client (it encodes first): in process, a tool error
        async with Client(build_mcp_server(rag)) as client:
            unreadable = await client.call_tool("search_statements", {"query": "ring \ud800"})
            assert unreadable.is_error and "lone UTF-16 surrogate" in unreadable.content[0].text
            return missing.content[0].text

    text = anyio.run(session)
    assert "no statement has the id or label" in text and index not in text and "<index>" in text


def test_a_stream_left_while_the_model_writes_closes_the_models_stream_and_frees_the_turn(
    demo_index_dir: Path, tmp_path: Path
) -> None:
    """The client reads the model's first words and leaves while the model (a real server on loopback,
    writing a character every 0.3 s for 18 s) is still writing: the model's stream is closed at its next
    chunk and the next answer gets its turn at once, not when the model would have finished."""
    rag = MathRAG(make_settings(tmp_path, index_dir=demo_index_dir, answers={"style": "synthesis"}))
    reply = "By [1], the correspondence is a bijection. " + "It holds. " * 5
    slow = ScriptedLLMServer(model_alias="scripted", log_path=tmp_path / "llm.log", reply=reply, chunk_seconds=0.3)
    watched = WatchedServer(slow)
    rag.llm.watched = watched
    watched.start()
    question = {"question": "What does the Galois correspondence say?", "k": 3}
    stats = slow.base_url.removesuffix("/v1") + "/v1/stats"
    try:
        with serving(rag, **LIMITS) as url, httpx.Client(base_url=url, timeout=120) as client:
            with client.stream("POST", "/v1/ask/stream", json=question) as events:
                for line in events.iter_lines():
                    if line.startswith("event: text"):
                        break  # the model's first words are in: leave while it writes
            left = time.monotonic()
            while httpx.get(stats, timeout=10).json()["streams_cut"] < 1:
                assert time.monotonic() - left < 8, "the model's stream was not closed"
                time.sleep(0.2)
            with client.stream("POST", "/v1/ask/stream", json=question) as events:
                first = next(events.iter_lines())
            assert first == "event: sources" and time.monotonic() - left < 8, "the turn was not given back"
    finally:
        rag.close()
