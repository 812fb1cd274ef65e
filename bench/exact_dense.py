"""Exact dense search against the HNSW graph (issue 86): what it costs, and whether two processes rank the same.

Three parts:

1. **The matrix product alone** over synthetic normalised vectors (384 and 768 dimensions, 18k to 400k rows):
   the p50 of one query and the matrix's memory, which set ``store.hnsw.exact_search_max``.
2. **On a real index** (``--index``): the vectors read once (seconds), one query through the graph and through the
   matrix (p50), the graph's recall@10 and @100 of the exact neighbours, and the whole search's p50 with the
   exact search off and on, interleaved in one process.
3. **Two fresh processes** (``--processes``): ``rag-app search --queries`` twice, each in a new process, with the
   exact search off (the graph, as before) and on; how many questions change their top 10.

    .venv/bin/python bench/exact_dense.py --index ~/.cache/rag-app-questions/index [--processes]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

from retriever.store.exact_neighbours import nearest_rows

ROOT = Path(__file__).resolve().parents[1]
QUESTION_SETS = ("research-questions.v1.jsonl", "stacks-research-questions.v1.jsonl")


def synthetic(repeats: int = 30) -> list[dict[str, float]]:
    rng = np.random.default_rng(0)
    rows = []
    for dim in (384, 768):
        for size in (18_000, 50_000, 100_000, 200_000, 400_000):
            matrix = rng.standard_normal((size, dim), dtype=np.float32)
            matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
            query = rng.standard_normal((1, dim)).astype(np.float32)
            times = []
            for _ in range(repeats):
                started = time.perf_counter()
                nearest_rows(matrix, query, 100)
                times.append((time.perf_counter() - started) * 1000)
            rows.append({"dim": dim, "vectors": size, "p50_ms": float(np.median(times)), "mb": matrix.nbytes / 1e6})
            print(f"  {dim} dims, {size:>7,} vectors: p50 {rows[-1]['p50_ms']:.1f} ms, {rows[-1]['mb']:.0f} MB",
                  flush=True)  # fmt: skip
            del matrix
    return rows


def questions() -> list[str]:
    found = []
    for name in QUESTION_SETS:
        lines = (ROOT / "eval" / "questions" / name).read_text(encoding="utf-8").splitlines()[1:]
        found.extend(json.loads(line)["query"] for line in lines)
    return found


def on_index(index: Path, queries: list[str]) -> dict[str, object]:
    from rag_app import MathRAG, Settings
    from retriever.models.query_adapter import QueryAdapter, query_vector
    from retriever.store.chroma_store import collection_nearest

    def opened(exact_max: int) -> MathRAG:
        settings = Settings(index_dir=index).with_overrides({"store.hnsw.exact_search_max": exact_max})
        return MathRAG.open(index, settings)

    exact, graph = opened(1_000_000), opened(0)
    store = exact.index.store
    adapter = QueryAdapter.configured(exact.settings.retrieval.query_adapter, exact.index.embedder.identity)
    vectors = [query_vector(exact.index.embedder, query, adapter) for query in queries]
    started = time.perf_counter()
    store.query(vectors[0], 1)  # the first exact query reads every vector into the matrix
    read_s = time.perf_counter() - started
    graph_ms, exact_ms, recall10, recall100 = [], [], [], []
    for vector in vectors:
        t = time.perf_counter()
        approximate = collection_nearest(graph.index.store._collection, vector, 100)
        graph_ms.append((time.perf_counter() - t) * 1000)
        t = time.perf_counter()
        right = store.query(vector, 100)
        exact_ms.append((time.perf_counter() - t) * 1000)
        truth10, truth100 = {h.id for h in right[:10]}, {h.id for h in right}
        recall10.append(len(truth10 & {h.id for h in approximate[:10]}) / max(1, len(truth10)))
        recall100.append(len(truth100 & {h.id for h in approximate}) / max(1, len(truth100)))
    search_ms: dict[str, list[float]] = {"graph": [], "exact": []}
    for query in queries[:10]:  # warm both
        graph.search(query, 10), exact.search(query, 10)
    for query in queries:  # interleaved: the machine's load falls on both alike
        for name, rag in (("graph", graph), ("exact", exact)):
            t = time.perf_counter()
            rag.search(query, 10)
            search_ms[name].append((time.perf_counter() - t) * 1000)
    return {
        "statements": store.count(),
        "matrix_read_s": read_s,
        "graph_query_p50_ms": float(np.median(graph_ms)),
        "exact_query_p50_ms": float(np.median(exact_ms)),
        "graph_recall_at_10": float(np.mean(recall10)),
        "graph_recall_at_100": float(np.mean(recall100)),
        "search_p50_ms": {name: float(np.median(times)) for name, times in search_ms.items()},
        "search_p95_ms": {name: float(np.percentile(times, 95)) for name, times in search_ms.items()},
        "queries": len(queries),
    }


def two_processes(index: Path, queries: list[str], work: Path) -> dict[str, int]:
    """How many queries change their top 10 between two fresh `rag-app search --queries` processes."""
    work.mkdir(parents=True, exist_ok=True)
    listed = work / "queries.txt"
    listed.write_text("\n".join(queries) + "\n", encoding="utf-8")
    rag_app = Path(sys.executable).with_name("rag-app")
    changed = {}
    for name, exact_max in (("graph", "0"), ("exact", "100000")):
        runs = []
        for _ in range(2):
            env = {**os.environ, "RAG_APP_STORE__HNSW__EXACT_SEARCH_MAX": exact_max}
            command = [str(rag_app), "search", "--queries", str(listed), "--json", "--k", "10", "--index", str(index)]
            done = subprocess.run(command, capture_output=True, text=True, env=env, check=True, timeout=1800)
            runs.append([[hit["id"] for hit in json.loads(line)["results"]] for line in done.stdout.splitlines()])
        changed[name] = sum(a != b for a, b in zip(*runs, strict=True))
        print(f"  {name}: {changed[name]} of {len(queries)} questions change their top 10", flush=True)
    return changed


def report(results: dict[str, object]) -> str:
    lines = ["# Exact dense search against the HNSW graph (issue 86)", "",
             f"x86_64, 2 CPUs; {time.strftime('%Y-%m-%d')}. Regenerate: `python bench/exact_dense.py --index INDEX "
             "--processes`.", "", "## The matrix product alone (one query, top 100)", "",
             "| dims | vectors | p50 ms | matrix MB |", "| ---: | ---: | ---: | ---: |"]  # fmt: skip
    for row in results["synthetic"]:  # type: ignore[union-attr]
        lines.append(f"| {row['dim']} | {row['vectors']:,} | {row['p50_ms']:.1f} | {row['mb']:.0f} |")
    index = results.get("index")
    if index:
        lines += ["", f"## On the index ({index['statements']:,} statements, {index['queries']} questions)", "",
                  f"- the vectors read once into the matrix: {index['matrix_read_s']:.1f} s",
                  f"- one query, top 100: graph p50 {index['graph_query_p50_ms']:.1f} ms, exact "
                  f"{index['exact_query_p50_ms']:.1f} ms",
                  f"- the graph's recall of the exact neighbours: @10 {index['graph_recall_at_10']:.4f}, "
                  f"@100 {index['graph_recall_at_100']:.4f}",
                  f"- the whole search (`MathRAG.search`, k=10, interleaved): p50 graph "
                  f"{index['search_p50_ms']['graph']:.1f} ms, exact {index['search_p50_ms']['exact']:.1f} ms; p95 "
                  f"{index['search_p95_ms']['graph']:.1f} / {index['search_p95_ms']['exact']:.1f} ms"]  # fmt: skip
    processes = results.get("processes")
    if processes:
        lines += ["", "## Two fresh processes (`rag-app search --queries`, top 10)", "",
                  f"- the graph (`store.hnsw.exact_search_max = 0`): {processes['graph']} questions differ",
                  f"- exact: {processes['exact']} questions differ"]  # fmt: skip
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", type=Path, help="an index to measure on (the question index: 17-18k statements)")
    parser.add_argument("--processes", action="store_true", help="also run two fresh processes per setting")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    args = parser.parse_args()
    print("The matrix product alone:", flush=True)
    results: dict[str, object] = {"synthetic": synthetic()}
    if args.index:
        queries = questions()
        print(f"On {args.index} ({len(queries)} questions):", flush=True)
        results["index"] = on_index(args.index, queries)
        if args.processes:
            results["processes"] = two_processes(args.index, queries, args.out / "exact_dense-work")
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "exact_dense.md").write_text(report(results), encoding="utf-8")
    print(report(results))


if __name__ == "__main__":
    main()
