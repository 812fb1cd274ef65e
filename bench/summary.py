"""The benchmark results side by side: ingestion, search at 17k/100k/1M statements, and asking.

Reads the JSON each benchmark wrote under ``bench/results`` (run them first) and writes
``bench/results/summary.md``; nothing is measured here.

    python bench/summary.py [--results bench/results]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def load(results: Path, name: str) -> dict[str, Any] | None:
    path = results / f"{name}.json"
    return json.loads(path.read_text()) if path.exists() else None


def ingestion(result: dict[str, Any]) -> list[str]:
    full = result["full_ingest"]
    stages = ", ".join(f"{stage} {seconds:.1f} s" for stage, seconds in full["stages_s"].items())
    return [
        f"## Ingestion ({result['date']}, {result['machine']['cpus']} CPUs, {result['machine']['device']})",
        "",
        f"{result['statements']:,} Stacks statements ({result['chapters']} chapters), {result['embedder']}.",
        "",
        "| measurement | statements/s |",
        "| --- | ---: |",
        f"| parse only (1 process) | {result['parse_only']['statements_per_s']} |",
        f"| raw encoder (same texts, same run) | {result['raw_encoder']['statements_per_s']} |",
        f"| full ingest (parse, embed, Chroma, BM25, formula index) | {full['statements_per_s']} |",
        f"| **full ingest / raw encoder** | **{result['full_over_raw']:.0%}** (goal: at least 90%) |",
        "",
        f"Stages of the full ingest: {stages}.",
    ]


def search(result: dict[str, Any]) -> list[str]:
    runs = result["runs"]
    modes = list(runs[0]["search"]["latency"])
    sizes = [f"{run['statements']:,}" for run in runs]
    lines = [
        f"## Search ({result['date']}, {result['machine']['cpus']} CPUs, top {result['k']}, no reranking)",
        "",
        "p95 latency in ms (p50 / p99 in `search_scale.md`):",
        "",
        "| mode | " + " | ".join(sizes) + " |",
        "| --- |" + " ---: |" * len(sizes),
    ]
    for mode in modes:
        cells = [f"{run['search']['latency'][mode]['p95_ms']}" for run in runs]
        lines.append(f"| {mode} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "| statements | peak RSS of the search process, MB | bytes on disk per statement | "
        "+5,000 statements: seconds (Chroma, BM25 + formula) |",
        "| --- | ---: | ---: | ---: |",
    ]
    for run in runs:
        increment = run["build"].get("increment")
        added = (
            f"{increment['add_s']} ({increment.get('add_chroma_s', '—')}, {increment['add_lexical_s']})"
            if increment
            else "—"
        )
        lines.append(
            f"| {run['statements']:,} | {run['search']['peak_rss_mb']} | "
            f"{run['disk_bytes_per_statement']['total']:,} | {added} |"
        )
    lines += ["", "![search latency against index size](search_scale.png)"]
    return lines


def asking(result: dict[str, Any]) -> list[str]:
    run = result["runs"]["now"]
    summary, settings = run["summary"], run["settings"]
    return [
        f"## Asking ({run['model']} on {result['server']}, {result['machine']['cpus']} CPUs, "
        f"at most {settings['answers']['max_sources']} sources, at most {settings['llm']['max_tokens']} new tokens)",
        "",
        "| measure | p50 ms | p95 ms |",
        "| --- | ---: | ---: |",
        f"| retrieval | {summary['retrieval_ms']['p50']} | — |",
        f"| first token | {summary['first_token_ms']['p50']:,} | {summary['first_token_ms']['p95']:,} |",
        f"| full answer | {summary['full_answer_ms']['p50']:,} | {summary['full_answer_ms']['p95']:,} |",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=Path, default=ROOT / "bench" / "results")
    args = parser.parse_args()
    sections = [
        ("ingest_throughput", ingestion, "bench/ingest_throughput.py"),
        ("search_scale", search, "bench/search_scale.py"),
        ("ask_latency", asking, "bench/ask_latency.py"),
    ]
    lines = ["# Benchmarks side by side", ""]
    for name, render, script in sections:
        result = load(args.results, name)
        lines += [*render(result), ""] if result else [f"## {name}", "", f"not run yet: `python {script}`", ""]
    (args.results / "summary.md").write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
