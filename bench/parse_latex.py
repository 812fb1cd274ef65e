"""Benchmark: parse-only LaTeX extraction on the Stacks project and the HoTT book (no embedding).

Reports, per tree and per number of worker processes: papers, statements, wall time, papers/s,
statements/s and peak RSS (the parent's and the largest worker's). Results go to
``bench/results/parse_latex.{json,md}`` with the machine they ran on.

    python bench/parse_latex.py [--shared ../shared] [--workers 1 2] [--out bench/results]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from ingestion.ingest_limits import IngestLimits
from ingestion.latex_ingestor import LatexIngestor, PaperStatements
from ingestion.latex_sources import LatexPaper, PaperFinder

ROOT = Path(__file__).resolve().parents[1]
TREES = {"stacks-project": "corpora/stacks-project", "hott-book": "corpora/hott-book"}


def _parse(paper: LatexPaper) -> tuple[int, int]:
    result: PaperStatements = LatexIngestor(IngestLimits()).ingest_paper(paper)
    return len(result.records), sum(1 for r in result.records if r.metadata.get("part", 1) == 1)


def run(tree: Path, workers: int) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as workdir:
        started = time.perf_counter()
        papers = [p for p in PaperFinder(Path(workdir)).find(tree) if isinstance(p, LatexPaper)]
        if workers == 1:
            counts = [_parse(paper) for paper in papers]
        else:
            with ProcessPoolExecutor(max_workers=workers) as pool:
                counts = list(pool.map(_parse, papers, chunksize=1))
        seconds = time.perf_counter() - started
    records = sum(c[0] for c in counts)
    statements = sum(c[1] for c in counts)
    with_statements = sum(1 for c in counts if c[0])
    return {
        "tree": tree.name,
        "workers": workers,
        "papers": with_statements,
        "documents_found": len(papers),
        "statements": statements,
        "records": records,
        "seconds": round(seconds, 2),
        "papers_per_s": round(with_statements / seconds, 2),
        "statements_per_s": round(statements / seconds, 1),
        "peak_rss_mb_parent": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "peak_rss_mb_worker": round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shared", type=Path, default=ROOT.parent / "shared")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, os.cpu_count() or 1])
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    args = parser.parse_args()
    rows = []
    for relative in TREES.values():
        for workers in dict.fromkeys(args.workers):
            row = run(args.shared / relative, workers)
            print(json.dumps(row))
            rows.append(row)
    machine = {"platform": platform.platform(), "python": platform.python_version(), "cpus": os.cpu_count()}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "parse_latex.json").write_text(json.dumps({"machine": machine, "runs": rows}, indent=2) + "\n")
    lines = [
        "| tree | workers | papers | statements | records | seconds | papers/s | statements/s "
        "| peak RSS MB (parent / worker) |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in rows:
        lines.append(
            f"| {r['tree']} | {r['workers']} | {r['papers']} | {r['statements']} | {r['records']} | {r['seconds']} "
            f"| {r['papers_per_s']} | {r['statements_per_s']} | {r['peak_rss_mb_parent']} / {r['peak_rss_mb_worker']} |"
        )
    (args.out / "parse_latex.md").write_text(
        f"Parse-only extraction ({machine['platform']}, {machine['cpus']} CPUs, Python {machine['python']})\n\n"
        + "\n".join(lines)
        + "\n"
    )


if __name__ == "__main__":
    main()
