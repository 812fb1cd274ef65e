"""Benchmark: searches beside a real ingest of the Stacks project into the same index.

A chat beside an arXiv month: one process (``rag-app ingest``, niced as usual) writes the Stacks project
into an index that already holds a seed corpus, while this process searches it in a loop for
``--seconds`` through ``MathRAG.search`` (the default stack), one query after another, and new ``rag-app search``
processes are started one after another beside it (each opens the index mid-write, as a CLI user does: where
issue 99's "Error finding id" came from). Reports the searches of each kind, the failures (each one's error or
traceback), the results that were not committed when the search returned (issue 99 wants 0: a reader sees
complete writes only), latency p50/p95 beside the ingest against the same searches alone just before it, and how
many statements the ingest wrote meanwhile; then stops the ingest. The floor, a query's embedding alone
(bench/floors.py), is measured twice in the same run: before the ingest starts and under it, just after the loop;
the latencies are given as ratios to both.

    python bench/search_beside_ingest.py [--seconds 120] [--out bench/results]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from floors import query_embedding_floor, ratio

from rag_app import MathRAG, Settings
from rag_app.pipeline import demo_corpus_path
from retriever.storage.commit_log import CommitLog

DEFAULT_STACKS = Path(__file__).resolve().parents[2] / "shared" / "corpora" / "stacks-project"


def section_titles(stacks: Path, count: int, seed: int = 7) -> list[str]:
    """Section titles of the Stacks project: the "what is this about" query shape of bench/ingest_stacks.py."""
    titles = sorted(
        {m.group(1).strip() for tex in stacks.glob("*.tex") for m in re.finditer(r"\\section\{([^}]{4,80})\}",
                                                                                 tex.read_text(errors="replace"))}
    )  # fmt: skip
    return random.Random(seed).sample(titles, min(count, len(titles)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stacks", type=Path, default=DEFAULT_STACKS)
    parser.add_argument("--seconds", type=float, default=120.0)
    parser.add_argument("--cli-gap", type=float, default=20.0,
                        help="seconds between two `rag-app search` processes (each holds a CPU ~15 s)")
    parser.add_argument("--alone", type=int, default=200, help="searches before the ingest starts (the baseline)")
    parser.add_argument("--batch", type=int, default=64, help="statements per write of the ingest (many writes)")
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results")
    args = parser.parse_args()

    queries = section_titles(args.stacks, 200)
    with tempfile.TemporaryDirectory(prefix="bench-beside-ingest-") as tmp:
        settings = Settings(data_dir=Path(tmp) / "data", index_dir=Path(tmp) / "index")
        reader = MathRAG(settings)
        reader.ingest([demo_corpus_path()])
        seed = reader.index.count()
        reader.search("warm up", k=10)
        floor_idle = query_embedding_floor(reader.index.embedder, queries[:50])
        alone_ms = []
        for query in queries[: args.alone]:  # the same searches with no writer: the latency to compare with
            began = time.perf_counter()
            reader.search(query, k=10)
            alone_ms.append((time.perf_counter() - began) * 1000)
        log_of_commits = CommitLog(settings.index_dir)
        cli_queries = Path(tmp) / "cli-queries.txt"
        cli_queries.write_text("\n".join(queries[:5]) + "\n")
        cli_command = [sys.executable, "-m", "rag_app.cli", "search", "--queries", str(cli_queries), "--json",
                       "--k", "10", "--index", str(settings.index_dir)]  # fmt: skip
        cli_out, cli_err = Path(tmp) / "cli.jsonl", Path(tmp) / "cli.err"
        cli: subprocess.Popen[bytes] | None = None
        cli_processes = cli_searches = 0
        uncommitted = 0

        def committed_only(ids: list[str]) -> bool:
            return not set(ids) - log_of_commits.visible(ids, log_of_commits.generation())

        def collect_cli(process: subprocess.Popen[bytes]) -> None:
            nonlocal cli_processes, cli_searches, uncommitted
            lines, errors = cli_out.read_text().splitlines(), cli_err.read_text(errors="replace")
            cli_processes += 1
            if process.returncode != 0 or "Traceback" in errors or len(lines) != 5:
                failures.append(f"rag-app search exit {process.returncode}: {errors[-300:]}")
            for line in lines:
                cli_searches += 1
                uncommitted += not committed_only([hit["id"] for hit in json.loads(line)["results"]])

        env = {**os.environ, "RAG_APP_DATA_DIR": str(settings.data_dir),
               "RAG_APP_INGESTION__BATCH_STATEMENTS": str(args.batch)}  # fmt: skip
        command = [sys.executable, "-m", "rag_app.cli", "ingest", str(args.stacks), "--index", str(settings.index_dir)]
        log = open(Path(tmp) / "ingest.log", "w")  # noqa: SIM115 - read after the process ends
        ingest = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
        latencies_ms: list[float] = []
        failures: list[str] = []
        started = time.monotonic()
        next_cli = started + args.cli_gap
        while time.monotonic() - started < args.seconds and ingest.poll() is None:
            if cli is None and time.monotonic() >= next_cli:
                with cli_out.open("w") as out, cli_err.open("w") as err:
                    cli = subprocess.Popen(cli_command, env=env, stdout=out, stderr=err)
            elif cli is not None and cli.poll() is not None:
                collect_cli(cli)
                cli = None
                next_cli = time.monotonic() + args.cli_gap
            query = queries[len(latencies_ms) % len(queries)]
            began = time.perf_counter()
            try:
                hits = reader.search(query, k=10)
                latencies_ms.append((time.perf_counter() - began) * 1000)
                uncommitted += not committed_only([hit.record.id for hit in hits])
            except Exception as error:  # every failure is counted and shown
                latencies_ms.append((time.perf_counter() - began) * 1000)
                failures.append(f"{query!r}: {type(error).__name__}: {' '.join(str(error).split())[:200]}")
        if cli is not None:
            cli.wait(timeout=300)
            collect_cli(cli)
        floor_loaded = query_embedding_floor(reader.index.embedder, queries[:50])
        ingest_ended_first = ingest.poll() is not None
        if not ingest_ended_first:
            ingest.send_signal(signal.SIGTERM)
        ingest.wait(timeout=120)
        log.close()
        written = MathRAG(settings).index.count() - seed
        output = (Path(tmp) / "ingest.log").read_text(errors="replace")
        tracebacks = output.count("Traceback")

    quantiles = statistics.quantiles(latencies_ms, n=100, method="inclusive") if len(latencies_ms) > 1 else [0] * 99
    alone = statistics.quantiles(alone_ms, n=100, method="inclusive") if len(alone_ms) > 1 else [0] * 99
    result = {
        "seconds": round(time.monotonic() - started, 1),
        "searches": len(latencies_ms),
        "cli_processes": cli_processes,
        "cli_searches": cli_searches,
        "failures": len(failures),
        "failure_examples": failures[:10],
        "results_not_committed": uncommitted,
        "p50_ms": round(quantiles[49], 1),
        "p95_ms": round(quantiles[94], 1),
        "alone_searches": len(alone_ms),
        "alone_p50_ms": round(alone[49], 1),
        "alone_p95_ms": round(alone[94], 1),
        "floor_query_embedding_idle": floor_idle,
        "floor_query_embedding_beside_ingest": floor_loaded,
        "p50_x_embedding_idle": ratio(quantiles[49], floor_idle["p50_ms"]),
        "p50_x_embedding_beside_ingest": ratio(quantiles[49], floor_loaded["p50_ms"]),
        "seed_statements": seed,
        "ingest_batch_statements": args.batch,
        "statements_written_meanwhile": written,
        "ingest_ended_first": ingest_ended_first,
        "ingest_tracebacks": tracebacks,
        "cpus": os.cpu_count(),
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "search_beside_ingest.json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
