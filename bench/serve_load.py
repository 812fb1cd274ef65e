"""Benchmark: `rag-app serve` under load, on loopback, bounded in time (issue 51).

Starts `rag-app serve` on a free loopback port over ``--index`` (default: the 17,780-statement
development index) and runs four phases against it:

0. **one client**: one client sending the user-shaped questions one after another for
   ``--one-client-seconds`` (30), once through httpx and once through the bare ``http.client``: its
   latency, and the server's own part of it (the ``Server-Timing`` header every response carries).
1. **search**: ``--search-clients`` (32) clients, each sending the next question of the user-shaped set
   (``eval/questions/user-questions.v1.jsonl``) to ``GET /v1/search`` as soon as the last came back, for
   ``--search-seconds`` (120). Latency percentiles, throughput, errors, and the server's RSS sampled every
   5 s: after the first minute, and at the end. Then the same load from wrk for ``--wrk-seconds`` (60), where
   wrk is installed (Debian's package): its clients cost next to nothing, so the 2 CPUs measure the server.
2. **ask**: ``--ask-clients`` (8) clients each sending one question to ``POST /v1/ask`` at once, while a
   probe calls ``/healthz`` every 0.25 s. Every request must end answered (200; 503 when the LLM is
   down) or refused with 429 and ``Retry-After``; none lost. The probe's latency says whether the server
   stays responsive while answers are written.
3. **bad requests**: the table of issue 51, each a 4xx with a reason, the server still up after.

    python bench/serve_load.py [--index DIR] [--one-client-seconds 30] [--search-clients 32]
        [--search-seconds 120] [--wrk-seconds 60] [--ask-clients 8]
        [--max-queued-asks 8] [--out bench/results]

Results: ``bench/results/serve_load.md`` and ``.json``.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import platform
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import httpx
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from floors import query_embedding_floor, ratio

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_INDEX = Path.home() / ".local/share/rag-app/eval/index/packaged-all-MiniLM-L6-v2-unicode-math"
QUESTIONS = ROOT / "eval/questions/user-questions.v1.jsonl"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def percentiles(values: list[float]) -> dict[str, float]:
    if not values:
        return {"p50_ms": float("nan"), "p95_ms": float("nan"), "max_ms": float("nan")}
    return {"p50_ms": round(float(np.percentile(values, 50)), 1), "p95_ms": round(float(np.percentile(values, 95)), 1),
            "max_ms": round(max(values), 1)}  # fmt: skip


def start_server(index: Path, port: int, env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    command = [str(Path(sys.executable).with_name("rag-app")), "serve", "--index", str(index), "--port", str(port)]
    process = subprocess.Popen(command, stdout=log.open("w"), stderr=subprocess.STDOUT, env=env)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"rag-app serve ended (exit {process.returncode}); see {log}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code == 200:
                return process
        except httpx.HTTPError:
            time.sleep(0.5)
    process.kill()
    raise RuntimeError(f"rag-app serve did not answer within 300 s; see {log}")


def wait_for_warm_up(log: Path, seconds: float = 300.0) -> None:
    """Until the server printed the end of its warm-up (``rag-app serve``: "warm-up: N statements ...")."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        text = log.read_text(errors="replace")
        if "warm-up:" in text or "warm-up failed" in text:
            return
        time.sleep(0.5)
    raise RuntimeError(f"the server's warm-up did not end within {seconds:.0f} s; see {log}")


def one_client_phase(url: str, headers: dict[str, str], seconds: float, questions: list[str]) -> dict[str, Any]:
    """One client asking again as soon as answered: its latency, and the part of it the server spent
    (``Server-Timing``); the rest is the connection and the client's own work. Measured twice: through
    httpx (the load phase's client) and through the standard library's bare ``http.client``."""
    host, port = url.removeprefix("http://").split(":")
    paths = ["/v1/search?" + urlencode({"query": query, "k": 10}) for query in questions]

    def through_httpx(path: str) -> tuple[int, str]:
        response = http_client.get(path)
        return response.status_code, response.headers.get("server-timing", "")

    def through_http_client(path: str) -> tuple[int, str]:
        bare.request("GET", path, headers=headers)
        answer = bare.getresponse()
        answer.read()
        return answer.status, answer.getheader("server-timing") or ""

    result: dict[str, Any] = {"seconds": seconds}
    with httpx.Client(base_url=url, headers=headers, timeout=60) as http_client:
        bare = http.client.HTTPConnection(host, int(port), timeout=60)
        for client_name, send in (("httpx", through_httpx), ("http.client", through_http_client)):
            client_ms: list[float] = []
            server_ms: list[float] = []
            stop = time.monotonic() + seconds
            while time.monotonic() < stop:
                path = paths[len(client_ms) % len(paths)]
                begun = time.perf_counter()
                status, timing = send(path)
                client_ms.append((time.perf_counter() - begun) * 1000)
                if status != 200:
                    raise RuntimeError(f"one client: {status} for {path}")
                server_ms.append(float(timing.split("dur=")[1]) if "dur=" in timing else float("nan"))
            result[client_name] = {
                "requests": len(client_ms),
                "per_second": round(len(client_ms) / seconds, 1),
                "client": percentiles(client_ms),
                "server": percentiles(server_ms),
            }
        bare.close()
    return result


