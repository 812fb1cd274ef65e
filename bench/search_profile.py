"""Benchmark: where one search's time goes (issue 61), on the development index (the Stacks project and more).

Times ``MathRAG.search(k=10)`` with the default stack, one query after another (the user-shaped questions,
``--queries`` of them), twice over: the first pass meets most statements for the first time (the store's
and the ranker's caches cold), the second asks the same questions again (warm). Each pass is run in
three configurations, on the same machine in one process, so before and after read side by side:

- ``before``: torch embeds the query on torch's own thread count, nothing kept between searches
  (what a search cost before issue 61's work on its cost);
- ``one thread``: torch embeds the query on one thread, nothing kept;
- ``channels in turn``: ``default`` with the channels searched one after another and the statements'
  ranking profiles made at search time (before issue 75);
- ``default``: the query through ONNX Runtime, the statements read lately and their ranking profiles kept,
  the vector channel in a worker thread beside the lexical ones and the ranking profiles made at ingest,
  read from ``ranking_profiles.sqlite`` (issue 75).

Each configuration also measures its floor in the same run: the questions embedded alone, as its search
embeds them; every search figure is given as a multiple of that embedding's p50 too (bench/floors.py).

Each stage's wall-clock time is measured around its function (nested stages are inside their parents:
the query's embedding is inside the channels). Also times the index's status both ways: ``/v1/status``
(each store's count) and ``rag-app status`` / ``/v1/status?full=true`` (ids compared, vector files read).

    python bench/search_profile.py [--index DIR] [--queries 100] [--out bench/results]

Issue 75 ran it on ``--index ~/.cache/rag-app-claims/index`` (the index of the yes/no benchmark of that time: the demo
corpus, the Stacks project, our MSE threads, the HoTT book and the thesis sample).

Results: ``bench/results/search_profile.{md,json}``. Run it on an idle machine: a background job on the
other core changes the torch rows most (that is what the one-thread row is about).
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import platform
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch

import retriever.models.learned_ranker as learned_ranker_module
from rag_app import MathRAG, Settings
from rag_app.evaluation.runner import eval_index_dir
from rag_app.pipeline import MathRAG as _MathRAG
from retriever.models.learned_ranker import LearnedRanker
from retriever.models.ranking_features import StatementProfiles
from retriever.search.bm25_searcher import BM25Searcher
from retriever.search.channel_ranker import ChannelRanker
from retriever.search.dense_searcher import DenseSearcher
from retriever.search.duplicate_collapsing_searcher import DuplicateCollapsingSearcher
from retriever.search.first_stage_searcher import FirstStageSearcher
from retriever.search.formula_lexical_searcher import FormulaLexicalSearcher
from retriever.search.hybrid_searcher import HybridSearcher
from retriever.store.chroma_store import ChromaStatementStore
from retriever.store.index_health import IndexHealth

sys.path.insert(0, str(Path(__file__).resolve().parent))
from floors import query_embedding_floor, ratio

ROOT = Path(__file__).resolve().parents[1]

# (stage, class, method): wall-clock time inside each, per search
STAGES: list[tuple[str, Any, str]] = [
    ("duplicates collapsed (the whole search below it)", DuplicateCollapsingSearcher, "run"),
    ("  first stage (channels, fusion, records)", FirstStageSearcher, "run"),
    ("    channels and fusion", ChannelRanker, "rank"),
    ("      vector channel (in a worker thread: beside the lexical ones)", DenseSearcher, "search"),
    ("        query embedding", None, "embed_query"),
    ("        dense nearest neighbours (Chroma query)", ChromaStatementStore, "query"),
    ("      BM25 words", BM25Searcher, "search"),
    ("      formulas (lexical)", FormulaLexicalSearcher, "search"),
    ("      rank fusion", HybridSearcher, "fuse"),
    ("    records and vectors (memory or Chroma)", ChromaStatementStore, "get_with_vectors"),
    ("  learned ranker (features and scores)", LearnedRanker, "scores"),
    ("    features", learned_ranker_module, "feature_matrix"),
    ("uses and used-by counts of the hits (statement graph)", _MathRAG, "_counted"),
]


class StageClock:
    """Adds up the time spent in each stage's method while patched."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)

    @contextmanager
    def patched(self, rag: MathRAG) -> Iterator[None]:
        originals: list[tuple[Any, str, Callable[..., Any]]] = []
        for label, owner, method in STAGES:
            target = owner if owner is not None else type(rag.index.embedder)
            original = getattr(target, method)
            originals.append((target, method, original))
            setattr(target, method, self._timed(label, original))
        try:
            yield
        finally:
            for target, method, original in originals:
                setattr(target, method, original)

    def _timed(self, label: str, function: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(function)
        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                self.seconds[label] += time.perf_counter() - started

        return timed


def configure(rag: MathRAG, name: str, threads: int) -> None:
    """One of the configurations (see the module's docstring), caches emptied."""
    embedder = rag.index.embedder
    keep = name in ("default", "channels in turn")
    embedder.query_threads = 1 if name != "before" else None
    embedder.onnx_dir = rag.settings.resolved_onnx_dir if keep else None
    embedder._query_encoder_tried = False  # built again (or not) at the next query
    rag.index.store.cache.clear()
    rag.index.store.cache.max_statements = 20_000 if keep else 0
    stack = rag.search_stack
    if stack.learned_ranker_configured():
        # kept: the profiles made at ingest (issue 75), read by the default stack only
        kept = rag.index.ranking_profiles.read if name == "default" else None
        stack.learned_ranker.profiles = StatementProfiles(max_statements=20_000 if keep else 0, kept=kept)
    torch.set_num_threads(threads)
    ranker = stack.ranker
    if not hasattr(ranker, "parallel_executor"):
        ranker.parallel_executor = ranker.executor  # type: ignore[attr-defined]
    ranker.executor = ranker.parallel_executor if name == "default" else None  # type: ignore[attr-defined]


def one_pass(rag: MathRAG, questions: list[str]) -> tuple[list[float], dict[str, float]]:
    clock = StageClock()
    latencies = []
    with clock.patched(rag):
        for question in questions:
            started = time.perf_counter()
            rag.search(question, k=10)
            latencies.append((time.perf_counter() - started) * 1000)
    return latencies, {label: seconds * 1000 / len(questions) for label, seconds in clock.seconds.items()}


def summary(latencies: list[float]) -> dict[str, float]:
    quantiles = statistics.quantiles(latencies, n=100, method="inclusive")
    return {"p50_ms": round(quantiles[49], 1), "p95_ms": round(quantiles[94], 1)}


def stage_row(label: str, values: list[float]) -> str:
    return f"| {label.replace('  ', '&nbsp;&nbsp;')} | " + " | ".join(str(value) for value in values) + " |"


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
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results")
    args = parser.parse_args()
    index = args.index or eval_index_dir(Settings())
    rag = MathRAG(Settings(index_dir=index, data_dir=index.parent / "data"))
    set_lines = (ROOT / "eval/questions/user-questions.v1.jsonl").read_text().splitlines()[1:]  # after the header
    questions = [json.loads(line)["query"] for line in set_lines][: args.queries]
    threads = torch.get_num_threads()
    for question in ("warm up", "the models load", "Nakayama's lemma"):
        rag.search(question, k=10)
    runs: dict[str, dict[str, Any]] = {}
    for name in ("before", "one thread", "channels in turn", "default"):
        configure(rag, name, threads)
        rag.search("the query encoder is built", k=10)
        floor = query_embedding_floor(rag.index.embedder, questions)
        for phase in ("cold", "warm"):
            latencies, stages = one_pass(rag, questions)
            timing = summary(latencies)
            runs[f"{name}, {phase}"] = {
                **timing,
                "query_embedding_floor": floor,
                "p50_x_embedding": ratio(timing["p50_ms"], floor["p50_ms"]),
                "p95_x_embedding": ratio(timing["p95_ms"], floor["p50_ms"]),
                "stages_ms": {k: round(v, 1) for k, v in stages.items()},
            }
    result = {
        "index": str(index),
        "statements": rag.index.count(),
        "machine": f"{platform.platform()}, {os.cpu_count()} CPUs, torch threads {threads}",
        "searches_per_pass": len(questions),
        "runs": runs,
        "status_ms": status_ms(rag),
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "search_profile.json").write_text(json.dumps(result, indent=2) + "\n")
    names = list(runs)
    lines = [
        "# Where a search's time goes",
        "",
        f"`MathRAG.search(k=10)`, default stack, {result['statements']:,} statements ({index}), {result['machine']}; "
        f"{len(questions)} user-shaped questions one after another per pass. Cold: the questions' statements met "
        "for the first time; warm: the same questions again. Stage times are wall-clock ms per search, measured "
        "around each stage (indented rows are inside the row above).",
        "",
        "| | " + " | ".join(names) + " |",
        "| --- |" + " ---: |" * len(names),
        "| **search p50 ms** | " + " | ".join(f"**{runs[n]['p50_ms']}**" for n in names) + " |",
        "| search p95 ms | " + " | ".join(str(runs[n]["p95_ms"]) for n in names) + " |",
        "| floor: the query embedding alone, p50 ms (same run) | "
        + " | ".join(str(runs[n]["query_embedding_floor"]["p50_ms"]) for n in names)
        + " |",
        "| **search p50 / embedding p50** | " + " | ".join(f"**{runs[n]['p50_x_embedding']}x**" for n in names) + " |",
        "| search p95 / embedding p50 | " + " | ".join(f"{runs[n]['p95_x_embedding']}x" for n in names) + " |",
        *(
            f"| {label.replace('  ', '&nbsp;&nbsp;')} | "
            + " | ".join(str(runs[n]["stages_ms"].get(label, 0.0)) for n in names)
            + " |"
            for label, _owner, _method in STAGES
        ),
        "",
        f"The index's status (median of 5): `/v1/status` by each store's count {result['status_ms']['counts']} ms; "
        f"by ids (`rag-app status`, `/v1/status?full=true`) {result['status_ms']['ids']} ms.",
    ]
    (args.out / "search_profile.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
