"""Benchmark: LaTeX parsing throughput of two checkouts of this code on the same corpus, side by side.

For a change to ingestion that must not slow it (reading references, say): each checkout parses the
same tree in its own process (parse only, no embedding: the part a change to ingestion can slow), the
two alternating round after round so that the machine's state is shared fairly. Reports statements
per second per checkout and round, and the records' counts (which should agree).

    python bench/parse_side_by_side.py --before /tmp/before --after . [--corpus ../shared/corpora/stacks-project]
        [--rounds 2] [--workers 2]

Results: ``bench/results/parse_side_by_side.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

# Runs inside each checkout: parse the tree, print statements and seconds.
WORKER = r"""
import json, sys, time
from pathlib import Path
from ingestion.parallel_latex_ingestor import ParallelLatexIngestor
from ingestion.sources import ingest_sources
started = time.perf_counter()
papers = list(ingest_sources([Path(sys.argv[1])], ParallelLatexIngestor(workers=int(sys.argv[2]))))
seconds = time.perf_counter() - started
print(json.dumps({"papers": len(papers), "statements": sum(len(p.records) for p in papers), "seconds": seconds}))
"""


def run(checkout: Path, corpus: Path, workers: int) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(checkout.resolve()), "HF_HUB_OFFLINE": "1"}
    done = subprocess.run([sys.executable, "-c", WORKER, str(corpus), str(workers)], cwd=checkout, env=env,
                          check=True, capture_output=True, text=True)  # fmt: skip
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", type=Path, required=True)
    parser.add_argument("--after", type=Path, default=Path("."))
    parser.add_argument("--corpus", type=Path, default=Path("../shared/corpora/stacks-project"))
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", type=Path, default=Path("bench/results"))
    args = parser.parse_args()
    corpus = args.corpus.resolve()
    results: dict[str, list[dict[str, float]]] = {"before": [], "after": []}
    for round_ in range(1, args.rounds + 1):
        for name, checkout in (("before", args.before), ("after", args.after)):
            print(f"round {round_}/{args.rounds}: {name}", flush=True)
            results[name].append(run(checkout, corpus, args.workers))
    rates = {name: [r["statements"] / r["seconds"] for r in runs] for name, runs in results.items()}
    median = {name: statistics.median(values) for name, values in rates.items()}
    lines = [
        "# LaTeX parsing side by side: two checkouts, one corpus",
        "",
        f"- before: `{args.before}`; after: `{args.after}`; corpus: `{args.corpus}`; {args.workers} workers, "
        f"{args.rounds} rounds, alternating",
        "",
        "| checkout | statements | seconds per round | statements/s (median) |",
        "| --- | ---: | --- | ---: |",
        *(
            f"| {name} | {int(results[name][0]['statements'])} | "
            + ", ".join(f"{r['seconds']:.1f}" for r in results[name])
            + f" | {median[name]:.0f} |"
            for name in ("before", "after")
        ),
        "",
        f"After / before: {median['after'] / median['before']:.3f}.",
    ]
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "parse_side_by_side.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