def wrk_phase(url: str, token: str, clients: int, seconds: float, questions: list[str]) -> dict[str, Any] | None:
    """The search load again from wrk (C, two threads): closed-loop clients whose own cost is next to
    nothing, so that the 2 CPUs measure the server and not 32 Python client threads. None without wrk."""
    wrk = shutil.which("wrk")
    if wrk is None:
        return None
    paths = ["/v1/search?" + urlencode({"query": query, "k": 10}) for query in questions]
    script = "\n".join(
        [
            "local paths = {" + ",".join(json.dumps(path) for path in paths) + "}",
            "local position = 0",
            "request = function()",
            "  position = position + 1",
            f'  return wrk.format("GET", paths[(position % #paths) + 1], {{["Authorization"] = "Bearer {token}"}})',
            "end",
        ]
    )
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as handle:
        handle.write(script)
    command = [wrk, "-t2", f"-c{clients}", f"-d{seconds:g}s", "--timeout", "60s", "--latency", "-s", handle.name, url]
    try:
        output = subprocess.run(command, capture_output=True, text=True, timeout=seconds + 120, check=True).stdout
    finally:
        Path(handle.name).unlink()

    def milliseconds(text: str) -> float:
        number, unit = re.fullmatch(r"([\d.]+)(us|ms|s|m)", text).groups()  # type: ignore[union-attr]
        return round(float(number) * {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60000.0}[unit], 1)

    percent = {match[0]: milliseconds(match[1]) for match in re.findall(r"^\s+(\d+)%\s+(\S+)$", output, re.M)}
    requests = int(re.search(r"(\d+) requests in", output).group(1))  # type: ignore[union-attr]
    non_2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", output)
    socket = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", output)
    return {
        "clients": clients,
        "seconds": seconds,
        "requests": requests,
        "errors": (int(non_2xx.group(1)) if non_2xx else 0) + (sum(map(int, socket.groups())) if socket else 0),
        "per_second": round(float(re.search(r"Requests/sec:\s+([\d.]+)", output).group(1)), 1),  # type: ignore[union-attr]
        "p50_ms": percent.get("50"),
        "p90_ms": percent.get("90"),
        "p99_ms": percent.get("99"),
        "latency_distribution": [line.strip() for line in re.findall(r"^\s+\d+%.*$", output, re.M)],
    }


def search_phase(
    url: str, headers: dict[str, str], pid: int, clients: int, seconds: float, questions: list[str]
) -> dict[str, Any]:
    latencies: list[float] = []
    errors: list[str] = []
    lock = threading.Lock()
    stop = time.monotonic() + seconds
    rss: list[tuple[float, float]] = []
    started = time.monotonic()

    def client(number: int) -> None:
        with httpx.Client(base_url=url, headers=headers, timeout=60) as http:
            position = number
            while time.monotonic() < stop:
                query = questions[position % len(questions)]
                position += clients
                begun = time.perf_counter()
                try:
                    response = http.get("/v1/search", params={"query": query, "k": 10})
                    ok = response.status_code == 200
                    detail = f"{response.status_code} {response.text[:120]}"
                except httpx.HTTPError as error:
                    ok, detail = False, f"{type(error).__name__}: {error}"
                elapsed = (time.perf_counter() - begun) * 1000
                with lock:
                    (latencies.append(elapsed) if ok else errors.append(detail))

    def sampler() -> None:
        while time.monotonic() < stop:
            rss.append((time.monotonic() - started, rss_mb(pid)))
            time.sleep(5)

    threads = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
    watcher = threading.Thread(target=sampler)
    for thread in [*threads, watcher]:
        thread.start()
    for thread in [*threads, watcher]:
        thread.join()
    rss.append((time.monotonic() - started, rss_mb(pid)))
    after_minute = next((mb for at, mb in rss if at >= 60), rss[-1][1])
    return {
        "clients": clients,
        "seconds": seconds,
        "requests": len(latencies) + len(errors),
        "errors": len(errors),
        "error_examples": errors[:5],
        "per_second": round(len(latencies) / seconds, 1),
        **percentiles(latencies),
        "rss_mb_start": round(rss[0][1], 1),
        "rss_mb_after_first_minute": round(after_minute, 1),
        "rss_mb_end": round(rss[-1][1], 1),
        "rss_growth_after_first_minute": round(rss[-1][1] / after_minute - 1, 4),
    }


