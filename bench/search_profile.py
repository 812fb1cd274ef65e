"""Benchmark: where one search's time goes (issue 61), on the development index (the Stacks project and more).

Times ``MathRAG.search(k=10)`` with the default stack, one query after another (the user-shaped questions),
then profiles ``--profiled`` of them and adds up the time spent inside each stage by the functions it
calls (a function is counted in the first stage, in the order below, whose pattern its file or name
matches; the rest is "other"). Also times the index's status both ways: ``/v1/status`` (each store's count)
and ``rag-app status`` / ``/v1/status?full=true`` (every store's ids compared, the vector files read).

    python bench/search_profile.py [--index DIR] [--queries 100] [--profiled 30] [--out bench/results]

Results: ``bench/results/search_profile.{md,json}``.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import platform
import pstats
import statistics
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from rag_app import MathRAG, Settings
from rag_app.evaluation.runner import eval_index_dir
from retriever.store.index_health import IndexHealth

# (stage, patterns matched against "file:function" of each profiled function), first match wins
STAGES = [
    ("query embedding (MiniLM)", ("sentence_transformers", "transformers/models", "torch/nn")),
    ("dense nearest neighbours (Chroma query)", ("collection_nearest", "Collection.py:query", "_query")),
    ("records and vectors (Chroma get)", ("get_with_vectors", "Collection.py:get")),
    ("BM25 (words and formulas)", ("bm25",)),
    ("formula terms and notation", ("formula", "notation", "normalizer", "latex")),
    ("learned ranker and features", ("learned_ranker", "ranking_features", "lightgbm", "ensemble_ranker")),
    ("statement graph counts", ("statement_graph", "statement_links")),
    ("duplicate groups", ("duplicate",)),
]


def stage_times(profile: cProfile.Profile) -> dict[str, float]:
    """Seconds of own (not cumulative) time per stage: each function's own time goes to one stage."""
    stats = pstats.Stats(profile)
    totals = {name: 0.0 for name, _ in STAGES} | {"other": 0.0}
    for (file, _line, function), (_calls, _primitive, own, _cumulative, _callers) in stats.stats.items():  # type: ignore[attr-defined]
        where = f"{file}:{function}"
        stage = next((name for name, patterns in STAGES if any(p in where for p in patterns)), "other")
        totals[stage] += own
    return totals


def project_functions(profile: cProfile.Profile, searches: int, top: int = 18) -> list[tuple[str, float]]:
    """The project's own functions by cumulative time (what each costs with everything it calls), ms per search:
    C calls (SQLite, torch, numpy) have no stage of their own, so the own-time table leaves most in "other"."""
    root = str(Path(__file__).resolve().parents[1])
    rows = []
    for (file, _line, function), (_calls, _primitive, _own, cumulative, _callers) in pstats.Stats(
        profile
    ).stats.items():  # type: ignore[attr-defined]
        if file.startswith(root) and "/.venv/" not in file and "/bench/" not in file:
            rows.append((f"{Path(file).relative_to(root)}:{function}", cumulative * 1000 / searches))
    return sorted(rows, key=lambda row: -row[1])[:top]


def status_ms(rag: MathRAG, repeats: int = 5) -> dict[str, float]:
    """The median time of the index's status, by counts (``/v1/status``) and by ids (``?full=true``)."""
    health = IndexHealth(rag.index)
    times: dict[str, list[float]] = {"counts": [], "ids": []}
    for _ in range(repeats):
        for name, check in (("counts", health.counts), ("ids", health.check)):
            started = time.perf_counter()
            check()
            times[name].append((time.perf_counter() - started) * 1000)
    return {name: round(statistics.median(values), 1) for name, values in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", type=Path, default=None)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--profiled", type=int, default=30)
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results")
    args = parser.parse_args()
    settings = Settings()
    index = args.index or eval_index_dir(settings)
    rag = MathRAG(Settings(index_dir=index))
    set_lines = Path("eval/questions/user-questions.v1.jsonl").read_text().splitlines()[1:]  # after the header
    questions = [json.loads(line)["query"] for line in set_lines]
    questions = (questions * (1 + args.queries // len(questions)))[: args.queries]
    for question in questions[:5]:
        rag.search(question, k=10)  # models loaded, caches warm
    latencies = []
    for question in questions:
        started = time.perf_counter()
        rag.search(question, k=10)
        latencies.append((time.perf_counter() - started) * 1000)
    profile = cProfile.Profile()
    profile.enable()
    started = time.perf_counter()
    for question in questions[: args.profiled]:
        rag.search(question, k=10)
    profiled_s = time.perf_counter() - started
    profile.disable()
    stages = stage_times(profile)
    total = sum(stages.values()) or 1.0
    quantiles = statistics.quantiles(latencies, n=100, method="inclusive")
    result = {
        "index": str(index),
        "statements": rag.index.count(),
        "machine": f"{platform.platform()}, {os.cpu_count()} CPUs",
        "searches": len(latencies),
        "p50_ms": round(quantiles[49], 1),
        "p95_ms": round(quantiles[94], 1),
        "profiled_searches": args.profiled,
        "profiled_ms_per_search": round(profiled_s * 1000 / args.profiled, 1),
        "ms_per_search_by_stage": {name: round(s * 1000 / args.profiled, 1) for name, s in stages.items()},
        "share_by_stage": {name: round(s / total, 3) for name, s in stages.items()},
        "status_ms": status_ms(rag),
        "project_functions_cumulative_ms": [
            (name, round(ms, 1)) for name, ms in project_functions(profile, args.profiled)
        ],
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "search_profile.json").write_text(json.dumps(result, indent=2) + "\n")
    lines = [
        "# Where a search's time goes",
        "",
        f"`MathRAG.search(k=10)`, default stack, {result['statements']:,} statements ({index}), {result['machine']}: "
        f"{len(latencies)} searches one after another, p50 {result['p50_ms']} ms, p95 {result['p95_ms']} ms. "
        f"Profiled ({args.profiled} searches, {result['profiled_ms_per_search']} ms each under the profiler):",
        "",
        "| stage | ms per search (profiled) | share |",
        "| --- | ---: | ---: |",
        *(
            f"| {name} | {result['ms_per_search_by_stage'][name]} | {result['share_by_stage'][name]:.1%} |"
            for name in result["ms_per_search_by_stage"]
        ),
        "",
        'Own time above counts a C call (SQLite, torch, numpy) as "other". The project\'s functions by cumulative',
        "time (each with everything it calls, so nested rows overlap), ms per search under the profiler:",
        "",
        "| function | ms per search |",
        "| --- | ---: |",
        *(f"| `{name}` | {ms} |" for name, ms in result["project_functions_cumulative_ms"]),
        "",
        f"The index's status (median of 5): `/v1/status` by each store's count {result['status_ms']['counts']} ms; "
        f"by ids (`rag-app status`, `/v1/status?full=true`) {result['status_ms']['ids']} ms.",
    ]
    (args.out / "search_profile.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
