"""What the reranker adds to a search: p50/p95 of the first stage, the cross-encoder, and both, per query.

Runs the development sets' queries (the slogans, the formulas and the statement names by default)
against the development index (`rag-app eval --dev` builds it) with the `[rerank]` settings, the way
`ask` and the chat search (top_k sources, the fused top N reranked).

    .venv/bin/python bench/rerank_latency.py [--queries 200] [--device cpu] [--index DIR]

Each set's queries are also embedded alone in the same run (bench/floors.py), and every figure is given as
a ratio to that floor too, so that a slower or busier machine does not move the verdict.

Writes bench/results/rerank_latency.{json,md}.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import numpy as np
from floors import query_embedding_floor, ratio
from tqdm import tqdm

from rag_app.datasets.query_set import QuerySet
from rag_app.evaluation.runner import eval_index_dir
from rag_app.pipeline import MathRAG
from rag_app.settings import Settings

RESULTS = Path(__file__).parent / "results"
SETS = ("stacks-slogans-dev", "stacks-formulas", "stacks-names")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--queries", type=int, default=200, help="queries per set at most")
    parser.add_argument("--device", default=None, help="reranker device (default: settings)")
    parser.add_argument("--index", type=Path, help="the index to search (default: the development index)")
    args = parser.parse_args()
    settings = Settings.load()
    if args.device:
        settings.rerank.device = args.device
    rag = MathRAG(settings.model_copy(update={"index_dir": args.index or eval_index_dir(settings)}))
    searcher = rag.search_stack.reranking()
    k, mode = settings.retrieval.top_k, settings.retrieval.mode
    rows = {}
    for name in SETS:
        query_set = QuerySet.load(settings.evaluation.sets_dir / f"{name}.v2.jsonl")
        first_ms, rerank_ms, total_ms = [], [], []
        queries = query_set.queries[: args.queries]
        floor = query_embedding_floor(rag.index.embedder, [query.text for query in queries])
        for query in tqdm(queries, desc=name, unit="query"):
            started = time.perf_counter()
            rag.search_stack.first_stage().search(query.text, k, mode)
            first_ms.append((time.perf_counter() - started) * 1000)
            started = time.perf_counter()
            reranked = searcher.run(query.text, k, mode)
            total_ms.append((time.perf_counter() - started) * 1000)
            rerank_ms.append(reranked.rerank_ms)
        rows[name] = {
            "queries": len(first_ms),
            **{f"{part}_{p}_ms": round(float(np.percentile(values, q)), 1)
               for part, values in (("search", first_ms), ("rerank", rerank_ms), ("reranked_search", total_ms))
               for p, q in (("p50", 50), ("p95", 95))},
            "query_embedding_p50_ms": floor["p50_ms"],
        }  # fmt: skip
        rows[name].update(
            {f"{part}_p50_x_embedding": ratio(rows[name][f"{part}_p50_ms"], floor["p50_ms"])
             for part in ("search", "rerank", "reranked_search")}
        )  # fmt: skip
    result = {
        "machine": f"{platform.platform()}, {os.cpu_count()} CPUs",
        "reranker": searcher.reranker.identity,
        "device": searcher.reranker.device,
        "candidates": searcher.candidates,
        "max_length": searcher.reranker.max_length,
        "top_k": k,
        "mode": mode,
        "statements": rag.index.count(),
        "sets": rows,
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "rerank_latency.json").write_text(json.dumps(result, indent=1) + "\n")
    lines = [
        "# Reranker latency",
        "",
        f"{result['reranker']} on {result['device']}, top {result['candidates']} of `{mode}` reranked, "
        f"{result['max_length']} tokens per pair, {result['statements']:,} statements; {result['machine']}.",
        "",
        "In brackets: p50 in query embeddings, the floor (the set's queries embedded alone, same run).",
        "",
        "| set | queries | search p50 / p95 ms | rerank p50 / p95 ms | search + rerank p50 / p95 ms "
        "| floor: query embedding p50 ms |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name, row in rows.items():
        lines.append(
            f"| {name} | {row['queries']} | {row['search_p50_ms']} / {row['search_p95_ms']} "
            f"({row['search_p50_x_embedding']}x) | {row['rerank_p50_ms']} / {row['rerank_p95_ms']} "
            f"({row['rerank_p50_x_embedding']}x) | {row['reranked_search_p50_ms']} / {row['reranked_search_p95_ms']} "
            f"({row['reranked_search_p50_x_embedding']}x) | {row['query_embedding_p50_ms']} |"
        )
    (RESULTS / "rerank_latency.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
