"""Probe: `rag-app serve` against a hostile set of requests from loopback (issue 85), with the counts.

Starts `rag-app serve` on the given index (default: the demo corpus, indexed into a temporary directory
first) and sends: text no encoder can read (lone surrogates as raw bytes and as JSON escapes, NUL,
a CESU-8 surrogate pair) to every search route, the ask and the stream; Host headers that only look local,
two Host headers, absolute-form targets, a foreign Origin; malformed HTTP; unknown ids; then slow and
abandoned clients (half-sent request lines, bodies shorter than their Content-Length, idle connections,
16 MB headers) and 32 concurrent clients. It prints and writes:

- responses with status 5xx, responses holding a traceback, responses naming a path of the machine;
- foreign Host (or Origin, or target) accepted: a 2xx to a request that does not name this machine;
- connections held past their limit (open 2 s after the longer of ``api.header_timeout_s`` and
  ``api.body_timeout_s``), the server's open files and memory (RSS): at its start, once the searches loaded
  the models, with the slow clients connected, and after they left.

    python bench/hostile_probe.py [--index DIR] [--name NAME]

Summaries go to ``bench/results/hostile_probe*.md`` and ``.json``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "bench/results"
# api.header_timeout_s and api.body_timeout_s's defaults: "held past its limit" is measured past the longer
LIMIT_S = 30.0


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def exchange(port: int, request: bytes, wait_s: float = 15.0) -> tuple[int, bytes]:
    """``request`` sent as it is on a fresh connection; the status and the whole answer (0: none)."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=wait_s) as conn:
            conn.sendall(request)
            data = b""
            while chunk := conn.recv(65536):
                data += chunk
    except (TimeoutError, ConnectionError, OSError):
        data = data if "data" in locals() else b""
    if not data.startswith(b"HTTP/"):
        return 0, data
    return int(data.split(b" ", 2)[1]), data


def request(method: str, target: str, host: str, body: bytes = b"", extra: str = "") -> bytes:
    head = f"{method} {target} HTTP/1.1\r\nHost: {host}\r\n{extra}Connection: close\r\n"
    if body or method == "POST":
        head += f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
    return head.encode() + b"\r\n" + body


def hostile_set(port: int) -> list[tuple[str, bytes, bool]]:
    """(name, request, names this machine) for each request of the set."""
    local = f"127.0.0.1:{port}"
    texts = [b"group \xed\xa0\x80", b"group \\ud800", b"group \\u0000 ring", b"x \xed\xa0\xbd\xed\xb8\x80",
             b"\\udfff\\ud800", b"\\\\frac{" * 500]  # fmt: skip
    cases: list[tuple[str, bytes, bool]] = []
    for text in texts:
        readable = b"\\u0000" not in text and (b"\xbd" in text or b"frac" in text)
        for path, field in (("/v1/search", "query"), ("/v1/papers", "query"), ("/v1/formula", "formula"),
                            ("/v1/ask", "question"), ("/v1/ask/stream", "question")):  # fmt: skip
            if readable and "ask" in path:  # a readable question would run the model: minutes, not the point
                continue
            cases.append((f"text {path}", request("POST", path, local, b'{"' + field.encode() + b'": "' + text + b'"}'),
                          True))  # fmt: skip
        body = b'{"query": "' + text + b'", "mode": "formula"}'
        cases.append(("text mode=formula", request("POST", "/v1/search", local, body), True))
        cases.append(("text mode=bm25", request("POST", "/v1/search", local, body.replace(b"formula", b"bm25")), True))
    foreign = ["evil.example", f"evil.example:{port}", "[::1].evil.example", f"127.0.0.1:{port}, evil.example",
               "127.0.0.1:80@evil.example", f"localhost:{port}.evil.example", "127.0.0.1:1", ""]  # fmt: skip
    for host in foreign:
        for path in ("/v1/search?query=ring", "/v1/status", "/mcp"):
            cases.append(("foreign host", request("GET", path, host), False))
    cases.append(
        ("two hosts", request("GET", "/v1/search?query=ring", "evil.example", extra=f"Host: {local}\r\n"), False)
    )
    cases.append(("absolute target", request("GET", "http://evil.example/v1/search?query=ring", local), False))
    cases.append(("absolute target /mcp", request("GET", "http://evil.example/mcp", local), False))
    cases.append(
        ("origin", request("GET", "/v1/search?query=ring", local, extra="Origin: http://evil.example\r\n"), False)
    )
    cases.append(("mcp content type", request("POST", "/mcp", local, b"{}").replace(b"application/json", b"text/plain"),
                  True))  # fmt: skip
    for target in ("/v1/statements/..%2F..%2Fetc%2Fpasswd", "/v1/statements/nowhere%23lem", "/v1/statements/%ED%A0%80"):
        cases.append(("id", request("GET", target, local), True))
    malformed = [
        b"GET /" + b"a" * 1_000_000 + b" HTTP/1.1\r\nHost: " + local.encode() + b"\r\n\r\n",
        request("POST", "/v1/search", local, b"{}").replace(b"Content-Length: 2", b"Content-Length: -1"),
        request("POST", "/v1/search", local, b"{}", extra="Transfer-Encoding: chunked\r\n"),
        b"GET /v1/status HTTP/1.1\r\nHost: " + local.encode() + b"\r\nX-A: a\x00b\r\n\r\n",
        b"GET /v1/status HTTP/1.1\r\nHost: " + local.encode() + b"\r\nCookie: " + b"c" * 8_000_000 + b"\r\n\r\n",
    ]
    cases += [("malformed", raw, True) for raw in malformed]
    return cases


