"""Benchmark: the yes/no lead-in's verdict against the truth, for every way of deciding it (issue 74).

Over ``eval/questions/yes-no-claims.v1.jsonl`` (379 claims written by hand, 173 false: a dropped hypothesis,
the converse, another object, a stronger or other conclusion, the opposite), each way of deciding the lead-in
reads the same quoted statement and says one of: "Yes", "the opposite", "only under a hypothesis", a notice
that the quote does not settle the question as asked, or nothing. The confusion table (truth × what was said)
is written per way of deciding, per kind of claim and per corpus.

The quoted statement, by ``--quote``:

- ``gold``: the statement that settles the claim (the set's judgment), found among the first 100 search
  results; the verdict alone is measured, not the search;
- ``ranker``: the search's first result (quoting the ranker's first result, no model);
- ``system``: what ``MathRAG.ask`` quotes (the ranker alone where it is sure, else the packaged model's
  choice); with ``--model-verdict``, also the model's verdict on the same quote (two calls per question:
  minutes per hundred questions on 2 CPUs).

Ways of deciding: ``rules`` (the default: rag_app/answering/claims/claim_comparison.py), ``model`` (the earlier verdict,
two model calls), ``rules+model`` ("Yes" only where both say yes), and ``none`` (no lead-in: the quote alone).

The index holds the demo corpus, the Stacks project and the Math StackExchange threads we wrote; it is built
on first use (about 25 minutes on 2 CPUs) under ``--index``. Summaries go to ``bench/results/yes_no_verdict*``;
per-question rows (they quote third-party statements) to ``bench/results/yes_no_verdict-rows/`` (ignored).

    python bench/yes_no_verdict.py [--quote gold|ranker|system] [--model-verdict] [--stride N] [--index DIR]
        [--set FILE] [--name NAME] [--rescore ROWS.jsonl]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

from tqdm import tqdm

from rag_app import MathRAG, Settings
from rag_app.answering.claims import is_yes_no_question
from rag_app.answering.yes_no_lead import YesNoReading
from rag_app.datasets.query_set import EvalQuery, QuerySet
from rag_app.evaluation.written_mse import WRITTEN_MSE_THREADS, write_posts_xml
from retriever.types import SearchHit

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_SET = ROOT / "eval/questions/yes-no-claims.v1.jsonl"
DEFAULT_INDEX = Path.home() / ".cache/rag-app-claims/index"
STACKS = ROOT.parent / "shared/corpora/stacks-project"
OUT = ROOT / "bench/results"
SAID = ("yes", "no", "opposite", "only-if", "notice", "nothing")
# a lead-in that is right about the truth ("no": "No: [n] gives a counterexample" / "states the opposite", issue 84)
CORRECT = {"yes": {"yes"}, "no": {"no", "opposite", "only-if"}}


def build_index(index: Path) -> None:
    """The demo corpus, the Stacks project and our MSE threads in one index (idempotent)."""
    rag = MathRAG(Settings(index_dir=index))
    with tempfile.TemporaryDirectory() as work:
        posts = Path(work) / "Posts.xml"
        write_posts_xml(WRITTEN_MSE_THREADS, posts)
        print(rag.ingest([STACKS], show_progress=True).summary(), file=sys.stderr)
        print(rag.ingest_demo(show_progress=True).summary(), file=sys.stderr)
        print(rag.ingest_mse(posts, show_progress=True).summary(), file=sys.stderr)


def said(lead_in: str | None, verdict: str | None) -> str:
    """What the reader was told, in the table's words."""
    if verdict in ("yes", "no", "opposite", "only-if") and lead_in:
        return str(verdict)
    return "notice" if lead_in else "nothing"


def gold_hit(hits: list[SearchHit], gold: set[str]) -> tuple[SearchHit | None, int | None]:
    for rank, hit in enumerate(hits, start=1):
        if hit.record.docno in gold:
            return hit, rank
    return None, None


def rules_verdict(question: str, hit: SearchHit) -> dict[str, Any]:
    lead = YesNoReading.by_rules(question, hit, 1)
    return {
        "said": said(lead.lead_in, lead.verdict.value if lead.verdict else None),
        "lead_in": lead.lead_in,
        "reason": lead.reason,
        "missing": list(lead.missing),
        "unmatched": list(lead.unmatched),
        "ms": round(lead.ms, 3),
    }


def model_verdict(rag: MathRAG, question: str, hit: SearchHit) -> dict[str, Any]:
    """The earlier way: the packaged model judges "the answer is yes" and "the answer is no"."""
    lead = YesNoReading(rag.settings.answers.quote, rag.llm.client).by_model(rag.llm.client(), question, hit, 1)
    verdict = lead.verdict.value if lead.verdict else None
    return {"said": said(lead.lead_in, verdict), "lead_in": lead.lead_in, "ms": round(lead.ms, 1)}


