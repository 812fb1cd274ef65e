"""Benchmark: `rag-app serve` under faults, each bounded in time (issue 61).

The HTTP app (the same `create_app` `rag-app serve` runs) on uvicorn on loopback, over ``--index`` (default:
the development index), with an LLM server that answers at once (tests/scripted_llm_server.py), one that
never answers, or none. Each scenario ends by waiting for the server to settle, then records what issue 61
asks of it: slots still held (``/healthz``: answers running and waiting, search threads running), threads
left over against the count before, the process's RSS, and ``/healthz``'s latency.

1. streams left by their clients during retrieval; 2. streams left mid-answer; 3. an LLM that never answers
(the answer's deadline); 4. no LLM at all; 5. searches past their time limit; 6. ``--clients`` clients
mixing searches and answers for ``--seconds``. The floor, measured in the same run after the warm-up
(bench/floors.py): a query's embedding alone; the latencies are also given as ratios to it.

    python bench/serve_faults.py [--index DIR] [--clients 32] [--seconds 120] [--out bench/results]

Results: ``bench/results/serve_faults.{md,json}``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import resource
import socket
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx
import uvicorn
from floors import query_embedding_floor, ratio

from rag_app import MathRAG, Settings
from rag_app.api.http_app import create_app
from rag_app.api.warm_up import warm_up
from rag_app.evaluation.runner import eval_index_dir
from rag_app.settings import ApiSettings
from tests.llm_servers import HangingServer, ScriptedLLMServer

QUESTIONS = ["Is every bounded entire function constant?", "When is a finitely generated module zero?",
             "flat base change cohomology", "characterize closed immersions", "Sylow subgroups exist",
             "a compact subset of a Hausdorff space is closed"]  # fmt: skip


@dataclass
class Outcome:
    scenario: str
    requests: int
    statuses: dict[str, int]
    settled_s: float  # until no answer runs or waits and no search thread runs
    slots_held_after: int
    threads_left_over: int
    rss_mb_before: float
    rss_mb_after: float
    healthz_p50_ms: float
    healthz_max_ms: float
    notes: str = ""
    extra: dict[str, float] = field(default_factory=dict)


def rss_mb() -> float:
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * resource.getpagesize() / 2**20


@contextmanager
def serving(rag: MathRAG, **limits: object) -> Iterator[str]:
    settings = ApiSettings.model_validate(rag.settings.api.model_dump() | limits)
    server = uvicorn.Server(uvicorn.Config(create_app(rag, settings), host="127.0.0.1", port=0, log_level="error"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the server did not start within 60 s")
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{server.servers[0].sockets[0].getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(30)


class HealthProbe:
    """``/healthz`` every 0.25 s while a scenario runs: its latency says whether the server stays responsive."""

    def __init__(self, url: str) -> None:
        self.url, self.latencies_ms, self._stop = url, [], threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        with httpx.Client(base_url=self.url, timeout=10) as client:
            while not self._stop.wait(0.25):
                started = time.perf_counter()
                client.get("/healthz")
                self.latencies_ms.append((time.perf_counter() - started) * 1000)

    def stop(self) -> list[float]:
        self._stop.set()
        self._thread.join(15)
        return self.latencies_ms or [0.0]


def settle(url: str, limit_s: float = 120) -> tuple[float, int]:
    """Seconds until nothing runs or waits (at most ``limit_s``), and the slots still held then."""
    started = time.monotonic()
    with httpx.Client(base_url=url, timeout=10) as client:
        while True:
            health = client.get("/healthz").json()
            held = health["asks_running"] + health["asks_waiting"] + health["searches_running"]
            if held == 0 or time.monotonic() - started > limit_s:
                return round(time.monotonic() - started, 2), held
            time.sleep(0.1)


def scenario(name: str, rag: MathRAG, run: Callable[[str], tuple[dict[str, int], str]], **limits: object) -> Outcome:
    threads_before, rss_before = threading.active_count(), rss_mb()
    with serving(rag, **limits) as url:
        probe = HealthProbe(url)
        statuses, notes = run(url)
        settled_s, held = settle(url)
        latencies = probe.stop()
    time.sleep(1.0)
    outcome = Outcome(
        name, sum(statuses.values()), statuses, settled_s, held, threading.active_count() - threads_before,
        round(rss_before, 1), round(rss_mb(), 1), round(statistics.median(latencies), 1), round(max(latencies), 1),
        notes,
    )  # fmt: skip
    print(json.dumps(asdict(outcome)), flush=True)
    return outcome


def _count(statuses: dict[str, int], key: object) -> None:
    statuses[str(key)] = statuses.get(str(key), 0) + 1


def streams_left(during: str) -> Callable[[str], tuple[dict[str, int], str]]:
    def run(url: str) -> tuple[dict[str, int], str]:
        statuses: dict[str, int] = {}
        for question in QUESTIONS[:3]:
            if during == "during retrieval":  # the request sent, the connection closed before any reply
                _leave_before_the_reply(url, "/v1/ask/stream", {"question": question}, after_s=0.2)
                _count(statuses, "left")
                continue
            client = httpx.Client(base_url=url, timeout=60)
            with client, client.stream("POST", "/v1/ask/stream", json={"question": question}) as response:
                _count(statuses, response.status_code)
                next(response.iter_lines())  # the sources came; then the client leaves
        return statuses, f"left {during}"

    return run


def _leave_before_the_reply(url: str, path: str, body: dict[str, str], after_s: float) -> None:
    host, port = url.removeprefix("http://").split(":")
    payload = json.dumps(body).encode()
    request = (f"POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
               f"Content-Length: {len(payload)}\r\n\r\n").encode() + payload  # fmt: skip
    with socket.create_connection((host, int(port))) as connection:
        connection.sendall(request)
        time.sleep(after_s)


def asks(count: int) -> Callable[[str], tuple[dict[str, int], str]]:
    def run(url: str) -> tuple[dict[str, int], str]:
        statuses: dict[str, int] = {}
        started = time.monotonic()

        def one(question: str) -> None:
            try:
                _count(statuses, httpx.post(f"{url}/v1/ask", json={"question": question}, timeout=120).status_code)
            except httpx.HTTPError as error:
                _count(statuses, type(error).__name__)

        workers = [threading.Thread(target=one, args=(QUESTIONS[i % len(QUESTIONS)],)) for i in range(count)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        return statuses, f"all answered in {time.monotonic() - started:.1f} s"

    return run


def searches_past_their_limit(url: str) -> tuple[dict[str, int], str]:
    statuses: dict[str, int] = {}

    def one(question: str) -> None:
        _count(statuses, httpx.get(f"{url}/v1/search", params={"query": question, "k": 50}, timeout=60).status_code)

    workers = [threading.Thread(target=one, args=(QUESTIONS[i % len(QUESTIONS)],)) for i in range(16)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return statuses, "16 searches at once, search_timeout_s 0.05"


def mixed(clients: int, seconds: float, floor_ms: float) -> Callable[[str], tuple[dict[str, int], str]]:
    def run(url: str) -> tuple[dict[str, int], str]:
        statuses: dict[str, int] = {}
        latencies: list[float] = []
        deadline = time.monotonic() + seconds

        def client_loop(seed: int) -> None:
            rng = random.Random(seed)
            with httpx.Client(base_url=url, timeout=120) as client:
                while time.monotonic() < deadline:
                    question = rng.choice(QUESTIONS)
                    started = time.perf_counter()
                    try:
                        if rng.random() < 0.1:  # one request in ten asks for an answer
                            status = client.post("/v1/ask", json={"question": question}).status_code
                        else:
                            status = client.get("/v1/search", params={"query": question}).status_code
                            latencies.append((time.perf_counter() - started) * 1000)
                    except httpx.HTTPError as error:
                        status = type(error).__name__
                    _count(statuses, status)

        workers = [threading.Thread(target=client_loop, args=(seed,)) for seed in range(clients)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        quantiles = statistics.quantiles(latencies, n=100) if len(latencies) > 1 else [0.0] * 99
        return statuses, (f"{clients} clients for {seconds:g} s: {len(latencies) / seconds:.1f} searches/s, "
                          f"search p50 {quantiles[49]:.0f} ms ({ratio(quantiles[49], floor_ms)}x the floor), "
                          f"p95 {quantiles[94]:.0f} ms")  # fmt: skip

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", type=Path, default=None)
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--seconds", type=float, default=120.0)
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results")
    args = parser.parse_args()

    base = Settings()
    index = args.index or eval_index_dir(base)
    outcomes: list[Outcome] = []
    with tempfile.TemporaryDirectory(prefix="serve-faults-") as tmp:
        scripted = ScriptedLLMServer(model_alias="scripted-model", startup_timeout_s=60, log_path=Path(tmp) / "llm.log")
        scripted.start()
        hanging = HangingServer()
        try:

            def rag_with(url: str, **llm: object) -> MathRAG:
                settings = Settings(data_dir=Path(tmp) / "data", index_dir=index)
                settings.llm.base_url, settings.llm.model, settings.llm.retries = url, "scripted-model", 0
                for key, value in llm.items():
                    setattr(settings.llm, key, value)
                settings.answers.quote.ranker_sure_margin = 1e9  # every answer asks the model
                return MathRAG(settings)

            fast = rag_with(scripted.base_url)
            warm_up(fast)  # as `rag-app serve` does at start (api.warm_up): models loaded, statements read in
            floor = query_embedding_floor(fast.index.embedder, QUESTIONS, repeats=5)
            outcomes.append(scenario("1. three streams left during retrieval", fast, streams_left("during retrieval")))
            outcomes.append(scenario("2. three streams left mid-answer", fast, streams_left("mid-answer")))
            slow = rag_with(hanging.url, timeout_s=4.0, deadline_s=4.0)
            warm_up(slow)
            outcomes.append(scenario("3. an LLM that never answers: 3 asks", slow, asks(3), ask_timeout_s=3.0))
            dead = rag_with("http://127.0.0.1:9/v1")
            outcomes.append(scenario("4. no LLM at all: 3 asks", dead, asks(3)))
            outcomes.append(scenario("5. searches past their time limit", fast, searches_past_their_limit,
                                     search_timeout_s=0.05))  # fmt: skip
            mixing = mixed(args.clients, args.seconds, floor["p50_ms"])
            outcomes.append(scenario(f"6. {args.clients} clients mixing search and ask", fast, mixing,
                                     max_queued_asks=args.clients))  # fmt: skip
        finally:
            hanging.close()
            scripted.stop()
    for outcome in outcomes:
        outcome.extra["healthz_p50_x_embedding"] = ratio(outcome.healthz_p50_ms, floor["p50_ms"])
    write(outcomes, args, index, floor)


def write(outcomes: list[Outcome], args: argparse.Namespace, index: Path, floor: dict[str, float]) -> None:
    args.out.mkdir(parents=True, exist_ok=True)
    report = {"floor_query_embedding": floor, "scenarios": [asdict(o) for o in outcomes]}
    (args.out / "serve_faults.json").write_text(json.dumps(report, indent=2) + "\n")
    lines = [
        "# `rag-app serve` under faults (loopback)",
        "",
        f"Command: `python bench/serve_faults.py --clients {args.clients} --seconds {args.seconds:g}`; "
        f"{platform.platform()}, {os.cpu_count()} CPUs; index `{index}`.",
        "",
        f"Floor, same run: a query's embedding alone, p50 {floor['p50_ms']} ms (bench/floors.py). In brackets: "
        "/healthz p50 in query embeddings.",
        "",
        "| scenario | requests: statuses | settled in s | slots held after | threads left over | RSS MB before / after "
        "| /healthz p50 / max ms | notes |",
        "| --- | --- | ---: | ---: | ---: | --- | --- | --- |",
    ]
    for o in outcomes:
        statuses = ", ".join(f"{k}: {v}" for k, v in sorted(o.statuses.items()))
        lines.append(f"| {o.scenario} | {o.requests}: {statuses} | {o.settled_s} | {o.slots_held_after} | "
                     f"{o.threads_left_over} | {o.rss_mb_before} / {o.rss_mb_after} | {o.healthz_p50_ms} "
                     f"({o.extra['healthz_p50_x_embedding']}x) / {o.healthz_max_ms} | {o.notes} |")  # fmt: skip
    (args.out / "serve_faults.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