def ask_phase(url: str, headers: dict[str, str], clients: int, questions: list[str]) -> dict[str, Any]:
    outcomes: list[dict[str, Any]] = []
    probes: list[float] = []
    probe_failures: list[str] = []
    done = threading.Event()

    def client(number: int) -> None:
        begun = time.perf_counter()
        try:
            question = {"question": questions[number]}
            response = httpx.post(f"{url}/v1/ask", json=question, headers=headers, timeout=1800)
            outcome = {"status": response.status_code, "retry_after": response.headers.get("retry-after"),
                       "answered": response.status_code == 200 and bool(response.json().get("sources"))}  # fmt: skip
        except httpx.HTTPError as error:
            outcome = {"status": None, "error": f"{type(error).__name__}: {error}"}
        outcome["ms"] = round((time.perf_counter() - begun) * 1000)
        outcomes.append(outcome)

    def probe() -> None:
        with httpx.Client(base_url=url, timeout=10) as http:
            while not done.is_set():
                begun = time.perf_counter()
                try:
                    ok = http.get("/healthz").status_code == 200
                except httpx.HTTPError as error:
                    ok = False
                    probe_failures.append(str(error))
                if ok:
                    probes.append((time.perf_counter() - begun) * 1000)
                time.sleep(0.25)

    prober = threading.Thread(target=probe)
    prober.start()
    threads = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    done.set()
    prober.join()
    statuses = [o.get("status") for o in outcomes]
    return {
        "clients": clients,
        "answered_200": statuses.count(200),
        "llm_down_503": statuses.count(503),
        "refused_429": statuses.count(429),
        "refused_429_with_retry_after": sum(1 for o in outcomes if o.get("status") == 429 and o.get("retry_after")),
        "lost": clients - len(outcomes) + sum(1 for o in outcomes if o.get("status") not in (200, 503, 429)),
        "answer_ms": percentiles([o["ms"] for o in outcomes if o.get("status") == 200]),
        "healthz": {**percentiles(probes), "probes": len(probes), "failures": len(probe_failures)},
    }


JSON = {"content-type": "application/json"}
BAD_REQUESTS = [
    ("a 2 MB query (POST body)", "POST", "/v1/search", {"json": {"query": "x" * 2_000_000}}),
    ("a 2 MB query (GET URL)", "RAW", "/v1/search?query=" + "x" * 2_000_000, {}),
    ("k=-1", "GET", "/v1/search", {"params": {"query": "ring", "k": -1}}),
    ("k=10^9", "GET", "/v1/search", {"params": {"query": "ring", "k": 10**9}}),
    ("an unknown mode", "GET", "/v1/search", {"params": {"query": "ring", "mode": "telepathy"}}),
    ("malformed JSON", "POST", "/v1/search", {"content": b'{"query": ', "headers": JSON}),
    ("a wrong token", "GET", "/v1/search", {"params": {"query": "ring"}, "headers": {"Authorization": "Bearer wrong"}}),
    ("a path traversal in /v1/statements/", "GET", "/v1/statements/..%2F..%2F..%2Fetc%2Fpasswd", {}),
]  # fmt: skip


