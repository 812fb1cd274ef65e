"""Benchmark: can int8 inference make a stronger packaged encoder affordable on 2 CPUs?

For each packaged encoder (all-MiniLM-L6-v2, the default; all-mpnet-base-v2, opt-in), float32 against
int8 (torch dynamic quantization of every linear layer: weights stored in int8, activations quantized on
the fly; no new dependency, no export step), on the same machine:

- statements embedded per second (statements of the question index, as the index embeds them);
- one query's embedding time, p50;
- how close int8 stays: mean cosine between the float32 and the int8 vector of each statement;
- retrieval, dense only and without query adapter: MRR@10 and Hit@10 of the user-shaped questions
  (``eval/questions/user-questions.v1.jsonl``) against a pool of their answering statements plus
  ``--distractors`` random others (the whole index would take mpnet an hour here).

    python bench/experiments/encoder_int8.py [--distractors 600] [--index ~/.cache/rag-app-questions/index]

Writes ``bench/results/encoder_int8.{json,md}``.

An experiment (bench/experiments/): it decided something once. Decision recorded in
docs/retrieval-and-evaluation.md, section "A third distribution: questions in the shape users type (issue
47)", "int8 encoders": not adopted (int8 vectors cannot mix with float32 ones).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

import numpy as np
import torch

from rag_app.datasets.query_set import QuerySet
from rag_app.settings import Settings
from rag_app.training.index_store import open_index_store
from retriever.models.embedder import Embedder
from retriever.text.query_notation import to_latex

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
MODELS = ("packaged:all-MiniLM-L6-v2", "packaged:all-mpnet-base-v2")


def quantized(embedder: Embedder) -> Embedder:
    """``embedder`` with its model's linear layers in int8 (the model is loaded, then replaced)."""
    model = torch.ao.quantization.quantize_dynamic(embedder.model, {torch.nn.Linear}, dtype=torch.qint8)
    embedder.__dict__["model"] = model  # the cached property, set to the quantized model
    return embedder


def retrieval(query_vectors: np.ndarray, pool_vectors: np.ndarray, gold: list[set[int]]) -> dict[str, float]:
    top = np.argsort(-(query_vectors @ pool_vectors.T), axis=1)[:, :10]
    ranks = [
        next((r for r, row in enumerate(found, 1) if row in wanted), None)
        for found, wanted in zip(top, gold, strict=True)
    ]
    return {
        "mrr@10": round(float(np.mean([1 / r if r else 0.0 for r in ranks])), 4),
        "hit@10": round(float(np.mean([r is not None for r in ranks])), 4),
    }


def measure(spec: str, int8: bool, pool: list[str], queries: list[str], gold: list[set[int]]) -> dict[str, Any]:
    embedder = Embedder(spec, batch_size=32, max_seq_length=256)
    if int8:
        quantized(embedder)
    embedder.embed_documents(pool[:32])  # warm-up: the first batch pays for allocation
    started = time.perf_counter()
    pool_vectors = embedder.embed_documents(pool, show_progress=True)
    per_second = len(pool) / (time.perf_counter() - started)
    times = []
    for query in queries[:50]:
        started = time.perf_counter()
        embedder.embed_documents([query])
        times.append((time.perf_counter() - started) * 1000)
    query_vectors = embedder.embed_queries(queries)
    return {
        "model": spec,
        "weights": "int8" if int8 else "float32",
        "statements_per_s": round(per_second, 1),
        "query_ms_p50": round(float(np.percentile(times, 50)), 1),
        **retrieval(query_vectors, pool_vectors, gold),
        "_vectors": pool_vectors,
    }


def markdown(result: dict[str, Any]) -> str:
    lines = [
        "# int8 inference of the packaged encoders (float32 against int8, same machine)",
        "",
        f"Command: `{result['command']}`",
        "",
        f"- machine: {result['machine']}; torch {result['torch']}, {result['threads']} threads",
        f"- pool: {result['pool']} statements ({result['answering']} answering ones + random others); "
        f"queries: {result['queries']} user-shaped questions, dense only, no query adapter",
        "",
        "| model | weights | statements/s | query ms p50 | cosine to float32 | MRR@10 | Hit@10 |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for row in result["rows"]:
        cosine = "—" if row.get("cosine_to_float32") is None else f"{row['cosine_to_float32']:.4f}"
        lines.append(
            f"| {row['model'].removeprefix('packaged:')} | {row['weights']} | {row['statements_per_s']} | "
            f"{row['query_ms_p50']} | {cosine} | {row['mrr@10']:.3f} | {row['hit@10']:.3f} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--index", type=Path, default=Path.home() / ".cache/rag-app-questions/index")
    parser.add_argument("--set", type=Path, default=ROOT / "eval/questions/user-questions.v1.jsonl")
    parser.add_argument("--distractors", type=int, default=600)
    parser.add_argument("--models", nargs="+", default=list(MODELS))
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    if not (args.index / "manifest.json").exists():
        sys.exit(f"no index at {args.index}: run `python scripts/build_question_index.py` first")
    store, _ = open_index_store(args.index, Settings().store.connection())
    records = list(store.iter_records())
    query_set = QuerySet.load(args.set)
    wanted = {docno for query in query_set.queries for docno in query.relevant}
    answering = [r for r in records if r.docno in wanted]
    others = [r for r in records if r.docno not in wanted]
    pool_records = answering + random.Random(47).sample(others, min(args.distractors, len(others)))
    row_of: dict[str, list[int]] = {}
    for row, record in enumerate(pool_records):
        row_of.setdefault(record.docno, []).append(row)
    pool = [record.search_text() for record in pool_records]
    queries = [to_latex(query.text) for query in query_set.queries]  # as the default search reads them
    gold = [{row for docno in query.relevant for row in row_of.get(docno, [])} for query in query_set.queries]
    rows = []
    for spec in args.models:
        for int8 in (False, True):
            print(f"{spec} {'int8' if int8 else 'float32'}", file=sys.stderr)
            rows.append(measure(spec, int8, pool, queries, gold))
            if int8:
                full, small = rows[-2].pop("_vectors"), rows[-1].pop("_vectors")
                rows[-1]["cosine_to_float32"] = round(float(np.mean(np.sum(full * small, axis=1))), 4)
    result = {
        "command": "python bench/experiments/encoder_int8.py " + " ".join(sys.argv[1:]),
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs",
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "pool": len(pool),
        "answering": len(answering),
        "queries": len(queries),
        "rows": rows,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "encoder_int8.json").write_text(json.dumps(result, indent=2) + "\n")
    (args.out / "encoder_int8.md").write_text(markdown(result))
    print(markdown(result))


if __name__ == "__main__":
    main()
