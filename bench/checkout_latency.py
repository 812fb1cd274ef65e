"""Benchmark: search p50 and the first words' p50 of two checkouts of this project, on one index (issue 93).

A refactor that moves code must not slow what a researcher waits for. Each checkout runs in its own fresh
process (its own code on ``PYTHONPATH``, this project's venv), over the same questions and the same index, and
the two alternate ``--rounds`` times, so that a machine's drift falls on both. Per question: ``search`` (the
search the CLI and ``/v1/search`` run) and ``ask_stream`` up to its first chunk (the first words the chat shows).
The model is left out on purpose (``llm.base_url`` is a closed port): what is timed is this project's code on the
way to the first words, the quote the learned chooser leads with, not a model's reading.

    python bench/checkout_latency.py --before ../old-checkout [--after .] [--index DIR] [--rounds 2] [--limit 40]

The index is ``bench/answer_choice.py``'s (every corpus the sets are judged against; built there on first use).
Writes ``bench/results/checkout_latency.{json,md}``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

from rag_app.datasets.query_set import QuerySet

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_INDEX = Path.home() / ".cache/rag-app-choice/index"
QUESTIONS = ROOT / "eval/questions/research-questions-apart.v1.jsonl"
OUT = ROOT / "bench/results"

# What runs inside each checkout's process: its own MathRAG, timed per question; prints one JSON line.
WORKER = r"""
import json, sys, time
from rag_app import MathRAG, Settings
index, questions = sys.argv[1], json.loads(sys.argv[2])
settings = Settings(index_dir=index)
settings.llm.base_url = "http://127.0.0.1:9/v1"  # no model: this project's own way to the first words
settings.llm.retries = 0
rag = MathRAG(settings)
rag.search(questions[0], k=10)  # loaded once, not timed: models, stores, the first read of the graph
search_ms, first_ms = [], []
for question in questions:
    started = time.perf_counter()
    rag.search(question, k=10)
    search_ms.append((time.perf_counter() - started) * 1000)
    started = time.perf_counter()
    stream = rag.ask_stream(question)
    next(iter(stream), None)
    first_ms.append((time.perf_counter() - started) * 1000)
    stream.close()
print(json.dumps({"search_ms": search_ms, "first_words_ms": first_ms}))
"""


def run_checkout(checkout: Path, index: Path, questions: list[str]) -> dict[str, list[float]]:
    env = {**os.environ, "PYTHONPATH": str(checkout), "HF_HUB_OFFLINE": "1", "ANONYMIZED_TELEMETRY": "False"}
    done = subprocess.run(
        [sys.executable, "-c", WORKER, str(index), json.dumps(questions)],
        cwd=checkout, env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"{checkout}: the worker failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def p50(values: list[float]) -> float:
    return round(statistics.median(values), 1)


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))], 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", type=Path, required=True, help="the other checkout (a git worktree)")
    parser.add_argument("--after", type=Path, default=ROOT)
    parser.add_argument("--index", type=Path, default=DEFAULT_INDEX)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--limit", type=int, default=40, help="questions of the set written apart")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    if not (args.index / "manifest.json").exists():
        raise SystemExit(f"{args.index}: no index; `python bench/answer_choice.py collect` builds it")
    questions = [query.text for query in QuerySet.load(QUESTIONS).queries][: args.limit]
    timings: dict[str, dict[str, list[float]]] = {"before": {}, "after": {}}
    for round_number in range(args.rounds):
        order = ("before", "after") if round_number % 2 == 0 else ("after", "before")
        for side in order:
            checkout = args.before if side == "before" else args.after
            started = time.perf_counter()
            got = run_checkout(checkout.resolve(), args.index, questions)
            print(f"round {round_number + 1}, {side}: {time.perf_counter() - started:.0f} s", file=sys.stderr)
            for key, values in got.items():
                timings[side].setdefault(key, []).extend(values)
    summary = {
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs",
        "date": time.strftime("%Y-%m-%d"),
        "questions": len(questions),
        "rounds": args.rounds,
        "index": str(args.index).replace(str(Path.home()), "~"),
        "before": str(args.before),
        **{
            side: {f"{key} p50": p50(values) for key, values in got.items()}
            | {f"{key} p95": p95(values) for key, values in got.items()}
            for side, got in timings.items()
        },
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "checkout_latency.json").write_text(json.dumps(summary, indent=1) + "\n")
    rows = [
        f"| {side} | {got['search_ms p50']} | {got['search_ms p95']} | {got['first_words_ms p50']} | "
        f"{got['first_words_ms p95']} |"
        for side, got in ((side, summary[side]) for side in ("before", "after"))
    ]
    markdown = "\n".join(
        [
            "# Search and first words: two checkouts on one index",
            "",
            f"{summary['machine']}; {summary['date']}; {len(questions)} questions of "
            f"`{QUESTIONS.name}`, {args.rounds} rounds alternating; index {summary['index']}; no model (the first "
            "words are the chooser's quote). Regenerate: `python bench/checkout_latency.py --before CHECKOUT`.",
            "",
            "| checkout | search p50 ms | search p95 ms | first words p50 ms | first words p95 ms |",
            "| --- | ---: | ---: | ---: | ---: |",
            *rows,
            "",
        ]
    )
    (args.out / "checkout_latency.md").write_text(markdown)
    print(markdown)


if __name__ == "__main__":
    main()
