"""What the second embedding model adds to a search, and what it costs to embed statements with it.

Runs the development sets' queries against the development index (`rag-app eval --dev -r
hybrid-formula+dense2` builds it and its second-model vectors) the way `ask` and the chat search:
top_k sources, the first stage fused with the `dense2` channel (`[second_embedding]` settings).
Neither embedder keeps a cache of recent queries, so each time is that of a new query (what a user sends).
Floors in the same run (bench/floors.py): each set's queries embedded alone by the first and by the second
model; every search time is also given as a ratio to the first model's, the search's own floor.

    .venv/bin/python bench/second_embedding_latency.py [--queries 200] [--embed 256] [--index DIR]

Writes bench/results/second_embedding_latency.{json,md}.
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


def percentiles(values: list[float]) -> tuple[float, float]:
    return round(float(np.percentile(values, 50)), 1), round(float(np.percentile(values, 95)), 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--queries", type=int, default=200, help="queries per set at most")
    parser.add_argument("--embed", type=int, default=256, help="statements embedded to time ingestion's share")
    parser.add_argument("--index", type=Path, help="the index to search (default: the development index)")
    args = parser.parse_args()
    settings = Settings.load()
    rag = MathRAG(settings.model_copy(update={"index_dir": args.index or eval_index_dir(settings)}))
    second = rag.indexes.companion_index()
    if second is None:
        raise SystemExit("second_embedding.model is `none`: nothing to measure")
    second.check()
    ensemble = rag.search_stack.first_stage(second_embedding=True)
    k, mode = settings.retrieval.top_k, settings.retrieval.mode
    rag.search_stack.first_stage().search("warm up", k, mode)
    ensemble.search("warm up", k, mode)
    rows = {}
    for name in SETS:
        query_set = QuerySet.load(settings.evaluation.sets_dir / f"{name}.v2.jsonl")
        first_ms, both_ms = [], []
        texts = [query.text for query in query_set.queries[: args.queries]]
        floor_first = query_embedding_floor(rag.index.embedder, texts)["p50_ms"]
        floor_second = query_embedding_floor(second.embedder, texts)["p50_ms"]
        for query in tqdm(query_set.queries[: args.queries], desc=name, unit="query"):
            started = time.perf_counter()
            rag.search_stack.first_stage().search(query.text, k, mode)
            first_ms.append((time.perf_counter() - started) * 1000)
            started = time.perf_counter()
            ensemble.search(query.text, k, mode)
            both_ms.append((time.perf_counter() - started) * 1000)
        (first_p50, first_p95), (both_p50, both_p95) = percentiles(first_ms), percentiles(both_ms)
        rows[name] = {"queries": len(first_ms), "search_p50_ms": first_p50, "search_p95_ms": first_p95,
                      "with_second_p50_ms": both_p50, "with_second_p95_ms": both_p95,
                      "floor_first_embedding_p50_ms": floor_first, "floor_second_embedding_p50_ms": floor_second,
                      "search_p50_x_embedding": ratio(first_p50, floor_first),
                      "with_second_p50_x_embedding": ratio(both_p50, floor_first)}  # fmt: skip
    records = [record for _, record in zip(range(args.embed), rag.index.store.iter_records(), strict=False)]
    texts = [record.search_text() for record in records]
    throughput = {}
    for label, embedder in (("first", rag.index.embedder), ("second", second.embedder)):
        embedder.embed_documents(texts[:8])  # load the model first
        started = time.perf_counter()
        embedder.embed_documents(texts)
        throughput[label] = round(len(texts) / (time.perf_counter() - started), 1)
    throughput["second_x_first"] = ratio(throughput["second"], throughput["first"])
    result = {
        "machine": f"{platform.platform()}, {os.cpu_count()} CPUs",
        "first_embedder": rag.index.embedder.identity,
        "second_embedder": second.embedder.identity,
        "second_max_seq_length": second.embedder.max_seq_length,
        "top_k": k,
        "mode": str(mode),
        "statements": rag.index.count(),
        "sets": rows,
        "statements_per_second": throughput,
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "second_embedding_latency.json").write_text(json.dumps(result, indent=1) + "\n")
    lines = [
        "# The second embedding model: latency and ingestion cost",
        "",
        f"`{mode}` with and without the `dense2` channel ({result['second_embedder']}, "
        f"{result['second_max_seq_length']} tokens), top {k}, {result['statements']:,} statements; "
        f"{result['machine']}.",
        "",
        "In brackets: p50 in the first model's query embeddings (the floor, same run).",
        "",
        "| set | queries | search p50 / p95 ms | with the second model p50 / p95 ms "
        "| floor: a query's embedding p50 ms, first / second model |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for name, row in rows.items():
        lines.append(
            f"| {name} | {row['queries']} | {row['search_p50_ms']} / {row['search_p95_ms']} "
            f"({row['search_p50_x_embedding']}x) | {row['with_second_p50_ms']} / {row['with_second_p95_ms']} "
            f"({row['with_second_p50_x_embedding']}x) | {row['floor_first_embedding_p50_ms']} / "
            f"{row['floor_second_embedding_p50_ms']} |"
        )
    lines += [
        "",
        f"Embedding {len(texts)} stored statements: {throughput['first']} statements/s with the first model, "
        f"{throughput['second']} with the second ({throughput['second_x_first']}x the first's: ingestion embeds with "
        "both).",
    ]
    (RESULTS / "second_embedding_latency.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
