"""Benchmark: which statements the answer's refutation reading takes for a counterexample (issue 84).

An answer to a yes/no question reads every statement its search found (its sources and next results, as deep as
``retrieval.top_k + retrieval.next_results``) for one that refutes the claim as asked
(:mod:`rag_app.answering.claims.refutation`); the first one found is quoted under "No: [n] gives a counterexample:".
This bench does that scan over a claim set without the model (the scan is pure text; only the search costs):

- over the false claims with a refuting statement in the corpus (``metadata.refuted_by``): is it found by the
  search, is it read as a refutation when read alone, and does the scan say "No";
- over the true claims: how many the scan tells "No" (each one is a wrong answer: the target is 0).

    python bench/refutation_scan.py [--set FILE ...] [--index DIR] [--depth N] [--name NAME]

Summaries go to ``bench/results/refutation_scan*``; the rows (they quote third-party statements) to
``bench/results/refutation_scan-rows/`` (ignored).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

from tqdm import tqdm

from rag_app import MathRAG
from rag_app.answering.claims import is_yes_no_question
from rag_app.answering.claims.refutation import refutes
from rag_app.datasets.query_set import EvalQuery, QuerySet

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_SETS = [ROOT / "eval/questions/research-claims.v1.jsonl", ROOT / "eval/questions/yes-no-claims.v1.jsonl"]
DEFAULT_INDEX = Path.home() / ".cache/rag-app-questions/index"
OUT = ROOT / "bench/results"


def refuted_by(query: EvalQuery) -> list[str]:
    named = query.metadata.get("refuted_by") or []
    return [named] if isinstance(named, str) else list(named)


def scan_one(rag: MathRAG, query: EvalQuery, depth: int) -> dict[str, Any]:
    hits = rag.search(query.text, k=depth)
    refuter = next((hit for hit in hits if refutes(query.text, hit.record.text, hit.record.kind.value)), None)
    named = refuted_by(query)
    found = [hit.record.docno for hit in hits if hit.record.docno in named]
    read_alone = [
        hit.record.docno for hit in hits if hit.record.docno in named and refutes(query.text, hit.record.text,
                                                                                  hit.record.kind.value)
    ]  # fmt: skip
    return {
        "qid": query.qid,
        "question": query.text,
        "truth": query.metadata.get("expected", "unknown"),
        "kind": query.metadata.get("kind", "-"),
        "refuted_by": named,
        "refuter_found": found,
        "refuter_read": read_alone,
        "scan_says_no": refuter.record.docno if refuter else None,
        "scan_kind": refuter.record.kind.value if refuter else None,
    }


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    false = [r for r in rows if r["truth"] == "no"]
    named = [r for r in false if r["refuted_by"]]
    found = [r for r in named if r["refuter_found"]]
    true = [r for r in rows if r["truth"] == "yes"]
    return {
        "claims": len(rows),
        "false": len(false),
        "false_with_refuter": len(named),
        "refuter_found_by_search": len(found),
        "refuter_read_as_refutation": sum(1 for r in found if r["refuter_read"]),
        "false_told_no": sum(1 for r in false if r["scan_says_no"]),
        "false_with_refuter_told_no": sum(1 for r in named if r["scan_says_no"]),
        "true": len(true),
        "true_told_no": [(r["qid"], r["scan_says_no"]) for r in true if r["scan_says_no"]],
    }


def markdown(summaries: dict[str, dict[str, Any]], meta: dict[str, Any]) -> str:
    lines = [
        "# The refutation scan over yes/no claims",
        "",
        f"{meta['machine']}; {meta['date']}; index {meta['index']}; the first {meta['depth']} results read."
        f" Regenerate: `{meta['command']}`.",
        "",
        "| set | claims | false (with a refuter in the corpus) | refuter found by the search | read as a"
        ' refutation | false told "No" (with a refuter) | true told "No" |',
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name, s in summaries.items():
        lines.append(
            f"| {name} | {s['claims']} | {s['false']} ({s['false_with_refuter']}) | {s['refuter_found_by_search']} |"
            f" {s['refuter_read_as_refutation']} | {s['false_told_no']} ({s['false_with_refuter_told_no']}) |"
            f" **{len(s['true_told_no'])}** |"
        )
    for name, s in summaries.items():
        if s["true_told_no"]:
            told = ", ".join(f"{qid} ({docno})" for qid, docno in s["true_told_no"])
            lines += ["", f'True claims told "No" in {name}: {told}']
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--set", type=Path, action="append", help="a claim set (repeatable; default: both sets)")
    parser.add_argument("--index", type=Path, default=DEFAULT_INDEX)
    parser.add_argument("--depth", type=int, default=0, help="results read (default: top_k + next_results)")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--name", default="", help="a name for the results")
    args = parser.parse_args()
    rag = MathRAG.open(args.index)
    depth = args.depth or rag.settings.retrieval.top_k + rag.settings.retrieval.next_results
    summaries: dict[str, dict[str, Any]] = {}
    all_rows: list[dict[str, Any]] = []
    for path in args.set or DEFAULT_SETS:
        queries = [q for q in QuerySet.load(path).queries if is_yes_no_question(q.text)]
        rows = [scan_one(rag, q, depth) for q in tqdm(queries, desc=path.stem)]
        summaries[path.stem] = summarize(rows)
        all_rows += rows
    meta = {
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs",
        "date": time.strftime("%Y-%m-%d"),
        "index": str(args.index).replace(str(Path.home()), "~"),
        "depth": depth,
        "command": " ".join(["python bench/refutation_scan.py", *sys.argv[1:]]),
    }
    suffix = f"-{args.name}" if args.name else ""
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"refutation_scan{suffix}.json").write_text(json.dumps({**meta, "sets": summaries}, indent=1) + "\n")
    (args.out / f"refutation_scan{suffix}.md").write_text(markdown(summaries, meta))
    rows_dir = args.out / "refutation_scan-rows"
    rows_dir.mkdir(exist_ok=True)
    with (rows_dir / f"rows{suffix}.jsonl").open("w") as f:
        for row in all_rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    print(markdown(summaries, meta))


if __name__ == "__main__":
    main()
