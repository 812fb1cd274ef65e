"""Choose the reranker's depth N and its weight beside the fused score, on the known-item development sets.

Each query is searched once 50 deep and its candidates scored once by the cross-encoder; every
(N, weight) pair is then evaluated from those scores, with the reranker's measured time per N.

    .venv/bin/python scripts/tune_rerank.py [--model DIR] [--sets eval/sets/stacks-slogans-dev.v2.jsonl ...]

Writes eval/runs/rerank/tuning.md and .json. We tune on these sets: the chosen values are checked on
the other development sets by `rag-app eval --dev`, and independently on held-out queries.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
from tqdm import tqdm

from rag_app.datasets.query_set import QuerySet
from rag_app.evaluation.runner import eval_index_dir
from rag_app.pipeline import MathRAG
from rag_app.settings import Settings
from retriever.models.cross_encoder_reranker import CrossEncoderReranker, _min_max

DEFAULT_SETS = ("stacks-slogans-dev", "stacks-formulas", "stacks-names", "hott-named")
DEPTHS = (10, 20, 30, 50)
WEIGHTS = (0.0, 0.2, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model", default=None, help="reranker directory (default: rerank.model)")
    parser.add_argument("--sets", nargs="*", type=Path, default=None)
    parser.add_argument("--mode", default="hybrid-formula")
    parser.add_argument("--limit", type=int, default=None, help="first N queries of each set")
    parser.add_argument("--out", type=Path, default=Path("eval/runs/rerank"))
    args = parser.parse_args()
    settings = Settings.load()
    sets_dir = settings.evaluation.sets_dir
    paths = args.sets or [sets_dir / f"{name}.v2.jsonl" for name in DEFAULT_SETS]
    rag = MathRAG(settings.model_copy(update={"index_dir": eval_index_dir(settings)}))
    rerank = settings.rerank
    reranker = CrossEncoderReranker(args.model or rerank.model, "cpu", rerank.max_length, rerank.batch_size)
    results: dict[str, dict] = {}
    for path in paths:
        query_set = QuerySet.load(path)
        queries = query_set.queries[: args.limit] if args.limit else query_set.queries
        ranks: dict[tuple[int, float], list[int]] = {(n, w): [] for n in DEPTHS for w in WEIGHTS}
        seconds: dict[int, list[float]] = {n: [] for n in DEPTHS}
        for query in tqdm(queries, desc=query_set.name, unit="query"):
            hits = rag.search_stack.first_stage().search(query.text, max(DEPTHS), args.mode)
            texts = [hit.record.search_text() for hit in hits]
            relevant = [hit.record.docno in query.relevant for hit in hits]
            fused = np.array([hit.score for hit in hits])
            for n in DEPTHS:
                started = time.perf_counter()
                logits = reranker.score(query.text, texts[:n])
                seconds[n].append(time.perf_counter() - started)
                for w in WEIGHTS:
                    combined = w * _min_max(logits) + (1 - w) * _min_max(fused[:n]) if n else np.zeros(0)
                    order = [int(i) for i in np.argsort(-combined, kind="stable")] + list(range(n, len(hits)))
                    rank = next((r for r, i in enumerate(order, start=1) if relevant[i]), 0)
                    ranks[(n, w)].append(rank)
        rows = []
        for (n, w), values in ranks.items():
            array = np.array(values)
            found = array > 0
            rows.append({
                "N": n, "weight": w,
                "hit@1": float(np.mean(found & (array <= 1))), "hit@10": float(np.mean(found & (array <= 10))),
                "mrr@10": float(np.mean(np.where(found & (array <= 10), 1.0 / np.maximum(array, 1), 0.0))),
            })  # fmt: skip
        latency = {n: {"p50_ms": 1000 * float(np.percentile(s, 50)), "p95_ms": 1000 * float(np.percentile(s, 95))}
                   for n, s in seconds.items()}  # fmt: skip
        results[query_set.name] = {"queries": len(queries), "rows": rows, "rerank_latency": latency}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "tuning.json").write_text(json.dumps({"model": reranker.identity, "mode": args.mode,
                                                      "sets": results}, indent=1) + "\n")  # fmt: skip
    lines = [f"# Reranker depth and weight ({reranker.identity}, first stage {args.mode})", "",
             "Weight 0 is the first stage alone. Rerank latency: the cross-encoder only, 2 CPUs.", ""]  # fmt: skip
    for name, result in results.items():
        lines += [f"## {name} ({result['queries']} queries)", "", "| N | weight | Hit@1 | Hit@10 | MRR@10 |",
                  "| ---: | ---: | ---: | ---: | ---: |"]  # fmt: skip
        lines += [f"| {r['N']} | {r['weight']:.1f} | {r['hit@1']:.3f} | {r['hit@10']:.3f} | {r['mrr@10']:.3f} |"
                  for r in result["rows"]]  # fmt: skip
        lines += ["", "| N | rerank p50 ms | rerank p95 ms |", "| ---: | ---: | ---: |"]
        lines += [f"| {n} | {v['p50_ms']:.0f} | {v['p95_ms']:.0f} |" for n, v in result["rerank_latency"].items()]
        lines.append("")
    (args.out / "tuning.md").write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