def run_one(rag: MathRAG, query: EvalQuery, quote: str, with_model: bool) -> dict[str, Any]:
    gold = set(query.relevant)
    hits = rag.search(query.text, k=100)
    found, rank = gold_hit(hits, gold)
    row: dict[str, Any] = {
        "qid": query.qid,
        "question": query.text,
        "truth": query.metadata.get("expected", "unknown"),
        "kind": query.metadata.get("kind", "-"),
        "corpus": query.metadata.get("corpus", query.qid.rsplit("-", 1)[0]),
        "gold_rank": rank,
    }
    if quote == "gold":
        quoted = found
    elif quote == "ranker":
        quoted = hits[0] if hits else None
    else:
        rag.settings.answers.quote.yes_no_method = "rules"
        answer = rag.ask(query.text)
        picked = answer.generation.picked
        quoted = answer.generation.sources[picked[0] - 1] if picked else None
        row["chosen_by"] = answer.chosen_by
        row["system_lead_in"] = answer.lead_in
        row["answer_ms"] = answer.timings_ms.get("total")
        row["first_token_ms"] = answer.timings_ms.get("first_token")
    row["quoted"] = quoted.record.docno if quoted else None
    row["quote_settles"] = bool(quoted and quoted.record.docno in gold)
    if quoted is None:
        row["rules"] = {"said": "nothing"}
        return row
    row["rules"] = rules_verdict(query.text, quoted)
    if with_model:
        row["model"] = model_verdict(rag, query.text, quoted)
        both = row["rules"]["said"] == "yes" and row["model"]["said"] == "yes"
        row["rules+model"] = {
            "said": "yes" if both else ("nothing" if row["rules"]["said"] == "yes" else row["rules"]["said"])
        }
    return row


def rescore(rag: MathRAG, row: dict[str, Any]) -> dict[str, Any]:
    """A stored row with the rules' verdict decided again on the same quote (after a change to the rules; the
    model's verdicts, which cost minutes, are kept)."""
    if not row.get("quoted"):
        return row
    quoted = next((hit for hit in rag.search(row["question"], k=100) if hit.record.docno == row["quoted"]), None)
    if quoted is None:
        return row
    row = {**row, "rules": rules_verdict(row["question"], quoted)}
    if "model" in row:
        both = row["rules"]["said"] == "yes" and row["model"]["said"] == "yes"
        fallback = "nothing" if row["rules"]["said"] == "yes" else row["rules"]["said"]
        row["rules+model"] = {"said": "yes" if both else fallback}
    return row


def confusion(rows: list[dict[str, Any]], way: str) -> dict[str, dict[str, int]]:
    table = {truth: Counter() for truth in ("yes", "no", "unknown")}
    for row in rows:
        if way == "none":
            table[row["truth"]]["nothing"] += 1
        else:  # a question with nothing quoted (nothing picked) was told nothing, whatever the way
            table[row["truth"]][row.get(way, {}).get("said", "nothing")] += 1
    return {truth: {s: counts.get(s, 0) for s in SAID} for truth, counts in table.items()}


