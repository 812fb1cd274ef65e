"""Benchmark (issue 60, point 2): statements matched by a short headline, as a field of its own.

A statement's *headline* is where it sits and what it is called, not what it says: its kind and name,
its subsection and section titles, its paper's title; variants add the defined terms of the definitions
in scope (the definitions its statement and proof reference, from the statement graph) and the words of
its label. Each headline is embedded (the configured embedder) and indexed for BM25 (the project's
math-aware tokenizer); a query's headline scores are fused with a base run (the default stack's TREC
run written by ``rag-app eval``) by min-max linear fusion at several weights. Fused runs are scored by
``rag-app eval -r run:PATH`` beside the base, paired, one report per set.

A variant that reads label words is judged on the sets not made of label words only (the label sets'
queries are label words: it would find them by their own text).

    rag-app eval SETS... --index DIR -r hybrid-formula+ltr+notation --out /tmp/base
    python bench/experiments/headline_field.py --index DIR --base-runs /tmp/base/runs --sets SETS... \
        --out bench/results/headline

Headlines are built in memory for the experiment; a headline that wins becomes an indexed field.

An experiment (bench/experiments/): it decided something once. Decision recorded in
docs/retrieval-and-evaluation.md, section "Issue 60: the label-words set, and statements read with a
headline": a headline field, measured, not adopted.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

import numpy as np
from tqdm import tqdm

from ingestion import StatementKind, StatementRecord
from rag_app.datasets.query_set import QuerySet
from rag_app.evaluation.dev_sets import label_words
from rag_app.evaluation.trec_files import Run, RunEntry, read_run, write_run
from rag_app.search.embedder_factory import make_embedder
from rag_app.settings import Settings
from rag_app.training.index_store import open_index_store
from retriever.search.rank_fusion import linear_fusion
from retriever.storage.bm25_index import BM25Index
from retriever.storage.statement_graph import StatementGraph
from retriever.types import ScoredId

ROOT = Path(__file__).resolve().parents[1]
WEIGHTS = (0.1, 0.25, 0.5)
DEPTH = 100
LABEL_SETS = ("stacks-labels", "stacks-label-words")
VARIANTS = ("place", "place+definitions", "place+label")


def headline(record: StatementRecord, definitions: list[str], label: bool) -> str:
    """``Lemma (Nakayama's lemma). Subsection. Section. Paper title.`` (+ definitions in scope, label words)."""
    parts = [record.display_name]
    subsection = str(record.metadata.get("subsection", "") or "")
    parts += [title for title in (subsection, record.section, record.title) if title]
    if definitions:
        parts.append("Uses: " + "; ".join(definitions))
    if label and record.label:
        words = label_words(record.label)
        if words:
            parts.append(words)
    return ". ".join(part.strip().rstrip(".") for part in parts) + "."


def definitions_in_scope(
    graph: StatementGraph, record: StatementRecord, by_id: dict[str, StatementRecord]
) -> list[str]:
    """The defined terms (else names) of the definitions ``record`` references, each once, in order."""
    terms: list[str] = []
    for edge in graph.uses(record.id):
        target = by_id.get(edge.target_id)
        if target is None or target.kind is not StatementKind.DEFINITION:
            continue
        defined = [t for t in str(target.metadata.get("defined_terms", "") or "").split("; ") if t]
        for term in defined or ([target.name] if target.name else []):
            if term not in terms:
                terms.append(term)
    return terms[:6]


def fused_run(base: Run, channel: dict[str, dict[str, float]], weight: float) -> Run:
    """Per topic: the base run and the headline channel by min-max linear fusion (the search stack's own)."""
    fused: Run = {}
    for topic, entries in base.items():
        runs = {
            "base": [ScoredId(e.docno, e.score) for e in entries],
            "headline": [ScoredId(docno, score) for docno, score in channel.get(topic, {}).items()],
        }
        ranked = linear_fusion(runs, {"base": 1.0, "headline": weight})[:DEPTH]
        fused[topic] = [RunEntry(hit.id, hit.score) for hit in ranked]
    return fused


def base_run(directories: list[Path], set_name: str, base_name: str) -> Path:
    for directory in directories:
        path = directory / f"{set_name}.{base_name}.trec"
        if path.exists():
            return path
    raise SystemExit(f"no base run {set_name}.{base_name}.trec in {', '.join(map(str, directories))}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--index", type=Path, required=True)
    parser.add_argument(
        "--base-runs", type=Path, nargs="+", required=True, help="runs/ directories of `rag-app eval`s of the base"
    )
    parser.add_argument("--base-name", default="hybrid-formula_ltr_notation", help="the base's name in run files")
    parser.add_argument("--sets", type=Path, nargs="+", required=True)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "headline")
    args = parser.parse_args()
    settings = Settings()
    store, _ = open_index_store(args.index, settings.store.connection())
    records = list(tqdm(store.iter_records(), desc="reading statements", unit="statement"))
    by_id = {r.id: r for r in records}
    graph = StatementGraph(args.index)
    scope = {r.id: definitions_in_scope(graph, r, by_id) for r in tqdm(records, desc="definitions in scope")}
    docnos = [r.docno for r in records]
    embedder = make_embedder(settings)
    sets = [QuerySet.load(path) for path in args.sets]
    runs_dir = args.out / "runs"
    runs_dir.mkdir(parents=True, exist_ok=True)
    summary: dict[str, dict[str, str]] = defaultdict(dict)
    for variant in VARIANTS:
        texts = [headline(r, scope[r.id] if "definitions" in variant else [], "label" in variant) for r in records]
        vectors = embedder.embed_documents(texts, show_progress=True)
        lexical = BM25Index.build(docnos, texts)
        for query_set in sets:
            if "label" in variant and query_set.name in LABEL_SETS:
                continue
            base = read_run(base_run(args.base_runs, query_set.name, args.base_name))
            queries = list(query_set.queries)
            query_vectors = embedder.embed_queries([q.text for q in queries])
            dense_channel, bm25_channel = {}, {}
            for query, query_vector in zip(queries, query_vectors, strict=True):
                similarities = vectors @ query_vector
                top = np.argpartition(-similarities, DEPTH)[:DEPTH]
                dense_channel[query.qid] = {docnos[i]: float(similarities[i]) for i in top}
                bm25_channel[query.qid] = {hit.id: hit.score for hit in lexical.search(query.text, DEPTH)}
            for channel_name, channel in (("dense", dense_channel), ("bm25", bm25_channel)):
                for weight in WEIGHTS:
                    name = f"headline-{variant}-{channel_name}-{weight}"
                    path = runs_dir / f"{query_set.name}.{name}.trec"
                    write_run(fused_run(base, channel, weight), path, tag=name)
                    summary[query_set.name][name] = str(path)
    for query_set, path in zip(sets, args.sets, strict=True):
        out = args.out / query_set.name
        base_path = base_run(args.base_runs, query_set.name, args.base_name)
        command = ["rag-app", "eval", str(path), "--no-ingest-corpus", "-r", f"run:{base_path}"]
        for run_path in summary[query_set.name].values():
            command += ["-r", f"run:{run_path}"]
        subprocess.run([*command, "--out", str(out)], check=True)
    (args.out / "runs.json").write_text(json.dumps(summary, indent=2) + "\n")
    print(f"reports under {args.out}/SET/report.md", file=sys.stderr)


if __name__ == "__main__":
    main()
