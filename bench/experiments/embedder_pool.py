"""Benchmark (issue 60, points 1 and 3): embedders compared dense-only on one pool of statements, and fused.

Embedding the whole development index with a slow model (nomic-embed-text-v1.5 through llama.cpp: about
2.8 statements/s on 2 CPUs, 1.8 hours for its 17,780 statements) does not fit a session, so each embedder
reads the same *pool*: every statement a query of the chosen sets judges relevant, plus a seeded sample of
the others as distractors. The index must hold every set's answers: the question index
(``scripts/build_question_index.py``: the development index plus the demo corpus and the written MSE
threads). Each embedder ranks the pool for every query by cosine; pairs are fused by
min-max linear fusion (the search stack's ``linear_fusion``), as ``build-dense2`` would fuse a second model
beside the first. Scored with ir-measures (Success@10, RR@10), paired against the first spec.

Vectors are cached per embedder in ``OUT/vectors/`` (a rerun or a new spec embeds only what it lacks),
so a fine-tune (``registry:NAME``) is measured on the same pool in minutes.

    python bench/experiments/embedder_pool.py --index ~/.cache/rag-app-questions/index --out bench/results/embedders \
        --spec packaged:all-MiniLM-L6-v2 --spec packaged:nomic-embed-text-v1.5 --fuse 0,1

An experiment (bench/experiments/): it decided something once. Decision recorded in
docs/retrieval-and-evaluation.md, section "Issue 60: the stronger packaged embedder, and vectors that follow
in the background": MiniLM stays the default; nomic and EmbeddingGemma are opt-in second embeddings.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

import ir_measures
import numpy as np
from headline_field import headline
from ir_measures import RR, Success
from scipy.stats import wilcoxon

from rag_app.datasets.query_set import QuerySet
from rag_app.settings import Settings
from rag_app.training.index_store import open_index_store
from retriever.models.embedder_backends import embedder_for
from retriever.search.rank_fusion import linear_fusion
from retriever.types import ScoredId

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_SETS = {
    "stacks-label-words": ROOT / "eval/sets/stacks-label-words.v2.jsonl",
    "stacks-slogans-dev": ROOT / "eval/sets/stacks-slogans-dev.v2.jsonl",
    "research-questions": ROOT / "eval/questions/research-questions.v1.jsonl",
    "user-questions": ROOT / "eval/questions/user-questions.v1.jsonl",
}
DEPTH = 100
MEASURES = [Success @ 10, RR @ 10]


def spec_slug(spec: str, max_seq_length: int) -> str:
    digest = hashlib.sha1(spec.encode()).hexdigest()[:8]
    readable = "".join(c if c.isalnum() or c in "-._" else "-" for c in spec)[-48:]
    return f"{readable}-{max_seq_length}-{digest}"


def cached_vectors(
    spec: str, texts: dict[str, str], out: Path, max_seq_length: int, settings: Settings
) -> tuple[dict[str, np.ndarray], float]:
    """Each pool statement's vector by ``spec`` (cached in ``out``), and statements/s of what was embedded now."""
    path = out / "vectors" / f"{spec_slug(spec, max_seq_length)}.npz"
    have: dict[str, np.ndarray] = {}
    if path.exists():
        stored = np.load(path)
        have = dict(zip(stored["ids"].tolist(), stored["vectors"], strict=True))
    missing = [docno for docno in texts if docno not in have]
    rate = float("nan")
    if missing:
        embedder = embedder_for(
            spec, max_seq_length=max_seq_length, registry_dir=settings.resolved_registry_dir, batch_size=32
        )
        started = time.perf_counter()
        for start in range(0, len(missing), 64):  # saved as it goes: a killed run resumes
            batch = missing[start : start + 64]
            vectors = embedder.embed_documents([texts[docno] for docno in batch], show_progress=False)
            have.update(zip(batch, vectors, strict=True))
            path.parent.mkdir(parents=True, exist_ok=True)
            ids = list(have)
            np.savez(path, ids=np.array(ids), vectors=np.stack([have[i] for i in ids]))
            done = start + len(batch)
            print(
                f"  {spec}: {done}/{len(missing)} statements, {done / (time.perf_counter() - started):.2f}/s",
                flush=True,
            )
        rate = len(missing) / (time.perf_counter() - started)
    return have, rate


def ranking(query_vectors: np.ndarray, docnos: list[str], matrix: np.ndarray) -> list[list[ScoredId]]:
    scores = query_vectors @ matrix.T
    runs = []
    for row in scores:
        top = np.argsort(-row)[:DEPTH]
        runs.append([ScoredId(docnos[i], float(row[i])) for i in top])
    return runs