def server_stats(pid: int) -> tuple[int, float]:
    """The server's open files and resident memory (MB), from /proc."""
    files = len(os.listdir(f"/proc/{pid}/fd"))
    rss_kb = next(int(line.split()[1]) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
                  if line.startswith("VmRSS"))  # fmt: skip
    return files, rss_kb / 1024


def slow_clients(port: int) -> list[socket.socket]:
    """Clients that never finish: half request lines, short bodies, idle connections, big unfinished headers."""
    held = []
    local = f"127.0.0.1:{port}"
    for _ in range(40):
        conn = socket.create_connection(("127.0.0.1", port))
        conn.sendall(b"GET /v1/search?query=ri")
        held.append(conn)
    for _ in range(20):
        conn = socket.create_connection(("127.0.0.1", port))
        conn.sendall(request("POST", "/v1/search", local, b'{"query": "ri').replace(b"Length: 13", b"Length: 900"))
        held.append(conn)
    for _ in range(200):
        held.append(socket.create_connection(("127.0.0.1", port)))
    for _ in range(4):
        conn = socket.create_connection(("127.0.0.1", port))
        with contextlib.suppress(OSError):
            conn.sendall(b"GET /v1/status HTTP/1.1\r\nHost: " + local.encode() + b"\r\nCookie: " + b"c" * 16_000_000)
        held.append(conn)
    return held


def still_open(conn: socket.socket) -> bool:
    """Whether the server still holds ``conn`` open: no end of stream after what it sent (a 408, say)."""
    conn.setblocking(False)
    try:
        while chunk := conn.recv(65536):
            del chunk
        return False  # the end of the stream: the server closed it
    except BlockingIOError:
        return True
    except OSError:
        return False


def probe(port: int, pid: int, index: str) -> dict[str, Any]:
    files_start, rss_start = server_stats(pid)
    answers: list[tuple[str, int, bytes, bool]] = []
    for name, raw, local in hostile_set(port):
        status, data = exchange(port, raw)
        answers.append((name, status, data, local))
    with ThreadPoolExecutor(32) as pool:  # 32 concurrent clients
        concurrent = list(pool.map(lambda _: exchange(port, request("GET", "/v1/search?query=compact+space",
                                                                    f"127.0.0.1:{port}")), range(64)))  # fmt: skip
    answers += [("concurrent", status, data, True) for status, data in concurrent]
    files_warm, rss_warm = server_stats(pid)  # the models loaded by the searches above: the slow clients' start
    held = slow_clients(port)
    time.sleep(1)
    files_held, rss_held = server_stats(pid)
    time.sleep(LIMIT_S + 2)
    past_limit = sum(still_open(conn) for conn in held)
    for conn in held:
        conn.close()
    time.sleep(2)
    files_end, rss_end = server_stats(pid)
    # Issue 94: 300 sockets opened and left idle beside real searches (they held the table: 503 for all)
    local = f"127.0.0.1:{port}"
    idle = [socket.create_connection(("127.0.0.1", port)) for _ in range(300)]
    searched = [exchange(port, request("GET", f"/v1/search?query=ring+{n}&k=3", local))[0] for n in range(20)]
    for conn in idle:
        conn.close()
    version_status = exchange(port, b"GET /healthz HTTP/9.9\r\nHost: " + local.encode() + b"\r\n\r\n")[0]
    home = str(Path.home())
    statuses = Counter(status for _, status, _, _ in answers)
    return {
        "requests": len(answers),
        "statuses": {str(k): v for k, v in sorted(statuses.items())},
        "5xx": [name for name, status, _, _ in answers if status >= 500 and name != "concurrent"]
        + [name for name, status, _, _ in answers if name == "concurrent" and status >= 500],
        "tracebacks": sum(b"Traceback" in data for _, _, data, _ in answers),
        "paths_in_answers": sum(index.encode() in data or home.encode() in data for _, _, data, _ in answers),
        "foreign_accepted": [name for name, status, _, local in answers if not local and 200 <= status < 300],
        "plain_text_errors": sum(
            1 for _, status, data, _ in answers if status >= 400 and b"content-type: text/plain" in data.lower()[:2000]
        ),
        "slow_clients": len(held),
        "held_past_limit": past_limit,
        "open_files": [files_start, files_warm, files_held, files_end],
        "rss_mb": [round(rss_start, 1), round(rss_warm, 1), round(rss_held, 1), round(rss_end, 1)],
        "searches_beside_300_idle": {
            "ok": sum(status == 200 for status in searched),
            "of": len(searched),
            "statuses": dict(Counter(map(str, searched))),
        },
        "unknown_http_version_status": version_status,
    }


