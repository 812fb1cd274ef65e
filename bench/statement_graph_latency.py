"""Benchmark: how fast a statement's view comes back from the statement graph (``MathRAG.statement``,
``rag-app show``), and what reading references costs an ingest.

    python bench/statement_graph_latency.py --index DIR [--statements 300] [--out bench/results]

``MathRAG.statement`` and the ``show`` command are timed in this process (the command as a process's main
runs it: the index opened, the view read and printed; the command line is parsed by click, built once as
at a process's start) on a seeded sample of the index's statements, after one warm-up; one
``rag-app show`` process is timed whole, for the cost of starting Python and its imports. The graph's
size is read from ``graph.sqlite``. The floor, measured in the same run (bench/floors.py): one query's
embedding alone (bench/ask_latency.py's questions), the machine's yardstick, so each figure is also
given as a ratio to it. Results: ``bench/results/statement_graph_latency.md`` and ``.json``.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import platform
import random
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import typer
from ask_latency import QUESTIONS
from floors import query_embedding_floor, ratio

from rag_app import MathRAG
from rag_app.cli import app


def percentiles(values: list[float]) -> dict[str, float]:
    return {"p50_ms": round(float(np.percentile(values, 50)), 2), "p95_ms": round(float(np.percentile(values, 95)), 2),
            "max_ms": round(max(values), 2)}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--index", type=Path, required=True)
    parser.add_argument("--statements", type=int, default=300)
    parser.add_argument("--out", type=Path, default=Path("bench/results"))
    args = parser.parse_args()
    rag = MathRAG.open(args.index)
    ids = sorted(rag.index.graph.ids())
    sample = random.Random(2026).sample(ids, min(args.statements, len(ids)))
    rag.statement(sample[0])  # warm-up: the store and the graph opened
    api_ms, sizes = [], []
    for statement_id in sample:
        started = time.perf_counter()
        view = rag.statement(statement_id)
        api_ms.append((time.perf_counter() - started) * 1000)
        sizes.append((len(view.uses), len(view.used_by), len(view.definitions)))
    command = typer.main.get_command(app)  # once, as `rag-app` does when its process starts
    command_ms = []
    for statement_id in sample[:100]:
        printed = io.StringIO()
        started = time.perf_counter()
        with contextlib.redirect_stdout(printed):
            command.main(["show", statement_id, "--index", str(args.index)], standalone_mode=False)
        command_ms.append((time.perf_counter() - started) * 1000)
        assert statement_id in printed.getvalue()
    started = time.perf_counter()
    command = [str(Path(sys.executable).with_name("rag-app")), "show", sample[0], "--index", str(args.index)]
    subprocess.run(command, check=True, capture_output=True)
    process_ms = (time.perf_counter() - started) * 1000
    floor = query_embedding_floor(rag.index.embedder, QUESTIONS, repeats=3)
    most_used = max(range(len(sample)), key=lambda i: sizes[i][1])
    result = {
        "machine": f"{platform.platform()}, {os.cpu_count()} CPUs",
        "index": str(args.index),
        "statements": rag.index.count(),
        "graph_mb": round((args.index / "graph.sqlite").stat().st_size / 1e6, 1),
        "sampled": len(sample),
        "statement_api": percentiles(api_ms),
        "show_command_in_process": percentiles(command_ms),
        "show_process_ms": round(process_ms, 1),
        "floor_query_embedding": floor,
        "statement_api_p50_x_embedding": ratio(percentiles(api_ms)["p50_ms"], floor["p50_ms"]),
        "show_command_p50_x_embedding": ratio(percentiles(command_ms)["p50_ms"], floor["p50_ms"]),
        "mean_uses": round(float(np.mean([s[0] for s in sizes])), 2),
        "mean_used_by": round(float(np.mean([s[1] for s in sizes])), 2),
        "most_used_in_sample": {"id": sample[most_used], "used_by": sizes[most_used][1]},
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "statement_graph_latency.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    lines = [
        "# Statement graph latency",
        "",
        f"- machine: {result['machine']}; index: {result['statements']:,} statements, graph.sqlite "
        f"{result['graph_mb']} MB; {len(sample)} statements sampled (seeded)",
        "",
        "| what | p50 ms | p95 ms | max ms | p50 in query embeddings (floor) |",
        "| --- | ---: | ---: | ---: | ---: |",
        *(
            f"| {name} | {result[key]['p50_ms']} | {result[key]['p95_ms']} | {result[key]['max_ms']} "
            f"| {result[ratio_key]}x |"
            for name, key, ratio_key in (
                ("MathRAG.statement", "statement_api", "statement_api_p50_x_embedding"),
                ("rag-app show, in process", "show_command_in_process", "show_command_p50_x_embedding"),
            )
        ),
        "",
        f"Floor, same run: a query's embedding alone, p50 {floor['p50_ms']} ms (bench/floors.py).",
        "",
        f"A whole `rag-app show` process (Python start and imports included): {process_ms:.0f} ms. "
        f"Mean uses {result['mean_uses']}, mean used by {result['mean_used_by']}.",
    ]
    (args.out / "statement_graph_latency.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
