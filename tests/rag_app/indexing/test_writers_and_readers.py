"""Real processes on one index: searches in a loop beside an ingest (a long-lived reader, `rag-app serve`, in every
search mode, and fresh `rag-app search` processes), two ingests at once, and an ingest that gives up waiting for
another (exit 6). A long-lived reader seeing what another process wrote, in every channel, is
tests/retriever/store/test_index_health.py's."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from ingestion import LatexIngestor, ingest_sources
from rag_app.pipeline import demo_corpus_path
from rag_app.serving.llm_server import free_port
from retriever.storage.commit_log import CommitLog
from tests.retriever.storage.test_index_lock import held_by_another_process

HOTT_BOOK = Path(__file__).resolve().parents[4] / "shared" / "corpora" / "hott-book"


def _environment(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "RAG_APP_DATA_DIR": str(tmp_path / "data"),
        "RAG_APP_INGESTION__ISOLATE_PAPERS": "false",
        **extra,
    }


def _ingest_command(index: Path, *paths: Path) -> list[str]:
    return [sys.executable, "-m", "rag_app.cli", "ingest", *map(str, paths), "--index", str(index), "--json"]


def _status(index: Path, env: dict[str, str]) -> dict[str, object]:
    command = [sys.executable, "-m", "rag_app.cli", "status", "--index", str(index), "--json"]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout)


def test_an_ingest_that_waits_past_its_deadline_exits_6_and_writes_nothing(tmp_path: Path) -> None:
    index = tmp_path / "index"
    env = _environment(tmp_path, RAG_APP_INGESTION__WRITER_WAIT_S="1")
    paper = demo_corpus_path() / "graph-theory"
    with held_by_another_process(index):
        done = subprocess.run(_ingest_command(index, paper), env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 6, done.stdout + done.stderr
    assert "waiting for it to finish" in done.stderr
    assert f"another ingest is writing the index {index}" in done.stderr and "Traceback" not in done.stderr
    assert not (index / "manifest.json").exists()  # nothing written


@pytest.mark.slow
def test_two_ingests_of_different_papers_at_once_both_end_well(tmp_path: Path) -> None:
    index = tmp_path / "index"
    env = _environment(tmp_path, RAG_APP_INGESTION__BATCH_STATEMENTS="8")  # many small writes to interleave
    halves = ([], [])  # type: tuple[list[Path], list[Path]]
    for number, paper in enumerate(sorted(demo_corpus_path().iterdir())[:6]):
        halves[number % 2].append(paper)
    ingests = [
        subprocess.Popen(_ingest_command(index, *half), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        for half in halves
    ]
    outputs = [process.communicate(timeout=900) for process in ingests]
    assert [process.returncode for process in ingests] == [0, 0], outputs
    assert all(b"Traceback" not in stderr for _, stderr in outputs), outputs
    added = sum(json.loads(stdout.decode().strip().splitlines()[-1])["added"] for stdout, _ in outputs)
    status = _status(index, env)
    assert status["in_step"], status
    stores = {store["store"]: store["statements"] for store in status["stores"]}  # type: ignore[union-attr]
    assert stores["chroma"] == added > 0


def _visible_at_the_end(index: Path, ids: list[str]) -> set[str]:
    """Those of ``ids`` committed now (read just after the search that found them returned)."""
    log = CommitLog(index)
    return log.visible(ids, log.generation())


@pytest.mark.slow
def test_cli_searches_and_a_server_beside_an_ingest_see_only_committed_batches(tmp_path: Path) -> None:
    """Issue 99: an ingest of the HoTT book and the demo corpus, two statements a write (some 500 writes, a minute
    or two on 2 CPUs), and beside it new `rag-app search` processes (each opens the index mid-write, as a CLI user
    would) and one `rag-app serve` searched over HTTP. Every search ends well and returns only statements of
    batches committed when it returned; then the stores hold what a clean ingest of the same papers holds."""
    index = tmp_path / "index"
    env = _environment(tmp_path, RAG_APP_INGESTION__BATCH_STATEMENTS="2")
    demo = sorted(demo_corpus_path().iterdir())
    seed, rest = demo[0], [*demo[1:], HOTT_BOOK]
    subprocess.run(_ingest_command(index, seed), env=env, check=True, capture_output=True, timeout=600)
    queries = tmp_path / "queries.txt"
    asked = ["bounded entire function", "Sylow subgroup order $p^k$", "spanning tree", "$\\sum 1/p$ diverges",
             "univalence axiom", "eigenvalues of a symmetric matrix", "higher inductive type circle", "martingale"]
    queries.write_text("\n".join(asked) + "\n")
    port = free_port()
    serve_log = tmp_path / "serve.log"
    with serve_log.open("wb") as log:
        serve = subprocess.Popen(
            [sys.executable, "-m", "rag_app.cli", "serve", "--port", str(port), "--index", str(index), "--no-mcp"],
            env=env, stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    failures: list[str] = []
    searches = cli_processes = 0
    try:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                    break
            assert serve.poll() is None, serve_log.read_text()
            time.sleep(0.5)
        ingest = subprocess.Popen(_ingest_command(index, *rest), env=env, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE)  # fmt: skip
        search = [sys.executable, "-m", "rag_app.cli", "search", "--queries", str(queries), "--json", "--k", "10",
                  "--index", str(index)]  # fmt: skip
        cli: subprocess.Popen[bytes] | None = None
        cli_out, cli_err = tmp_path / "search.jsonl", tmp_path / "search.err"
        until = time.monotonic() + 900
        while ingest.poll() is None and time.monotonic() < until:
            if cli is None:  # one CLI process at a time, each a fresh reader of the index (output to files: a
                # full pipe would stop it)
                with cli_out.open("w") as out, cli_err.open("w") as err:
                    cli = subprocess.Popen(search, env=env, stdout=out, stderr=err)
            elif cli.poll() is not None:
                lines, err = cli_out.read_text().splitlines(), cli_err.read_text()
                if cli.returncode != 0 or "Traceback" in err or len(lines) != len(asked):
                    failures.append(f"cli exit {cli.returncode}: {err[-800:]}")
                for line in lines:
                    found = [hit["id"] for hit in json.loads(line)["results"]]
                    if uncommitted := set(found) - _visible_at_the_end(index, found):
                        failures.append(f"cli returned uncommitted {sorted(uncommitted)}")
                searches += len(lines)
                cli_processes += 1
                cli = None
            time.sleep(0.2)  # the server's searches leave the CLI processes some of the 2 CPUs
            query = asked[searches % len(asked)]
            for mode in ("hybrid", "hybrid-formula", "dense", "bm25"):
                began = time.monotonic()
                try:
                    answer = httpx.get(f"{url}/v1/search", params={"query": query, "k": 10, "mode": mode}, timeout=120)
                except httpx.HTTPError as error:
                    failures.append(f"serve {mode} {query!r}: {error!r} after {time.monotonic() - began:.0f} s")
                    continue
                searches += 1
                if answer.status_code != 200:
                    failures.append(f"serve {mode}: {answer.status_code} {answer.text[:300]}")
                    continue
                found = [hit["id"] for hit in answer.json()]
                if set(found) - _visible_at_the_end(index, found):
                    failures.append(f"serve {mode} returned uncommitted statements")
        _, ingest_errors = ingest.communicate(timeout=900)
        if cli is not None:
            cli.wait(timeout=300)
    finally:
        serve.terminate()
        serve.wait(timeout=60)
    served = serve_log.read_text(errors="replace")
    assert ingest.returncode == 0, ingest_errors.decode()
    assert failures == [] and searches >= 200 and cli_processes >= 3, (searches, cli_processes, failures[:5])
    assert "Traceback" not in served, served[-3000:]
    # A clean ingest of the same papers holds every statement they parse into, once in every store: the papers parsed
    # here the way `ingest` parses them (an ingest of its own would embed them all again, half a minute).
    parsed = {record.id for paper in ingest_sources([seed, *rest], LatexIngestor()) for record in paper.records}
    written = _status(index, env)
    assert written["in_step"], written
    stores = {store["store"]: store["statements"] for store in written["stores"]}  # type: ignore[union-attr]
    assert set(stores.values()) == {len(parsed)}, stores
    assert CommitLog(index).ids() == parsed