def summarize(rows: list[dict[str, Any]], ways: list[str]) -> dict[str, Any]:
    summary: dict[str, Any] = {"questions": len(rows), "ways": {}}
    for way in ways:
        table = confusion(rows, way)
        true_claims = [r for r in rows if r["truth"] == "yes"]
        settled = [r for r in true_claims if r.get("quote_settles")]
        kept = sum(1 for r in settled if way != "none" and r.get(way, {}).get("said") in CORRECT["yes"])
        false_yes = [r["qid"] for r in rows if r["truth"] == "no" and r.get(way, {}).get("said") == "yes"]
        wrong_no = [r["qid"] for r in true_claims if r.get(way, {}).get("said") in ("no", "opposite", "only-if")]
        right_no = sum(1 for r in rows if r["truth"] == "no" and r.get(way, {}).get("said") in CORRECT["no"])
        summary["ways"][way] = {
            "confusion": table,
            "yes_to_false_claims": len(false_yes),
            "false_yes_qids": false_yes,
            "true_claims_quote_settles": len(settled),
            "yes_kept_where_quote_settles": kept,
            "yes_kept_share": round(kept / len(settled), 3) if settled else None,
            "false_claims_told_no": right_no,
            "true_claims_told_no": len(wrong_no),
            "by_kind": _by(rows, way, "kind"),
            "by_corpus": _by(rows, way, "corpus"),
        }
    summary["quote_settles"] = sum(1 for r in rows if r.get("quote_settles"))
    summary["gold_in_top_100"] = sum(1 for r in rows if r.get("gold_rank"))
    ms = sorted(r["rules"]["ms"] for r in rows if "ms" in r.get("rules", {}))
    if ms:
        summary["rules_ms_p50_p95"] = [ms[len(ms) // 2], ms[min(len(ms) - 1, int(len(ms) * 0.95))]]
    return summary


def _by(rows: list[dict[str, Any]], way: str, key: str) -> dict[str, dict[str, int]]:
    out: dict[str, Counter] = {}
    for row in rows:
        said_here = "nothing" if way == "none" else row.get(way, {}).get("said", "nothing")
        out.setdefault(f"{row['truth']}/{row[key]}", Counter())[said_here] += 1
    return {name: dict(counts) for name, counts in sorted(out.items())}


def markdown(summary: dict[str, Any], meta: dict[str, Any]) -> str:
    lines = [
        f"# Yes/no verdicts: {meta['set']} ({summary['questions']} claims), quote: {meta['quote']}",
        "",
        f"{meta['machine']}; {meta['date']}; index {meta['index']}. Regenerate: `{meta['command']}`.",
        f"The quoted statement settles the claim for {summary['quote_settles']} of them; the settling statement"
        f" is in the first 100 results for {summary['gold_in_top_100']}.",
        "",
    ]
    for way, data in summary["ways"].items():
        lines += [f"## {way}", "", "| truth | " + " | ".join(SAID) + " |", "| --- |" + " ---: |" * len(SAID)]
        for truth in ("yes", "no", "unknown"):
            if not any(data["confusion"][truth].values()):
                continue
            lines.append(f"| {truth} | " + " | ".join(str(data["confusion"][truth][s]) for s in SAID) + " |")
        lines += [
            "",
            f'- "Yes" to a false claim: **{data["yes_to_false_claims"]}** {data["false_yes_qids"][:12]}',
            f'- true claims whose quote settles them: {data["true_claims_quote_settles"]}; "Yes" kept for '
            f"{data['yes_kept_where_quote_settles']} ({data['yes_kept_share']})",
            f'- false claims told "opposite" or "only under": {data["false_claims_told_no"]}; true claims told '
            f"so: {data['true_claims_told_no']}",
            "",
            "| truth/kind | " + " | ".join(SAID) + " |",
            "| --- |" + " ---: |" * len(SAID),
        ]
        for name, counts in data["by_kind"].items():
            lines.append(f"| {name} | " + " | ".join(str(counts.get(s, 0)) for s in SAID) + " |")
        lines.append("")
    if "rules_ms_p50_p95" in summary:
        lines.append(
            f"Rules: p50 {summary['rules_ms_p50_p95'][0]} ms, p95 {summary['rules_ms_p50_p95'][1]} ms a verdict."
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--set", type=Path, default=DEFAULT_SET)
    parser.add_argument("--index", type=Path, default=DEFAULT_INDEX)
    parser.add_argument("--quote", choices=("gold", "ranker", "system"), default="gold")
    parser.add_argument("--model-verdict", action="store_true", help="also the model's verdict (two calls each)")
    parser.add_argument("--stride", type=int, default=1, help="every N-th question only")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--rescore", type=Path, help="a rows file: decide the rules' verdicts again on its quotes")
    parser.add_argument("--name", default="", help="a name for the results (default: from the set and options)")
    parser.add_argument(
        "--no-counterexample-search", action="store_true",
        help="--quote system: no second search worded as a counterexample (answers.quote.counterexample_search)",
    )  # fmt: skip
    args = parser.parse_args()
    if not (args.index / "manifest.json").exists():
        build_index(args.index)
    queries = [q for q in QuerySet.load(args.set).queries if is_yes_no_question(q.text)][:: args.stride]
    rag = MathRAG(Settings(index_dir=args.index, answers={"style": "quote"}))
    rag.settings.answers.quote.counterexample_search = not args.no_counterexample_search
    if args.rescore:
        stored = [json.loads(line) for line in args.rescore.read_text().splitlines() if line.strip()]
        rows = [rescore(rag, row) for row in tqdm(stored, desc="rules again")]
    else:
        rows = [run_one(rag, q, args.quote, args.model_verdict) for q in tqdm(queries, desc=f"claims ({args.quote})")]
    ways = ["rules", *(["model", "rules+model"] if args.model_verdict else []), "none"]
    options = ("-model" if args.model_verdict else "") + (f"-stride{args.stride}" if args.stride > 1 else "")
    suffix = f"-{args.name}" if args.name else f"-{args.quote}{options}"
    meta = {
        "set": args.set.name,
        "quote": args.quote,
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs",
        "date": time.strftime("%Y-%m-%d"),
        "index": str(args.index).replace(str(Path.home()), "~"),
        "command": " ".join(["python bench/yes_no_verdict.py", *sys.argv[1:]]),
    }
    summary = {**meta, **summarize(rows, ways)}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"yes_no_verdict{suffix}.json").write_text(json.dumps(summary, indent=1) + "\n")
    (args.out / f"yes_no_verdict{suffix}.md").write_text(markdown(summary, meta))
    rows_dir = args.out / "yes_no_verdict-rows"
    rows_dir.mkdir(exist_ok=True)
    with (rows_dir / f"rows{suffix}.jsonl").open("w") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    print(markdown(summary, meta))


if __name__ == "__main__":
    main()
