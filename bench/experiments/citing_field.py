"""Benchmark (issue 83): how others cite a statement, as words to find it by, fused with the default ranking.

Each statement's *citing field* is the sentences of the statements that reference it (the statement graph's
citing sentences, :mod:`ingestion.citing_sentences`). Variants, each indexed for BM25 in memory (the
project's math-aware tokenizer) and fused with a base run (the default stack's TREC run written by
``rag-app eval``) by min-max linear fusion at several weights:

- ``citing``: the citing sentences alone (statements no sentence cites have no document);
- ``citing-capped``: at most :data:`CAP` of them, the fullest first, so that a statement cited 200 times
  (Nakayama's lemma) does not match every query by sheer length;
- ``text+citing``: the statement's own search text followed by its citing sentences (a BM25F-like field);
- ``best-sentence``: each citing sentence a document of its own, a statement scored by its best one (how
  often it is cited adds nothing).

The fused runs are scored by ``rag-app eval -r run:PATH`` beside the base, paired, one report per set, and
``rescued.json`` counts the base's misses at 10 that a variant brings into the top 10 (and the hits it
pushes out).

    rag-app eval SETS... --index DIR -r hybrid-formula+ltr+notation --out /tmp/base
    python bench/experiments/citing_field.py --index DIR --base-runs /tmp/base/runs --sets SETS... \
        --out bench/results/citing_field

An experiment (bench/experiments/): it decided something once. Decision recorded in
docs/retrieval-and-evaluation.md, section "How others cite a statement (issue 83)".
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

from tqdm import tqdm

from rag_app.datasets.query_set import QuerySet
from rag_app.evaluation.trec_files import Run, RunEntry, read_run, write_run
from rag_app.settings import Settings
from rag_app.training.index_store import open_index_store
from retriever.search.rank_fusion import linear_fusion
from retriever.storage.bm25_index import BM25Index
from retriever.storage.statement_graph import StatementGraph
from retriever.types import ScoredId

ROOT = Path(__file__).resolve().parents[2]
WEIGHTS = (0.1, 0.25, 0.5)
DEPTH = 100
CAP = 8
VARIANTS = ("citing", "citing-capped", "text+citing", "best-sentence")
SENTENCES_READ = 1000  # best-sentence: the best sentences read, of which each statement keeps its best


def fused_run(base: Run, channel: dict[str, dict[str, float]], weight: float) -> Run:
    """Per topic: the base run and the citing channel by min-max linear fusion (the search stack's own)."""
    fused: Run = {}
    for topic, entries in base.items():
        runs = {
            "base": [ScoredId(e.docno, e.score) for e in entries],
            "citing": [ScoredId(docno, score) for docno, score in channel.get(topic, {}).items()],
        }
        ranked = linear_fusion(runs, {"base": 1.0, "citing": weight})[:DEPTH]
        fused[topic] = [RunEntry(hit.id, hit.score) for hit in ranked]
    return fused


def best_of(hits: list[ScoredId]) -> dict[str, float]:
    """Each statement's best sentence score (hits are best first), the first :data:`DEPTH` statements."""
    best: dict[str, float] = {}
    for hit in hits:
        best.setdefault(hit.id.split("\x1f")[0], hit.score)
    return dict(list(best.items())[:DEPTH])


def rank_of(entries: list[RunEntry], gold: set[str]) -> int:
    """The first rank holding a gold docno (0: none in the run)."""
    return next((rank for rank, entry in enumerate(entries, start=1) if entry.docno in gold), 0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--index", type=Path, required=True)
    parser.add_argument("--base-runs", type=Path, required=True, help="runs/ of the base's `rag-app eval`")
    parser.add_argument("--base-name", default="hybrid-formula_ltr_notation", help="the base's name in run files")
    parser.add_argument("--sets", type=Path, nargs="+", required=True)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "citing_field")
    parser.add_argument("--variants", nargs="+", choices=VARIANTS, default=list(VARIANTS))
    args = parser.parse_args()
    store, _ = open_index_store(args.index, Settings().store.connection())
    records = list(tqdm(store.iter_records(), desc="reading statements", unit="statement"))
    citing = StatementGraph(args.index).citing_sentences([r.id for r in records])
    covered = sum(1 for r in records if r.id in citing)
    print(f"{covered:,} of {len(records):,} statements have citing sentences "
          f"({sum(len(v) for v in citing.values()):,} sentences)", file=sys.stderr)  # fmt: skip
    documents: dict[str, tuple[list[str], list[str]]] = {}
    for variant in args.variants:
        ids, texts = [], []
        for record in records:
            sentences = [c.sentence for c in citing.get(record.id, [])]
            if variant == "citing-capped":
                sentences = sorted(sentences, key=lambda s: -len(s.split()))[:CAP]
            if variant == "text+citing":
                sentences = [record.search_text(), *sentences]
            if variant == "best-sentence":
                ids += [f"{record.docno}\x1f{n}" for n in range(len(sentences))]
                texts += sentences
                continue
            if sentences:
                ids.append(record.docno)
                texts.append(" ".join(sentences))
        documents[variant] = (ids, texts)
    sets = [QuerySet.load(path) for path in args.sets]
    runs_dir = args.out / "runs"
    runs_dir.mkdir(parents=True, exist_ok=True)
    written: dict[str, dict[str, str]] = defaultdict(dict)
    rescued: dict[str, dict[str, dict[str, int]]] = defaultdict(dict)
    for variant, (ids, texts) in documents.items():
        lexical = BM25Index.build(ids, texts)
        for query_set in sets:
            base = read_run(args.base_runs / f"{query_set.name}.{args.base_name}.trec")
            if variant == "best-sentence":
                channel = {q.qid: best_of(lexical.search(q.text, SENTENCES_READ)) for q in query_set.queries}
            else:
                channel = {
                    q.qid: {hit.id: hit.score for hit in lexical.search(q.text, DEPTH)} for q in query_set.queries
                }
            for weight in WEIGHTS:
                name = f"{variant}-{weight}"
                run = fused_run(base, channel, weight)
                path = runs_dir / f"{query_set.name}.{name}.trec"
                write_run(run, path, tag=name)
                written[query_set.name][name] = str(path)
                counts = {"base_misses_at_10": 0, "rescued_into_10": 0, "pushed_out_of_10": 0}
                for query in query_set.queries:
                    gold = set(query.relevant)
                    before, after = rank_of(base.get(query.qid, []), gold), rank_of(run.get(query.qid, []), gold)
                    missed = not 0 < before <= 10
                    counts["base_misses_at_10"] += missed
                    counts["rescued_into_10"] += missed and 0 < after <= 10
                    counts["pushed_out_of_10"] += (not missed) and not 0 < after <= 10
                rescued[query_set.name][name] = counts
    for query_set, path in zip(sets, args.sets, strict=True):
        base_path = args.base_runs / f"{query_set.name}.{args.base_name}.trec"
        command = [
            sys.executable,
            "-m",
            "rag_app.cli",
            "eval",
            str(path),
            "--no-ingest-corpus",
            "-r",
            f"run:{base_path}",
        ]
        for run_path in written[query_set.name].values():
            command += ["-r", f"run:{run_path}"]
        subprocess.run([*command, "--out", str(args.out / query_set.name)], check=True, stdout=subprocess.DEVNULL)
    (args.out / "rescued.json").write_text(json.dumps(rescued, indent=2) + "\n")
    print(f"reports under {args.out}/SET/report.md", file=sys.stderr)


if __name__ == "__main__":
    main()