def raw_get(url: str, path: str, headers: dict[str, str]) -> dict[str, Any]:
    """A GET of ``path`` written on a socket; the status and the reason (or the body's start)."""
    host, port = url.removeprefix("http://").split(":")
    lines = [f"GET {path} HTTP/1.1", f"Host: {host}:{port}", *(f"{k}: {v}" for k, v in headers.items()),
             "Connection: close", "", ""]  # fmt: skip
    try:
        with socket.create_connection((host, int(port)), timeout=60) as connection:
            connection.sendall("\r\n".join(lines).encode())
            reply = b""
            while chunk := connection.recv(65536):
                reply += chunk
    except OSError as error:
        return {"status": None, "reason": f"connection: {error}"}
    head, _, body = reply.partition(b"\r\n\r\n")
    status_line = head.split(b"\r\n", 1)[0].decode(errors="replace")
    status = int(status_line.split()[1]) if len(status_line.split()) > 1 else None
    try:
        reason = json.loads(body)["error"]["reason"]
    except (ValueError, KeyError, TypeError):
        reason = f"(not JSON) {body[:100]!r}"
    return {"status": status, "reason": reason[:160]}


def bad_request_phase(url: str, headers: dict[str, str]) -> list[dict[str, Any]]:
    rows = []
    with httpx.Client(base_url=url, headers=headers, timeout=60) as http:
        for name, method, path, kwargs in BAD_REQUESTS:
            if method == "RAW":  # httpx refuses a URL over 64 KiB: sent by hand
                rows.append({"request": name, **raw_get(url, path, headers)})
                continue
            try:
                response = http.request(method, path, **kwargs)
                try:
                    reason = response.json()["error"]["reason"]
                except (ValueError, KeyError, TypeError):
                    reason = f"(not JSON) {response.text[:100]!r}"
                rows.append({"request": name, "status": response.status_code, "reason": reason[:160]})
            except httpx.HTTPError as error:
                rows.append({"request": name, "status": None, "reason": f"{type(error).__name__}: {error}"})
        rows.append({"request": "then /healthz", "status": http.get("/healthz").status_code, "reason": ""})
    return rows