def measure(set_queries, runs: dict[str, list[ScoredId]]) -> dict[str, dict[str, float]]:
    """Per query: Success@10 and RR@10."""
    qrels = [ir_measures.Qrel(q.qid, d, int(g)) for q in set_queries for d, g in q.relevant.items()]
    run = [ir_measures.ScoredDoc(qid, hit.id, hit.score) for qid, hits in runs.items() for hit in hits]
    per: dict[str, dict[str, float]] = {q.qid: {"Success@10": 0.0, "RR@10": 0.0} for q in set_queries}
    for metric in ir_measures.iter_calc(MEASURES, qrels, run):
        per[metric.query_id][str(metric.measure)] = float(metric.value)
    return per


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument(
        "--spec", action="append", required=True, help="embedder spec (repeat; the first is the baseline)"
    )
    parser.add_argument("--fuse", action="append", default=[], help="I,J: fuse spec I with spec J (weight 1 each)")
    parser.add_argument("--max-seq-length", type=int, default=256)
    parser.add_argument("--queries-per-set", type=int, default=400)
    parser.add_argument("--distractors", type=int, default=1500)
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument(
        "--context",
        action="store_true",
        help="read each statement after its headline (name, subsection, section, paper title; headline_field.py)"
        " (use another --out: vectors are cached per spec)",
    )
    args = parser.parse_args()
    settings = Settings()
    rng = random.Random(args.seed)

    sets = {}
    for name, path in DEFAULT_SETS.items():
        queries = [q for q in QuerySet.load(path).queries if any(g > 0 for g in q.relevant.values())]
        if len(queries) > args.queries_per_set:
            queries = rng.sample(queries, args.queries_per_set)
        sets[name] = queries
    store, _ = open_index_store(args.index)
    records = {record.docno: record for record in store.iter_records()}
    for name, queries in sets.items():  # a query whose answer is not in the index measures nothing here
        sets[name] = [q for q in queries if any(g > 0 and d in records for d, g in q.relevant.items())]
    golds = {d for queries in sets.values() for q in queries for d, g in q.relevant.items() if g > 0 and d in records}
    others = sorted(set(records) - golds)
    pool = sorted(golds) + rng.sample(others, min(args.distractors, len(others)))
    texts = {docno: records[docno].search_text() for docno in pool}
    if args.context:  # issue 60, point 2: the statement read with where it sits (no label words: judged on them)
        texts = {docno: f"{headline(records[docno], [], label=False)} {text}" for docno, text in texts.items()}
    print(f"pool: {len(golds)} judged statements + {len(pool) - len(golds)} distractors", flush=True)

    ranked: dict[str, dict[str, dict[str, list[ScoredId]]]] = {}  # spec -> set -> qid -> hits
    rates = {}
    for spec in args.spec:
        vectors, rates[spec] = cached_vectors(spec, texts, args.out, args.max_seq_length, settings)
        matrix = np.stack([vectors[docno] for docno in pool])
        embedder = embedder_for(spec, max_seq_length=args.max_seq_length, registry_dir=settings.resolved_registry_dir)
        ranked[spec] = {}
        for name, queries in sets.items():
            query_vectors = np.stack([embedder.embed_query(q.text) for q in queries])
            ranked[spec][name] = dict(zip([q.qid for q in queries], ranking(query_vectors, pool, matrix), strict=True))
    for pair in args.fuse:
        first, second = (args.spec[int(i)] for i in pair.split(","))
        label = f"{first} + {second}"
        ranked[label] = {
            name: {
                qid: linear_fusion({"a": hits, "b": ranked[second][name][qid]})[:DEPTH] for qid, hits in by_qid.items()
            }
            for name, by_qid in ranked[first].items()
        }

    baseline = args.spec[0]
    rows, report = (
        [],
        {
            "pool": {"judged": len(golds), "distractors": len(pool) - len(golds)},
            "max_seq_length": args.max_seq_length,
            "statements_per_s": rates,
            "sets": {},
        },
    )
    for name, queries in sets.items():
        base = measure(queries, ranked[baseline][name])
        report["sets"][name] = {"queries": len(queries)}
        for label, by_set in ranked.items():
            per = measure(queries, by_set[name])
            entry = {}
            for metric in ("Success@10", "RR@10"):
                values = [per[q.qid][metric] for q in queries]
                base_values = [base[q.qid][metric] for q in queries]
                differs = any(a != b for a, b in zip(values, base_values, strict=True))
                p = float(wilcoxon(values, base_values).pvalue) if differs and label != baseline else 1.0
                entry[metric] = {"mean": float(np.mean(values)), "p": p}
            report["sets"][name][label] = entry
            rows.append(
                (
                    name,
                    len(queries),
                    label,
                    entry["Success@10"]["mean"],
                    entry["RR@10"]["mean"],
                    entry["Success@10"]["p"],
                    entry["RR@10"]["p"],
                )
            )
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "report.json").write_text(json.dumps(report, indent=2) + "\n")
    lines = [
        f"# Embedders on one pool ({len(golds)} judged + {len(pool) - len(golds)} distractors, "
        f"{args.max_seq_length} tokens)",
        "",
        "| set (queries) | embedder | Hit@10 | MRR@10 | p (Hit, MRR) vs first |",
        "| --- | --- | ---: | ---: | --- |",
    ]
    for name, size, label, hit, mrr, p_hit, p_mrr in rows:
        lines.append(f"| {name} ({size}) | {label} | {hit:.3f} | {mrr:.3f} | {p_hit:.3g}, {p_mrr:.3g} |")
    lines += ["", "Statements/s embedded in this run (NaN: read from the cache):", ""]
    lines += [f"- {spec}: {rate:.2f}" for spec, rate in rates.items()]
    (args.out / "report.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