def markdown(result: dict[str, Any], meta: dict[str, Any]) -> str:
    return "\n".join([
        f"# Hostile clients against `rag-app serve` ({meta['name'] or 'this tree'})",
        "",
        f"{meta['machine']}; {meta['date']}; {result['requests']} requests and {result['slow_clients']} slow clients."
        f" Regenerate: `{meta['command']}`.",
        "",
        "| count | value |",
        "| --- | ---: |",
        f"| responses 5xx | {len(result['5xx'])} |",
        f"| responses with a traceback | {result['tracebacks']} |",
        f"| responses naming a path of the machine | {result['paths_in_answers']} |",
        f"| foreign Host, Origin or target accepted (2xx) | {len(result['foreign_accepted'])} |",
        f"| errors in plain text (the server's own 400 for unparseable HTTP) | {result['plain_text_errors']} |",
        f"| slow clients still connected {LIMIT_S + 2:g} s later | {result['held_past_limit']} |",
        f"| open files: start, models loaded, slow clients in, gone | {' / '.join(map(str, result['open_files']))} |",
        f"| memory (RSS, MB): the same four moments | {' / '.join(map(str, result['rss_mb']))} |",
        f"| searches answered 200 beside 300 idle sockets (issue 94) | {result['searches_beside_300_idle']['ok']} of "
        f"{result['searches_beside_300_idle']['of']} |",
        f"| a request line with HTTP/9.9 answered (issue 94: 505) | {result['unknown_http_version_status']} |",
        "",
        f"Statuses: {result['statuses']}. 5xx: {result['5xx'][:10]}.",
        f"Foreign accepted: {result['foreign_accepted'][:10]}.",
        "",
    ])  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--index", type=Path, help="the index to serve (default: the demo corpus, indexed first)")
    parser.add_argument("--name", default="", help="a name for the results")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as work:
        env = {**os.environ, "RAG_APP_DATA_DIR": str(Path(work) / "data"), "RAG_APP_API__WARM_UP": "false",
               "PYTHONPATH": str(ROOT)}  # fmt: skip
        index = args.index or Path(work) / "index"
        if args.index is None:
            subprocess.run([sys.executable, "-m", "rag_app.cli", "ingest", "--demo", "--index", str(index)], env=env,
                           check=True, capture_output=True)  # fmt: skip
        port = free_port()
        command = [sys.executable, "-m", "rag_app.cli", "serve", "--port", str(port), "--index", str(index)]
        serve = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            ends = time.monotonic() + 180
            while exchange(port, request("GET", "/healthz", f"127.0.0.1:{port}"), 2)[0] != 200:
                if serve.poll() is not None or time.monotonic() > ends:
                    raise SystemExit("serve did not start")
                time.sleep(0.5)
            result = probe(port, serve.pid, str(index))
        finally:
            serve.terminate()
            serve.wait(30)
    meta = {
        "name": args.name,
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs",
        "date": time.strftime("%Y-%m-%d"),
        "command": " ".join(["python bench/hostile_probe.py", *sys.argv[1:]]),
    }
    suffix = f"-{args.name}" if args.name else ""
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"hostile_probe{suffix}.json").write_text(json.dumps({**meta, **result}, indent=1) + "\n")
    (args.out / f"hostile_probe{suffix}.md").write_text(markdown(result, meta))
    print(markdown(result, meta))


if __name__ == "__main__":
    main()