def embedding_floor(index: Path, questions: list[str]) -> dict[str, float]:
    """The questions' embedding alone, as the server's searches embed them (bench/floors.py)."""
    from rag_app import MathRAG, Settings

    rag = MathRAG(Settings(index_dir=index, data_dir=index.parent / "data"))
    return query_embedding_floor(rag.index.embedder, questions)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--index", type=Path, default=DEFAULT_INDEX)
    parser.add_argument("--one-client-seconds", type=float, default=30.0)
    parser.add_argument("--search-clients", type=int, default=32)
    parser.add_argument("--search-seconds", type=float, default=120.0)
    parser.add_argument("--wrk-seconds", type=float, default=60.0, help="the search load from wrk, where installed")
    parser.add_argument("--ask-clients", type=int, default=8)
    parser.add_argument("--max-queued-asks", type=int, default=8, help="api.max_queued_asks for the run")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    parser.add_argument(
        "--max-concurrent-searches", type=int, default=None, help="api.max_concurrent_searches for the run"
    )
    args = parser.parse_args()
    questions = [json.loads(line)["query"] for line in QUESTIONS.read_text().splitlines()[1:] if line.strip()]
    floor = embedding_floor(args.index, questions)  # before the server starts: this process alone on the CPUs
    port = free_port()
    token = "bench-token"  # every request carries it but the bad-request table's wrong one
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "ANONYMIZED_TELEMETRY": "False", "RAG_APP_API__TOKEN": token,
           "RAG_APP_API__MAX_QUEUED_ASKS": str(args.max_queued_asks)}  # fmt: skip
    if args.max_concurrent_searches:
        env["RAG_APP_API__MAX_CONCURRENT_SEARCHES"] = str(args.max_concurrent_searches)
    args.out.mkdir(parents=True, exist_ok=True)
    log = Path(tempfile.mkdtemp(prefix="serve-load-")) / "server.log"  # read when the server fails
    server = start_server(args.index, port, env, log)
    url = f"http://127.0.0.1:{port}"
    headers = {"Authorization": f"Bearer {token}"}
    try:
        # the first search loads the models (seconds): not part of a load the server is under for hours
        httpx.get(f"{url}/v1/search", params={"query": "warm up", "k": 10}, headers=headers, timeout=300)
        wait_for_warm_up(log)  # a server under load for hours is past its warm-up (api.warm_up)
        one = one_client_phase(url, headers, args.one_client_seconds, questions)
        search = search_phase(url, headers, server.pid, args.search_clients, args.search_seconds, questions)
        by_wrk = wrk_phase(url, token, args.search_clients, args.wrk_seconds, questions)
        ask = ask_phase(url, headers, args.ask_clients, questions)
        bad = bad_request_phase(url, headers)
    finally:
        server.terminate()
        server.wait(30)
    result = {
        "machine": f"{platform.platform()}, {os.cpu_count()} CPUs",
        "index": str(args.index),
        "max_concurrent_searches": args.max_concurrent_searches or "default",
        "query_embedding_floor": floor,
        # throughput against the floor: searches/s as a share of what one core embeds per second (1000 / p50)
        "search_per_embedding_rate": ratio(search["per_second"], 1000 / floor["p50_ms"]),
        "one_client_p50_x_embedding": ratio(one["httpx"]["client"]["p50_ms"], floor["p50_ms"]),
        "one_client": one,
        "search": search,
        "search_by_wrk": by_wrk,
        "ask": ask,
        "bad_requests": bad,
    }
    (args.out / "serve_load.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    lines = [
        "# `rag-app serve` under load (loopback)",
        "",
        f"Command: `python bench/serve_load.py --one-client-seconds {args.one_client_seconds:g} "
        f"--search-clients {args.search_clients} --search-seconds {args.search_seconds:g} --wrk-seconds "
        f"{args.wrk_seconds:g} --ask-clients {args.ask_clients} --max-queued-asks {args.max_queued_asks}`",
        "",
        f"- machine: {result['machine']}; index: `{args.index}`; api.max_concurrent_searches: "
        f"{result['max_concurrent_searches']}",
        f"- floor, measured in this run before the server started: the questions' embedding alone, p50 "
        f"{floor['p50_ms']} ms (one core embeds {1000 / floor['p50_ms']:.0f} queries/s). One client's search p50 = "
        f"**{result['one_client_p50_x_embedding']}x** that embedding; 32 clients' searches/s = "
        f"**{result['search_per_embedding_rate']}x** one core's embeddings/s.",
        "",
        "| one client | seconds | requests | per second | p50 ms | p95 ms | server's own p50 ms "
        "| server's own p95 ms |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
        *(
            f"| {name} | {one['seconds']:g} | {one[name]['requests']} | {one[name]['per_second']} | "
            f"{one[name]['client']['p50_ms']} | {one[name]['client']['p95_ms']} | {one[name]['server']['p50_ms']} | "
            f"{one[name]['server']['p95_ms']} |"
            for name in ("httpx", "http.client")
        ),
        "",
        "| search clients | seconds | requests | errors | per second | p50 ms | p95 ms | max ms "
        "| RSS MB after 1 min | RSS MB at end | growth |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
        f"| {search['clients']} | {search['seconds']:g} | {search['requests']} | {search['errors']} | "
        f"{search['per_second']} | {search['p50_ms']} | {search['p95_ms']} | {search['max_ms']} | "
        f"{search['rss_mb_after_first_minute']} | {search['rss_mb_end']} | "
        f"{100 * search['rss_growth_after_first_minute']:+.1f}% |",
        "",
        *(
            [
                "The same load from wrk (C; its clients cost next to nothing beside the server): "
                f"{by_wrk['clients']} connections, {by_wrk['seconds']:g} s, {by_wrk['requests']} requests, "
                f"{by_wrk['errors']} errors, **{by_wrk['per_second']} searches/s**, p50 {by_wrk['p50_ms']} ms, "
                f"p90 {by_wrk['p90_ms']} ms, p99 {by_wrk['p99_ms']} ms.",
                "",
            ]
            if by_wrk
            else ["(wrk is not installed: no load from it.)", ""]
        ),
        "| ask clients | answered (200) | LLM down (503) | refused (429) | 429 with Retry-After | lost "
        "| answer p50 / max ms | /healthz p50 / p95 / max ms (probes) |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | --- | --- |",
        f"| {ask['clients']} | {ask['answered_200']} | {ask['llm_down_503']} | {ask['refused_429']} | "
        f"{ask['refused_429_with_retry_after']} | {ask['lost']} | {ask['answer_ms']['p50_ms']} / "
        f"{ask['answer_ms']['max_ms']} | {ask['healthz']['p50_ms']} / {ask['healthz']['p95_ms']} / "
        f"{ask['healthz']['max_ms']} ({ask['healthz']['probes']}, {ask['healthz']['failures']} failed) |",
        "",
        "| bad request | status | reason |",
        "| --- | ---: | --- |",
        *(f"| {row['request']} | {row['status']} | {row['reason']} |" for row in bad),
    ]
    (args.out / "serve_load.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
