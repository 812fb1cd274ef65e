"""Benchmark: search latency and results of two checkouts of this code on the same index, side by side.

For a change that must not change what search finds nor how fast (a refactor): each checkout runs the
same queries against the same index in its own process, the two alternating round after round so that
the machine's state is shared fairly. Reports p50/p95 per mode and checkout, and whether the top 10 of
every query is the same in both.

    python bench/search_side_by_side.py --before /tmp/before --after . \
        --index ~/.local/share/rag-app/eval/index/packaged-all-MiniLM-L6-v2-unicode-math \
        --queries eval/sets/stacks-slogans-dev.v2.jsonl [--limit 200] [--rounds 3]

Results: ``bench/results/search_side_by_side.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

MODES = ("hybrid-formula", "bm25", "dense")

# Runs inside each checkout: one process per (checkout, round), every mode, every query.
WORKER = r"""
import json, sys, time
from rag_app import MathRAG
from rag_app.settings import Settings
queries, modes, index = json.loads(sys.argv[1]), json.loads(sys.argv[2]), sys.argv[3]
rag = MathRAG(Settings(index_dir=index))
out = {}
for mode in modes:
    rag.search(queries[0], 10, mode)  # models loaded, caches warm
    times, tops = [], []
    for query in queries:
        started = time.perf_counter()
        hits = rag.search(query, 10, mode)
        times.append((time.perf_counter() - started) * 1000)
        tops.append([hit.record.id for hit in hits])
    out[mode] = {"ms": times, "top10": tops}
print(json.dumps(out))
"""


def run(checkout: Path, queries: list[str], index: Path) -> dict[str, dict[str, list]]:
    env = dict(os.environ, PYTHONPATH=str(checkout), HF_HUB_OFFLINE="1", ANONYMIZED_TELEMETRY="False")
    with tempfile.TemporaryDirectory() as work:  # the checkout's own code, the shared index, a fresh cwd
        done = subprocess.run(
            [sys.executable, "-c", WORKER, json.dumps(queries), json.dumps(MODES), str(index)],
            env=env, cwd=work, capture_output=True, text=True, check=True,
        )  # fmt: skip
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", type=Path, required=True)
    parser.add_argument("--after", type=Path, default=Path("."))
    parser.add_argument("--index", type=Path, required=True)
    parser.add_argument("--queries", type=Path, required=True, help="a query set (JSON lines with a `query` field)")
    parser.add_argument("--limit", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", type=Path, default=Path("bench/results/search_side_by_side.md"))
    args = parser.parse_args()
    lines = args.queries.read_text(encoding="utf-8").splitlines()
    rows = [json.loads(line) for line in lines if line.strip()]
    queries = [row["query"] for row in rows if "query" in row][: args.limit]  # the first line is the header
    checkouts = {"before": args.before.resolve(), "after": args.after.resolve()}
    times: dict[str, dict[str, list[float]]] = {name: {mode: [] for mode in MODES} for name in checkouts}
    tops: dict[str, dict[str, list]] = {}
    for number in range(args.rounds):
        for name, checkout in checkouts.items():
            print(f"round {number + 1}/{args.rounds}: {name}", file=sys.stderr)
            result = run(checkout, queries, args.index)
            for mode in MODES:
                times[name][mode] += result[mode]["ms"]
            tops[name] = {mode: result[mode]["top10"] for mode in MODES}
    rows = ["| mode | before p50 ms | after p50 ms | before p95 ms | after p95 ms | same top 10 |",
            "| --- | ---: | ---: | ---: | ---: | ---: |"]  # fmt: skip
    for mode in MODES:
        same = sum(a == b for a, b in zip(tops["before"][mode], tops["after"][mode], strict=True))
        p = {name: statistics.quantiles(times[name][mode], n=20) for name in checkouts}
        rows.append(
            f"| {mode} | {statistics.median(times['before'][mode]):.1f} | {statistics.median(times['after'][mode]):.1f}"
            f" | {p['before'][18]:.1f} | {p['after'][18]:.1f} | {same}/{len(queries)} |"
        )
    report = "\n".join([
        "# Search side by side: two checkouts, one index", "",
        f"- before: `{args.before}`; after: `{args.after}`", f"- index: `{args.index}`",
        f"- queries: {len(queries)} of `{args.queries}`, {args.rounds} rounds, each checkout in its own process, "
        "alternating", "", *rows, "",
    ])  # fmt: skip
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(report, encoding="utf-8")
    print(report)


if __name__ == "__main__":
    main()
