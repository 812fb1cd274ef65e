"""Benchmark: ingest the whole Stacks project, then time searches.

Reports statements, wall time, statements per second, peak RSS, bytes on disk, and search
latency p50/p95 over 100 queries for each retriever mode. The queries are section titles of
the Stacks project drawn with a fixed seed (a realistic "what is this about" query shape).
Floors in the same run (bench/floors.py): the embedder's own statements/s on a seeded sample of the
ingested statements (what an ingest cannot go above) and the queries' embedding alone (what a search
cannot go below); the ingest rate and the search latencies are also given as ratios to them.

    python bench/ingest_stacks.py [--stacks ../shared/corpora/stacks-project] [--out bench/results]
                                  [--keep-index ~/.cache/rag-app-bench/stacks-index]

``--keep-index`` writes the index there (a new folder) and keeps it: bench/search_scale.py's base index,
and an index for bench/rerank_latency.py ``--index``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import resource
import statistics
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from floors import embedder_floor, query_embedding_floor, ratio

from rag_app import MathRAG, Settings
from retriever import SearchMode

DEFAULT_STACKS = Path(__file__).resolve().parents[2] / "shared" / "corpora" / "stacks-project"


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux reports KiB


def disk_bytes(directory: Path) -> int:
    return sum(p.stat().st_size for p in directory.rglob("*") if p.is_file())


def percentile(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stacks", type=Path, default=DEFAULT_STACKS)
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--device", default="cpu", help="embedding device (cuda on a GPU machine)")
    parser.add_argument("--keep-index", type=Path, help="write the index to this new folder and keep it")
    args = parser.parse_args()
    if args.keep_index and args.keep_index.exists() and any(args.keep_index.iterdir()):
        raise SystemExit(f"{args.keep_index} is not empty: --keep-index takes a new folder")

    with tempfile.TemporaryDirectory(prefix="bench-stacks-") as tmp:
        index_dir = args.keep_index or Path(tmp) / "index"
        settings = Settings(data_dir=Path(tmp) / "data", index_dir=index_dir)
        settings.embedding.device = args.device
        rag = MathRAG(settings)
        started = time.perf_counter()
        report = rag.ingest([args.stacks], show_progress=True)
        ingest_seconds = time.perf_counter() - started
        print(f"ingested {report.statements} statements in {ingest_seconds:.1f} s", flush=True)
        rss_after_ingest = peak_rss_mb()

        sections = sorted({r.section for r in rag.index.store.iter_records() if r.section})
        queries = random.Random(0).sample(sections, min(args.queries, len(sections)))
        rag.search("warm up", 10)  # load the model and BM25 once, outside the timings
        records = list(rag.index.store.iter_records())
        sample = [r.search_text() for r in random.Random(75).sample(records, min(1024, len(records)))]
        # in the ingest's own batches: the encoder sorts each batch by length, and larger ones pad less
        batch = settings.ingestion.batch_statements
        floors = {"embedder": embedder_floor(rag.index.embedder, sample, batch_size=batch),
                  "query_embedding": query_embedding_floor(rag.index.embedder, queries)}  # fmt: skip
        latencies: dict[str, dict[str, float]] = {}
        for mode in SearchMode:
            if mode in (SearchMode.MARF, SearchMode.MARF_MAXSIM):
                continue  # their vectors are built by `rag-app build-fusion`, not by ingest
            timings = []
            for query in queries:
                t0 = time.perf_counter()
                rag.search(query, 10, mode)
                timings.append((time.perf_counter() - t0) * 1000)
            latencies[mode.value] = {
                "p50_ms": round(percentile(timings, 50), 2),
                "p95_ms": round(percentile(timings, 95), 2),
                "mean_ms": round(statistics.fmean(timings), 2),
                "p50_x_embedding": ratio(percentile(timings, 50), floors["query_embedding"]["p50_ms"]),
            }
        size = disk_bytes(index_dir)

    result = {
        "benchmark": "ingest_stacks",
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count(), "python": platform.python_version()},
        "embedder": settings.embedding.model,
        "device": args.device,
        "papers": report.papers,
        "statements": report.statements,
        "problems": len(report.problems),
        "wall_seconds": round(ingest_seconds, 1),
        "statements_per_second": round(report.statements / ingest_seconds, 1),
        "floors": floors,
        "x_embedder": ratio(report.statements / ingest_seconds, floors["embedder"]["statements_per_s"]),
        "peak_rss_mb": round(max(rss_after_ingest, peak_rss_mb()), 1),
        "index_bytes": size,
        "index_bytes_per_statement": round(size / max(report.statements, 1)),
        "queries": len(queries),
        "search_latency": latencies,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "ingest_stacks.json").write_text(json.dumps(result, indent=2) + "\n")
    lines = [
        "| metric | value |",
        "| --- | --- |",
        f"| statements | {result['statements']:,} from {result['papers']} chapters |",
        f"| ingest wall time | {result['wall_seconds']} s |",
        f"| statements per second | {result['statements_per_second']} ({result['x_embedder']}x the embedder's own "
        f"{floors['embedder']['statements_per_s']}/s on {floors['embedder']['statements']} of them, same run) |",
        f"| peak RSS | {result['peak_rss_mb']} MB |",
        f"| index on disk | {size / 1e6:.1f} MB ({result['index_bytes_per_statement']} B per statement) |",
    ]
    floor_ms = floors["query_embedding"]["p50_ms"]
    for mode, numbers in latencies.items():
        lines.append(
            f"| search {mode} p50 / p95 | {numbers['p50_ms']} / {numbers['p95_ms']} ms "
            f"({numbers['p50_x_embedding']}x the queries' embedding alone, p50 {floor_ms} ms) |"
        )
    table = "\n".join(lines)
    (args.out / "ingest_stacks.md").write_text(
        f"# Stacks project ingest ({result['date']}, {result['machine']['cpus']} CPUs, {args.device})\n\n{table}\n"
    )
    print(table)


if __name__ == "__main__":
    main()
