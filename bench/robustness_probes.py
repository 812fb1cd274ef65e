"""Benchmark: hostile inputs, damage, kills and faulty LLM servers, tried through the real CLI.

Each probe runs ``rag-app`` in a fresh process (as a user would) and records its exit code, whether it
printed a reason (an ``error:`` line or a problem naming a file), whether a traceback reached the
user, and, where it wrote, whether every store is in step with Chroma afterwards (``status --json``)
with the statement count a clean run gives (rows lost or duplicated).

    python bench/robustness_probes.py [--out bench/results]

Results: ``robustness_probes.{json,md}``. The same defects have unit and integration tests
(tests/retriever/store/test_index_health.py, tests/rag_app/test_cli.py, ...); this is the user's view.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "rag_app" / "demo_corpus"


@dataclass
class Probe:
    name: str
    exit_code: int
    expected: str  # the exit codes that are right, e.g. "1" or "0"
    reason_given: bool
    traceback: bool
    stores_in_step: bool | None = None  # None: the probe writes nothing
    statements: int | None = None
    statements_expected: int | None = None

    @property
    def ok(self) -> bool:
        rows_ok = self.statements_expected is None or self.statements == self.statements_expected
        return (str(self.exit_code) in self.expected.split("|") and not self.traceback
                and self.stores_in_step is not False and rows_ok)  # fmt: skip


class Runner:
    def __init__(self, work: Path) -> None:
        self.work = work
        self.env = {**os.environ, "HF_HUB_OFFLINE": "1", "ANONYMIZED_TELEMETRY": "False",
                    "RAG_APP_DATA_DIR": str(work / "data"), "RAG_APP_LLM__RETRIES": "0"}  # fmt: skip

    def run(self, *args: str, env: dict[str, str] | None = None, timeout: float = 600) -> subprocess.CompletedProcess:
        command = [sys.executable, "-m", "rag_app.cli", *args]
        return subprocess.run(command, env={**self.env, **(env or {})}, capture_output=True, text=True, timeout=timeout)

    def stores(self, index: Path) -> tuple[bool, int | None]:
        result = self.run("status", "--index", str(index), "--json")
        try:
            summary = json.loads(result.stdout.strip().splitlines()[-1])
        except (ValueError, IndexError):
            return False, None
        return bool(summary["in_step"]), summary["stores"][0]["statements"]


def probe(runner: Runner, name: str, expected: str, args: list[str], index: Path | None = None,
          statements: int | None = None, env: dict[str, str] | None = None) -> Probe:  # fmt: skip
    result = runner.run(*args, env=env)
    output = result.stdout + result.stderr
    signs = ("error:", " refused", ": not ", "not available", "BEHIND", "Invalid value", "nothing to ingest")
    reason = any(sign in output for sign in signs)
    found = Probe(name, result.returncode, expected, reason, "Traceback (most recent call last)" in output)
    if index is not None:
        found.stores_in_step, found.statements = runner.stores(index)
        found.statements_expected = statements
    print(f"{'ok ' if found.ok else 'BAD'} {name}: exit {found.exit_code}", flush=True)
    return found


class BrokenLLM:
    """A loopback server answering like a broken LLM server (an HTML /models, or a stream that is not JSON)."""

    def __init__(self, html_models: bool, html_completions: bool = False) -> None:
        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def _send(self, body: bytes, kind: str) -> None:
                self.send_response(200)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:
                if html_models:
                    self._send(b"<html><body>It works!</body></html>", "text/html")
                else:
                    self._send(json.dumps({"object": "list", "data": [{"id": "m", "object": "model"}]}).encode(),
                               "application/json")  # fmt: skip

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                if html_completions:  # a proxy's error page, status 200
                    self._send(b"<html><body>502 Bad Gateway</body></html>", "text/html")
                else:
                    self._send(b"data: {not json\n\n", "text/event-stream")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()


def run_probes(work: Path) -> list[Probe]:
    runner = Runner(work)
    probes: list[Probe] = []
    clean = work / "clean"
    assert runner.run("ingest", str(DEMO), "--index", str(clean)).returncode == 0
    _, demo_count = runner.stores(clean)

    # hostile and broken inputs
    binary = work / "binary.tex"
    binary.write_bytes(b"\x00\x01binary")
    good = work / "good"
    shutil.copytree(DEMO / "graph-theory", good)
    index = work / "mixed"
    probes.append(probe(runner, "ingest: a binary .tex", "1", ["ingest", str(binary), "--index", str(index)]))
    mixed = probe(runner, "ingest: a binary .tex beside a good paper", "1",
                  ["ingest", str(binary), str(good), "--index", str(index)], index)  # fmt: skip
    probes.append(mixed)
    probes.append(probe(runner, "ingest: the good paper again", "0", ["ingest", str(good), "--index", str(index)],
                        index, mixed.statements))  # fmt: skip
    main = good / "main.tex"
    text = main.read_text()
    start = text.index("\\begin{theorem}[") + len("\\begin{theorem}[")
    main.write_text(text[:start] + "Renamed " + text[start:])
    probes.append(probe(runner, "ingest: only a theorem's name changed", "0",
                        ["ingest", str(good), "--index", str(index)], index, mixed.statements))  # fmt: skip
    refused = ["ingest", "--parse-only", str(binary)]
    probes.append(probe(runner, "ingest --parse-only: every input refused", "1", refused))
    slow = work / "slow.tex"
    # a 5 MB statement: parsing it takes minutes; ingest's per-paper limit (3 s here) must stop it
    slow.write_text(
        "\\begin{document}\\begin{theorem}"
        + "Let $x_{i}^{2} + \\frac{a}{b}$ be " * 150_000
        + "\\end{theorem}\\end{document}"
    )
    probes.append(probe(runner, "ingest --parse-only: a paper over the time limit", "1",
                        ["ingest", "--parse-only", str(slow)],
                        env={"RAG_APP_INGESTION__LIMITS__PAPER_TIMEOUT_S": "3"}))  # fmt: skip
    # issue 48: one bad part costs that part; names from input stay inside the run's directories
    huge = work / "huge" / "main.tex"
    huge.parent.mkdir()
    huge.write_text(
        "\\documentclass{article}\\newtheorem{lemma}{Lemma}\\begin{document}"
        "\\begin{lemma}Every group of prime order is cyclic.\\end{lemma}\\begin{lemma}"
        + "Let $x_{i}^{2}$ be positive. " * 150_000
        + "\\end{lemma}\\begin{lemma}Every subgroup of an abelian group is normal.\\end{lemma}\\end{document}"
    )
    huge_index = work / "huge-index"
    probes.append(probe(runner, "ingest: one 5 MB lemma beside two good ones", "0",
                        ["ingest", str(huge.parent), "--index", str(huge_index)], huge_index, 2))  # fmt: skip
    dots = work / "dots"
    dots.mkdir()
    subprocess.run(["tar", "czf", str(dots / "...tar.gz"), "-C", str(good), "."], check=True)
    tmp = work / "tmp"
    (tmp / "src").mkdir(parents=True)
    (tmp / "src" / "KEEP").write_text("a neighbour's file")
    named = probe(runner, "ingest: an archive named ...tar.gz", "0", ["ingest", "--parse-only", str(dots)],
                  env={"TMPDIR": str(tmp)})  # fmt: skip
    named.exit_code = named.exit_code if (tmp / "src" / "KEEP").exists() else -1  # -1: it wrote outside
    probes.append(named)
    import gzip

    cut = work / "cut" / "Posts.xml.gz"
    cut.parent.mkdir()
    packed = gzip.compress(("<?xml version='1.0'?>\n<posts>\n" + "\n".join(
        f'<row Id="{i}" PostTypeId="1" Score="1" Title="Q{i}" Body="&lt;p&gt;Is {i} odd?&lt;/p&gt;" />'
        for i in range(1, 400)) + "\n</posts>\n").encode())  # fmt: skip
    cut.write_bytes(packed[: len(packed) // 2])
    probes.append(probe(runner, "ingest mse: a cut Posts.xml.gz", "1",
                        ["ingest", "mse", str(cut), "--index", str(work / "mse-cut")]))  # fmt: skip
    bomb = work / "bomb" / "Posts.xml"
    bomb.parent.mkdir()
    bomb.write_text('<?xml version="1.0"?><!DOCTYPE p [<!ENTITY a "aaaa">]><posts><row Id="1" Title="&a;"/></posts>')
    probes.append(probe(runner, "ingest mse: an entity bomb", "1",
                        ["ingest", "mse", str(bomb), "--index", str(work / "mse-bomb")]))  # fmt: skip
    posts = work / "posts" / "Posts.xml"
    posts.parent.mkdir()
    rows = [f'<row Id="{i}" PostTypeId="1" Score="3" Title="Question {i}" Body="&lt;p&gt;Why is {i} odd?&lt;/p&gt;" />'
            for i in range(1, 6)]  # fmt: skip
    data = ("<?xml version='1.0' encoding='utf-8'?>\n<posts>\n" + "\n".join(rows) + "\n</posts>\n").encode()
    posts.write_bytes(data.replace(b"Why is 2", b"Why is \xe9 2"))
    probes.append(probe(runner, "ingest mse: one post with a byte that is not UTF-8", "1",
                        ["ingest", "mse", str(posts), "--index", str(work / "mse")], work / "mse", 4))  # fmt: skip

    # indexes that are not there, or damaged
    probes.append(probe(runner, "search: a mistyped --index", "2", ["search", "x", "--index", str(work / "indx")]))
    probes.append(probe(runner, "ingest: --index is a file", "2", ["ingest", str(good), "--index", str(binary)]))
    damages = ("manifest", "chroma", "bm25", "groups", "bm25 catalogue", "formula catalogue", "vector header")
    for damage in damages:
        broken = work / f"damaged-{damage}"
        shutil.copytree(clean, broken)
        if damage == "manifest":
            (broken / "manifest.json").write_text((clean / "manifest.json").read_text()[:30])
        elif damage == "chroma":
            database = broken / "chroma" / "chroma.sqlite3"
            raw = bytearray(database.read_bytes())
            raw[100:8192] = b"\x00" * (8192 - 100)
            database.write_bytes(bytes(raw))
        elif damage == "bm25":
            rows_file = next((broken / "bm25" / "segments").glob("*/rows.npy"))
            rows_file.write_bytes(rows_file.read_bytes()[:100])
        elif damage.endswith("catalogue"):  # issue 48: a traceback on search, a repair that failed
            catalogue = broken / ("bm25" if damage == "bm25 catalogue" else "formula_bm25") / "lexical.sqlite"
            for journal in catalogue.parent.glob("lexical.sqlite-*"):
                journal.unlink()
            catalogue.write_bytes(bytes(range(256)) * 16)
        elif damage == "vector header":  # issue 48: Chroma's InternalError on every read, naming no file
            next((broken / "chroma").glob("*/header.bin")).write_bytes(bytes(range(100)))
        else:
            import sqlite3

            with sqlite3.connect(broken / "duplicates.sqlite") as db:
                db.execute("DELETE FROM statement WHERE rowid % 3 = 0")
        expected = "0|3" if damage in ("bm25", "groups") else "3"
        search = ["search", "group", "--index", str(broken)]
        probes.append(probe(runner, f"search: a damaged {damage}", expected, search))
        if damage not in ("manifest", "chroma"):
            # a damaged file: exit 3 (issue 48); a store only behind (the groups lost rows): exit 1
            status_code = "1" if damage == "groups" else "3"
            status = ["status", "--index", str(broken)]
            probes.append(probe(runner, f"status: a damaged {damage}", status_code, status))
            probes.append(probe(runner, f"repair: a damaged {damage}", "0", ["repair", "--index", str(broken)],
                                broken, demo_count))  # fmt: skip

    # a kill -9 in the middle of an ingest, then the same ingest again
    killed = work / "killed"
    command = [sys.executable, "-m", "rag_app.cli", "ingest", str(DEMO), "--index", str(killed)]
    small_batches = {**runner.env, "RAG_APP_INGESTION__BATCH_STATEMENTS": "16"}
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    process = subprocess.Popen(command, env=small_batches, start_new_session=True, **quiet)  # type: ignore[call-overload]
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not (killed / "manifest.json").exists():
        time.sleep(0.05)
    time.sleep(0.3)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    probes.append(probe(runner, "ingest after a kill -9 mid-ingest", "0", ["ingest", str(DEMO), "--index", str(killed)],
                        killed, demo_count))  # fmt: skip

    # duplicate groups rebuilt while another process ingests
    beside = work / "beside"
    assert runner.run("ingest", str(DEMO / "graph-theory"), "--index", str(beside)).returncode == 0
    writer = subprocess.Popen([sys.executable, "-m", "rag_app.cli", "ingest", str(DEMO), "--index", str(beside)],
                              env={**runner.env, "RAG_APP_INGESTION__BATCH_STATEMENTS": "16"},
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    rebuilt = probe(runner, "duplicates --rebuild beside an ingest", "0",
                    ["duplicates", "--rebuild", "--index", str(beside)])  # fmt: skip
    writer.wait()
    rebuilt.stores_in_step, rebuilt.statements = runner.stores(beside)
    rebuilt.statements_expected = demo_count
    probes.append(rebuilt)

    # LLM servers that answer badly
    for html in (True, False):
        server = BrokenLLM(html)
        try:
            what = "an HTML /models page" if html else "a stream that is not JSON"
            probes.append(probe(runner, f"ask: an LLM server with {what}", "0|1",
                                ["ask", "What is a tree?", "--index", str(clean)],
                                env={"RAG_APP_LLM__BASE_URL": server.url}))  # fmt: skip
        finally:
            server.close()
    probes.append(probe(runner, "ask: no LLM server", "0|1", ["ask", "What is a tree?", "--index", str(clean)],
                        env={"RAG_APP_LLM__BASE_URL": "http://127.0.0.1:9/v1"}))  # fmt: skip
    server = BrokenLLM(False, html_completions=True)
    try:  # issue 62, defect 5: a JSONDecodeError traceback; now an LLM error, the sources kept
        probes.append(probe(runner, "ask: an LLM server answering an HTML page with status 200", "0|4",
                            ["ask", "What is a tree?", "--index", str(clean)],
                            env={"RAG_APP_LLM__BASE_URL": server.url}))  # fmt: skip
    finally:
        server.close()
    probes += _probes_of_issue_62(runner, work, clean, demo_count)
    return probes


def _probes_of_issue_62(runner: Runner, work: Path, clean: Path, demo_count: int | None) -> list[Probe]:
    """Searches beside an ingest, two ingests at once, damaged duplicate groups, command-line mistakes."""
    probes: list[Probe] = []
    # searches in a loop (each `rag-app search` a process of its own) while another process ingests
    beside = work / "searched"
    assert runner.run("ingest", str(DEMO / "graph-theory"), "--index", str(beside)).returncode == 0
    writer = subprocess.Popen([sys.executable, "-m", "rag_app.cli", "ingest", str(DEMO), "--index", str(beside)],
                              env={**runner.env, "RAG_APP_INGESTION__BATCH_STATEMENTS": "4"},
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    worst: Probe | None = None
    searches = 0
    deadline = time.monotonic() + 900
    while writer.poll() is None and time.monotonic() < deadline:
        found = probe(runner, "search (in a loop) beside an ingest", "0",
                      ["search", "spanning tree of a graph", "--index", str(beside)])  # fmt: skip
        searches += 1
        if worst is None or not found.ok:
            worst = found
    if writer.poll() is None:  # past the deadline: the ingest hung
        writer.kill()
        writer.wait()
    assert worst is not None
    worst.name = f"search beside an ingest ({searches} searches, the worst shown)"
    worst.stores_in_step, worst.statements = runner.stores(beside)
    worst.statements_expected = demo_count
    probes.append(worst)

    # two ingests of different papers into one index at once: one waits for the other
    both = work / "two-writers"
    papers = sorted(DEMO.iterdir())
    halves = [papers[0::2], papers[1::2]]
    small_batches = {**runner.env, "RAG_APP_INGESTION__BATCH_STATEMENTS": "8"}
    writers = [
        subprocess.Popen([sys.executable, "-m", "rag_app.cli", "ingest", *map(str, half), "--index", str(both)],
                         env=small_batches, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        for half in halves
    ]  # fmt: skip
    outputs = [process.communicate(timeout=900)[0] for process in writers]
    for number, (process, output) in enumerate(zip(writers, outputs, strict=True), start=1):
        found = Probe(f"two ingests at once: ingest {number}", process.returncode, "0", "waiting" in output,
                      "Traceback (most recent call last)" in output)  # fmt: skip
        found.stores_in_step, found.statements = runner.stores(both)
        found.statements_expected = demo_count
        print(f"{'ok ' if found.ok else 'BAD'} {found.name}: exit {found.exit_code}", flush=True)
        probes.append(found)

    # a truncated and a zeroed duplicate-groups file: named, exit 3; repair rebuilds it
    for how in ("truncated", "zeroed"):
        broken = work / f"groups-{how}"
        shutil.copytree(clean, broken)
        groups = broken / "duplicates.sqlite"
        for journal in broken.glob("duplicates.sqlite-*"):
            journal.unlink()
        data = groups.read_bytes()
        groups.write_bytes(data[: len(data) // 2] if how == "truncated" else b"\x00" * len(data))
        for command in ("search", "status"):
            args = [command, *(["group"] if command == "search" else []), "--index", str(broken)]
            probes.append(probe(runner, f"{command}: a {how} duplicates.sqlite", "3", args))
        probes.append(probe(runner, f"repair: a {how} duplicates.sqlite", "0", ["repair", "--index", str(broken)],
                            broken, demo_count))  # fmt: skip

    # command-line mistakes: a file argument that is a directory, missing, or not UTF-8
    latin = work / "latin1.txt"
    latin.write_bytes("Poincaré duality\n".encode("latin-1"))
    for what, path in (("a directory", work), ("a missing file", work / "missing.txt"), ("a Latin-1 file", latin)):
        probes.append(probe(runner, f"search --queries {what}", "2",
                            ["search", "--queries", str(path), "--index", str(clean)]))  # fmt: skip
        probes.append(probe(runner, f"eval --run {what}", "2", ["eval", "--run", str(path), "--index", str(clean)]))
    empty = work / "looks_like_a_file.tex"
    empty.mkdir()
    probes.append(probe(runner, "ingest: an empty directory named like a file", "1",
                        ["ingest", str(empty), "--index", str(work / "never")]))  # fmt: skip
    return probes


def write_report(probes: list[Probe], out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "robustness_probes.json").write_text(json.dumps([asdict(p) | {"ok": p.ok} for p in probes], indent=2))
    lines = [
        f"# Robustness probes ({time.strftime('%Y-%m-%dT%H:%M:%S%z')}, through the CLI, a fresh process each)",
        "",
        f"{sum(p.ok for p in probes)} of {len(probes)} as expected; tracebacks: {sum(p.traceback for p in probes)}; "
        f"probes whose stores ended out of step or with rows lost or duplicated: "
        f"{sum(p.stores_in_step is False or (p.statements_expected is not None and p.statements != p.statements_expected) for p in probes)}",  # noqa: E501
        "",
        "| probe | exit (expected) | reason given | traceback | stores in step | statements (clean run) |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for p in probes:
        stores = "—" if p.stores_in_step is None else ("yes" if p.stores_in_step else "NO")
        rows = "—" if p.statements_expected is None else f"{p.statements} ({p.statements_expected})"
        lines.append(f"| {p.name} | {p.exit_code} ({p.expected}) | {'yes' if p.reason_given else 'no'} | "
                     f"{'YES' if p.traceback else 'no'} | {stores} | {rows} |")  # fmt: skip
    (out / "robustness_probes.md").write_text("\n".join(lines) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="rag-app-probes-") as work:
        probes = run_probes(Path(work))
    write_report(probes, args.out)
    print((args.out / "robustness_probes.md").read_text())


if __name__ == "__main__":
    main()
