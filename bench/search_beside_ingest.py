"""Benchmark: searches in a loop beside a real ingest of the Stacks project into the same index.

A chat beside an arXiv month: one process (``rag-app ingest``, niced as usual) writes the Stacks project
into an index that already holds a seed corpus, while this process searches it in a loop for
``--seconds`` through ``MathRAG.search`` (the default stack), one query after another. Reports the
searches, the failures (each one's error), latency p50/p95, and how many statements the ingest wrote
meanwhile; then stops the ingest. Issue 62 wants 0 failures. The floor, a query's embedding alone
(bench/floors.py), is measured twice in the same run: before the ingest starts and under it, just after
the loop; the latencies are given as ratios to both.

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
        env = {**os.environ, "RAG_APP_DATA_DIR": str(settings.data_dir),
               "RAG_APP_INGESTION__BATCH_STATEMENTS": str(args.batch)}  # fmt: skip
        command = [sys.executable, "-m", "rag_app.cli", "ingest", str(args.stacks), "--index", str(settings.index_dir)]
        log = open(Path(tmp) / "ingest.log", "w")  # noqa: SIM115 - read after the process ends
        ingest = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
        latencies_ms: list[float] = []
        failures: list[str] = []
        started = time.monotonic()
        while time.monotonic() - started < args.seconds and ingest.poll() is None:
            query = queries[len(latencies_ms) % len(queries)]
            began = time.perf_counter()
            try:
                reader.search(query, k=10)
            except Exception as error:  # every failure is counted and shown
                failures.append(f"{query!r}: {type(error).__name__}: {' '.join(str(error).split())[:200]}")
            latencies_ms.append((time.perf_counter() - began) * 1000)
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
    result = {
        "seconds": round(time.monotonic() - started, 1),
        "searches": len(latencies_ms),
        "failures": len(failures),
        "failure_examples": failures[:10],
        "p50_ms": round(quantiles[49], 1),
        "p95_ms": round(quantiles[94], 1),
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
