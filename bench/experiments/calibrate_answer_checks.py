"""Calibrate the two answer checks on the development sets: not-found relevance and sentence support.

For each development query (a seeded sample per set), with the default retriever:

- relevance, answerable: the cosine between the query and its most similar top-k source when a
  relevant statement is among the top k;
- relevance, not in the corpus: the same after removing every statement of the relevant papers,
  as if the corpus did not hold the answer (the closest remaining statements are what the model
  would be given);
- support, supported: the attribution score of the query (a claim-like text about its statement)
  against its best-ranked relevant statement; unsupported: against the best-ranked statement of
  another paper.

``answers.min_relevance`` is set where 95% of answerable questions still get an answer (a refusal
of an answerable question costs more than one extra weak answer); ``answers.min_support`` where
Youden's J (true positive rate minus false positive rate) is highest. Writes
``bench/results/answer_checks.{json,md,png}``; the sets quote ../shared, so only numbers are kept.

    python bench/experiments/calibrate_answer_checks.py [--sets eval/sets/*.v2.jsonl] [--per-set 150] [--index DIR]

An experiment (bench/experiments/): it decided something once. Decision recorded in
docs/answers.md, section "Answers you can check": the not-found and sentence-support thresholds (`[answering]`
settings) were set from this run.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
from scipy.stats import mannwhitneyu
from tqdm import tqdm

from rag_app import MathRAG, Settings
from rag_app.answering.attribution import support_features
from rag_app.datasets.query_set import QuerySet
from rag_app.result_files import save_png

ROOT = Path(__file__).resolve().parents[1]
ANSWERABLE_KEPT = 0.95
SUPPORTED_KEPT = 0.80

# Questions no mathematics corpus answers (written for this benchmark): a second kind of negative.
OFF_TOPIC = [
    "What is the best recipe for sourdough bread?",
    "Who won the football world cup in 1998?",
    "How do I configure nginx as a reverse proxy?",
    "What is the capital of Australia?",
    "How long should I boil an egg for a soft yolk?",
    "Which programming language should I learn first?",
    "What causes the northern lights?",
    "How do vaccines train the immune system?",
    "When was the Eiffel Tower built?",
    "What is the plot of Hamlet?",
    "How do I reset a forgotten email password?",
    "What are the symptoms of the common cold?",
    "How do airplanes stay in the air?",
    "What is the difference between a crocodile and an alligator?",
    "How much water should a person drink each day?",
    "What is the tallest mountain in Africa?",
    "How do I remove a red wine stain from a carpet?",
    "Who painted the Mona Lisa?",
    "What does a mortgage broker do?",
    "How do I train a puppy to sit?",
    "What is photosynthesis in plants?",
    "How does a refrigerator keep food cold?",
    "What is the population of Tokyo?",
    "Why is the sky blue during the day?",
    "How do I write a good cover letter?",
    "What is the healthiest breakfast?",
    "How do solar panels generate electricity?",
    "Which planets have rings?",
    "What is the origin of the Olympic games?",
    "How can I improve my sleep quality?",
]


def auc(positives: list[float], negatives: list[float]) -> float:
    statistic = mannwhitneyu(positives, negatives, alternative="greater").statistic
    return float(statistic / (len(positives) * len(negatives)))


def youden_threshold(positives: list[float], negatives: list[float]) -> tuple[float, float]:
    candidates = sorted(set(positives) | set(negatives))
    pos, neg = np.asarray(positives), np.asarray(negatives)
    best = max(candidates, key=lambda t: (pos >= t).mean() - (neg >= t).mean())
    return float(best), float((pos >= best).mean() - (neg >= best).mean())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sets", nargs="+", type=Path, default=sorted((ROOT / "eval/sets").glob("*.v2.jsonl")))
    parser.add_argument("--per-set", type=int, default=150)
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--index", type=Path, default=None, help="dev index; default: DATA_DIR/eval/index/EMBEDDER")
    parser.add_argument("--out", type=Path, default=ROOT / "bench/results")
    args = parser.parse_args()

    settings = Settings.load()
    index_dir = args.index or settings.data_dir / "eval" / "index" / "packaged-all-MiniLM-L6-v2"
    rag = MathRAG.open(index_dir, settings)
    mode = settings.retrieval.mode
    samples: dict[str, list[float]] = {"answerable": [], "not_in_corpus": [], "supported": [], "unsupported": []}
    per_set: dict[str, dict[str, int]] = {}
    started = time.perf_counter()
    for path in args.sets:
        query_set = QuerySet.load(path)
        queries = [q for q in query_set.queries if q.relevant]
        random.Random(2026).shuffle(queries)
        counts = {"queries": 0, "answerable": 0}
        for query in tqdm(queries[: args.per_set], desc=query_set.name, unit="query"):
            hits = rag.search(query.text, 50, mode)
            if not hits:
                continue
            counts["queries"] += 1
            relevant_papers = {hit.record.paper_id for hit in hits if hit.record.docno in query.relevant}
            relevant_papers |= set(query.paper_ids)
            top = hits[: args.k]
            elsewhere = [hit for hit in hits if hit.record.paper_id not in relevant_papers][: args.k]
            ids = [hit.record.id for hit in top + elsewhere]
            vectors = rag.index.store.vectors(ids)
            query_vector = rag.index.embedder.embed_query(query.text)
            relevant_top = [hit for hit in top if hit.record.docno in query.relevant]
            if relevant_top:
                counts["answerable"] += 1
                samples["answerable"].append(max(float(vectors[h.record.id] @ query_vector) for h in top))
                best = relevant_top[0]
                features = support_features(query.text, query_vector, best.record.text, vectors[best.record.id])
                samples["supported"].append(features.score)
            if elsewhere:
                samples["not_in_corpus"].append(max(float(vectors[h.record.id] @ query_vector) for h in elsewhere))
                other = elsewhere[0]
                features = support_features(query.text, query_vector, other.record.text, vectors[other.record.id])
                samples["unsupported"].append(features.score)
        per_set[query_set.name] = counts

    samples["off_topic"] = []
    for question in OFF_TOPIC:
        hits = rag.search(question, args.k, mode)
        vectors = rag.index.store.vectors([hit.record.id for hit in hits])
        query_vector = rag.index.embedder.embed_query(question)
        samples["off_topic"].append(max(float(v @ query_vector) for v in vectors.values()))

    min_relevance = float(np.quantile(samples["answerable"], 1 - ANSWERABLE_KEPT))
    refused = float((np.asarray(samples["not_in_corpus"]) < min_relevance).mean())
    off_topic_refused = float((np.asarray(samples["off_topic"]) < min_relevance).mean())
    # Marking a true claim "unsupported" teaches readers to ignore the marks: keep 80% of supported ones.
    min_support = float(np.quantile(samples["supported"], 1 - SUPPORTED_KEPT))
    youden_support, youden = youden_threshold(samples["supported"], samples["unsupported"])
    result = {
        "machine": {"platform": platform.platform(), "python": platform.python_version(), "cpus": os.cpu_count()},
        "index": str(index_dir),
        "mode": mode,
        "k": args.k,
        "seconds": round(time.perf_counter() - started, 1),
        "sets": per_set,
        "relevance": {
            "answerable": len(samples["answerable"]),
            "not_in_corpus": len(samples["not_in_corpus"]),
            "auc": round(auc(samples["answerable"], samples["not_in_corpus"]), 4),
            "min_relevance": round(min_relevance, 3),
            "answerable_kept": ANSWERABLE_KEPT,
            "not_in_corpus_refused": round(refused, 4),
            "off_topic": len(samples["off_topic"]),
            "off_topic_auc": round(auc(samples["answerable"], samples["off_topic"]), 4),
            "off_topic_refused": round(off_topic_refused, 4),
        },
        "support": {
            "supported": len(samples["supported"]),
            "unsupported": len(samples["unsupported"]),
            "auc": round(auc(samples["supported"], samples["unsupported"]), 4),
            "min_support": round(min_support, 3),
            "youden_threshold": round(youden_support, 3),
            "youden_j": round(youden, 4),
            "supported_kept": round(float((np.asarray(samples["supported"]) >= min_support).mean()), 4),
            "unsupported_flagged": round(float((np.asarray(samples["unsupported"]) < min_support).mean()), 4),
        },
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "answer_checks.json").write_text(json.dumps(result, indent=2) + "\n")
    rel, sup = result["relevance"], result["support"]
    lines = [
        "# Answer checks: calibration on the development sets",
        "",
        f"Index `{Path(index_dir).name}`, retriever `{mode}`, top {args.k}; {result['machine']['cpus']} CPUs; "
        f"{result['seconds']} s. Queries per set (answerable: a relevant statement in the top {args.k}): "
        + ", ".join(f"{name} {c['queries']} ({c['answerable']})" for name, c in per_set.items())
        + ".",
        "",
        "| check | positives | negatives | AUC | threshold | positives kept | negatives caught |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
        f"| not found: question-to-best-source cosine | {rel['answerable']} answerable | {rel['not_in_corpus']} "
        f"answer's papers removed | {rel['auc']:.3f} | {rel['min_relevance']:.3f} | {ANSWERABLE_KEPT:.0%} | "
        f"{rel['not_in_corpus_refused']:.1%} |",
        f"| not found, off-topic questions | {rel['answerable']} answerable | {rel['off_topic']} off-topic | "
        f"{rel['off_topic_auc']:.3f} | {rel['min_relevance']:.3f} | {ANSWERABLE_KEPT:.0%} | "
        f"{rel['off_topic_refused']:.1%} |",
        f"| attribution: sentence support score | {sup['supported']} relevant source | {sup['unsupported']} "
        f"other paper's top hit | {sup['auc']:.3f} | {sup['min_support']:.3f} | {sup['supported_kept']:.1%} | "
        f"{sup['unsupported_flagged']:.1%} |",
        "",
        f"Youden's J for support peaks at {sup['youden_threshold']:.3f} (J = {sup['youden_j']:.3f}), where only "
        "half of the supported proxies are kept; the threshold keeps 80% instead. The positives are development "
        "queries (names, terms, formulas, questions) against their statement: a proxy for answer sentences.",
        "",
    ]
    (args.out / "answer_checks.md").write_text("\n".join(lines))
    figure, axes = plt.subplots(1, 2, figsize=(11, 4))
    for axis, (pos, neg, threshold, title) in zip(
        axes,
        [
            ("answerable", "not_in_corpus", min_relevance, "Not found: question-source cosine"),
            ("supported", "unsupported", min_support, "Attribution: support score"),
        ],
        strict=True,
    ):
        values = samples[pos] + samples[neg] + (samples["off_topic"] if pos == "answerable" else [])
        bins = np.linspace(min(values), max(values), 40)
        axis.hist(samples[pos], bins=bins, alpha=0.6, label=pos.replace("_", " "))
        axis.hist(samples[neg], bins=bins, alpha=0.6, label=neg.replace("_", " "))
        if pos == "answerable":
            axis.hist(samples["off_topic"], bins=bins, alpha=0.8, label="off topic")
        axis.axvline(threshold, color="black", linestyle="--", label=f"threshold {threshold:.2f}")
        axis.set_title(title)
        axis.legend()
    figure.tight_layout()
    save_png(figure, args.out / "answer_checks.png")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
