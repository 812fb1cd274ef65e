"""Benchmark: does the model's choice of source beat simply quoting the ranker's first result?

For each question of a known-item set (default: ``eval/questions/user-questions.v1.jsonl``, the
questions in the shape users type), ``MathRAG.ask`` runs the default quoting answer: retrieval, then the
packaged model picks which of the sources it reads answer the question. With the answering statement
known, each question says:

- whether an answering statement is among the sources the model read (finding);
- whether the model's pick answers; whether the first source answers (quoting the ranker's first
  result); whether one of the first two does (quoting two);
- what the answer does when the model says NONE: the first source is quoted under a notice; how often
  that source answers (the model abstained wrongly) and how often nothing answered (abstained rightly);
- how often nothing answering was read and the model still picked a statement (quoted as the answer).

With ``--model-always`` (the model asked every time) the summary also replays each way of choosing over
the same answers (``POLICIES``: the ranker's first result alone; the model, with 1 or 3 closest sources
quoted under the notice when it says NONE; a ranker margin that skips the model): how often the answer
shows an answering statement, and how many quotes are presented as the answer that do not answer.
``--max-sources N`` lets the model read N sources (the token budget grows with them; with
``--same-budget`` it stays, and each source is cut to its share: more openings in the same prompt).

Answers go to ``choice_quality-answers.jsonl`` under ``--out`` (ignored by git: they quote third-party
statements); the summary to ``choice_quality.json`` and ``.md``.

    python bench/choice_quality.py [--set FILE] [--index DIR] [--limit N] [--stride N] [--model-always]
        [--max-sources N [--same-budget]] [--prompt NAME@vN] [--from-answers FILE] [--out bench/results]
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

import numpy as np
from tqdm import tqdm

from rag_app import MathRAG, Settings
from rag_app.answering.answer import AnswerStatus
from rag_app.datasets.query_set import EvalQuery, QuerySet

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_SET = ROOT / "eval/questions/user-questions.v1.jsonl"
DEFAULT_INDEX = Path.home() / ".cache/rag-app-questions/index"  # scripts/build_question_index.py


def ask_one(rag: MathRAG, query: EvalQuery, gold: set[str]) -> dict[str, Any]:
    started = time.perf_counter()
    answer = rag.ask(query.text)
    elapsed_ms = (time.perf_counter() - started) * 1000
    given = [hit.record.docno for hit in answer.sources]
    gold_numbers = [n for n, docno in enumerate(given, start=1) if docno in gold]
    picked = [] if answer.status is AnswerStatus.UNSUPPORTED else list(answer.cited)
    return {
        "qid": query.qid,
        "question": query.text,
        "gold": sorted(gold),
        "status": answer.status.value,
        "llm_error": answer.llm_error,
        "given": given,
        "gold_numbers": gold_numbers,
        "picked": picked,
        "reply": answer.raw_text,
        "choice": answer.choice,
        "scores": [round(float(hit.score), 4) for hit in answer.sources],
        "chosen_by": answer.chosen_by,
        "picked_answers": any(n in gold_numbers for n in picked),
        "first_answers": 1 in gold_numbers,
        "first_two_answer": bool({1, 2} & set(gold_numbers)),
        "expected": query.metadata.get("expected"),  # a yes/no question's true answer, where the set says
        "verdict": answer.yes_no_verdict,
        "lead_in": answer.lead_in,
        "answer_ms": round(elapsed_ms),
        "first_token_ms": answer.timings_ms.get("first_token"),
        "choice_ms": next((round(call.ms) for call in answer.model_calls if call.purpose == "choice"), None),
        "prompt_tokens": answer.context.tokens if answer.chosen_by == "model" else None,
        # what the reader sees quoted: the picks, or the closest under the notice
        "shows_answer": bool(set(answer.cited) & set(gold_numbers)),
    }


def share(rows: list[dict[str, Any]], test: Any) -> dict[str, Any]:
    hits = sum(1 for r in rows if test(r))
    return {"count": hits, "of": len(rows), "share": round(hits / len(rows), 3) if rows else None}


def likeliest_source(row: dict[str, Any]) -> int | None:
    """The source number the model gave the highest probability as its first pick, NONE set aside."""
    numbers = {int(key): p for key, p in row["choice"].items() if key != "none"}
    return max(numbers, key=lambda n: numbers[n]) if numbers else None


def sure_or_first(row: dict[str, Any]) -> int:
    """The model's pick where it gave it at least 0.5, else the ranker's first source."""
    picked = row["picked"][0] if row["picked"] else None
    return picked if picked is not None and row["choice"].get(str(picked), 0.0) >= 0.5 else 1


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    read = [r for r in rows if r["gold_numbers"]]
    unread = [r for r in rows if not r["gold_numbers"]]
    abstained = [r for r in rows if not r["picked"]]
    return {
        "questions": len(rows),
        "answering statement read by the model": share(rows, lambda r: r["gold_numbers"]),
        "answer quotes an answering statement (model's pick)": share(rows, lambda r: r["picked_answers"]),
        "quoting the first source would answer": share(rows, lambda r: r["first_answers"]),
        "quoting the first two sources would answer": share(rows, lambda r: r["first_two_answer"]),
        "when read: model's pick answers": share(read, lambda r: r["picked_answers"]),
        "when read: first source answers": share(read, lambda r: r["first_answers"]),
        "when read: model better than first (answer at 2-4)": share(
            read, lambda r: r["picked_answers"] and not r["first_answers"]
        ),
        "when read: model worse than first": share(read, lambda r: r["first_answers"] and not r["picked_answers"]),
        "model said NONE": share(rows, lambda r: not r["picked"]),
        "NONE while the first source answers (quoted under the notice)": share(abstained, lambda r: r["first_answers"]),
        "NONE while another source answers (not shown)": share(
            abstained, lambda r: r["gold_numbers"] and not r["first_answers"]
        ),
        "NONE and nothing read answers (right to abstain)": share(abstained, lambda r: not r["gold_numbers"]),
        "nothing read answers, a statement quoted as the answer": share(unread, lambda r: r["picked"]),
        "with probabilities: the model's likeliest source answers (NONE set aside)": share(
            [r for r in rows if r["choice"]], lambda r: likeliest_source(r) in r["gold_numbers"]
        ),
        "with probabilities: the pick when the model is sure (p >= 0.5), else the first source": share(
            [r for r in rows if r["choice"]], lambda r: sure_or_first(r) in r["gold_numbers"]
        ),
        "the ranker's clear first result quoted, model not asked": share(rows, lambda r: r["chosen_by"] == "ranker"),
        "... and it answers": share([r for r in rows if r["chosen_by"] == "ranker"], lambda r: r["first_answers"]),
        **margin_summary(rows),
        **unsure_summary(rows),
        **yes_no_summary(rows),
        "answer ms p50 / p95": [
            round(float(np.percentile([r["answer_ms"] for r in rows], q))) if rows else None for q in (50, 95)
        ],
    }


MARGINS = (0.5, 1.0, 1.5, 2.0)


def margin_summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Where the model chose every time (``--model-always``): what quoting the first result without asking
    it would have done wherever the learned ranker's first score leads the second by at least a margin."""
    if any(r["chosen_by"] == "ranker" for r in rows) or not any(r["chosen_by"] == "model" for r in rows):
        return {}
    asked = rows  # "" where nothing was chosen: the corpus judged not to hold the answer (never a clear lead)
    summary: dict[str, Any] = {}
    for margin in MARGINS:
        sure = [
            r["chosen_by"] == "model" and len(r["scores"]) > 1 and r["scores"][0] - r["scores"][1] >= margin
            for r in asked
        ]
        chosen = [r["first_answers"] if s else r["picked_answers"] for r, s in zip(asked, sure, strict=True)]
        summary[f"lead >= {margin}: first result quoted (model not asked)"] = _count(sure)
        summary[f"lead >= {margin}: ... first answers / model's pick answers"] = [
            sum(r["first_answers"] for r, s in zip(asked, sure, strict=True) if s),
            sum(r["picked_answers"] for r, s in zip(asked, sure, strict=True) if s),
        ]
        summary[f"lead >= {margin}: answer quotes an answering statement"] = _count(chosen)
    return summary


UNSURE_QUOTES = (1, 2, 3)


def closest_answer(row: dict[str, Any], count: int) -> bool:
    """Whether an answering statement is among the ``count`` closest sources (what the answer quotes under
    its notice when the model picks none, ``answers.quote.unsure_quotes``)."""
    return any(number <= count for number in row["gold_numbers"])


def unsure_summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """When the model says NONE the answer quotes the closest N sources under a notice: how often an
    answering statement is then shown, for each N."""
    abstained = [r for r in rows if not r["picked"]]
    summary: dict[str, Any] = {}
    for count in UNSURE_QUOTES:
        summary[f"NONE, the {count} closest quoted under the notice: one answers"] = share(
            abstained, lambda r, c=count: closest_answer(r, c)
        )
    return summary


def policy_row(
    rows: list[dict[str, Any]], margin: float | None, unsure: int | None, sure_p: float | None = None
) -> dict[str, Any]:
    """One way of choosing, replayed over answers where the model chose every time (``--model-always``):
    ``margin`` None: always the model; ``unsure`` None: never the model (the ranker's first result quoted
    as the answer); ``sure_p``: a pick the model gave less probability than this goes under the notice too,
    with the ``unsure`` closest. Counts the answers that show an answering statement, and the quotes
    presented as the answer (no notice) that do not answer."""
    shows = wrong = ranker = notices = 0
    for r in rows:
        lead = r["scores"][0] - r["scores"][1] if len(r["scores"]) > 1 else 0.0
        picked = r["picked"]
        if picked and sure_p is not None and r["choice"] and r["choice"].get(str(picked[0]), 0.0) < sure_p:
            picked = []  # the model's pick, not sure enough to be presented as the answer
            doubtful = bool(r["picked_answers"])
        else:
            doubtful = False
        if unsure is None or (margin is not None and r["chosen_by"] == "model" and lead >= margin):
            ranker += 1
            shows += bool(r["first_answers"])
            wrong += not r["first_answers"]
        elif picked:
            shows += bool(r["picked_answers"])
            wrong += not r["picked_answers"]
        else:
            notices += 1
            shows += closest_answer(r, unsure) or doubtful
    n = len(rows)
    return {
        "shows an answering statement": round(shows / n, 3) if n else None,
        "quoted as the answer, does not answer": wrong,
        "under the notice": notices,
        "model not asked": ranker,
    }


POLICIES: tuple[tuple[str, float | None, int | None, float | None], ...] = (
    ("the ranker's first result, always (no model)", None, None, None),
    ("the model; NONE: source 1 under the notice", None, 1, None),
    ("the model; NONE: the 3 closest under the notice", None, 3, None),
    ("lead >= 1.0 skips the model; NONE: source 1 (before issue 60)", 1.0, 1, None),
    ("lead >= 1.0 skips the model; NONE: the 2 closest", 1.0, 2, None),
    ("lead >= 1.0 skips the model; NONE: the 3 closest", 1.0, 3, None),
    ("lead >= 1.5 skips the model; NONE: the 3 closest", 1.5, 3, None),
    ("lead >= 2.0 skips the model; NONE: the 3 closest", 2.0, 3, None),
    (
        "lead >= 1.0 skips the model; a pick with p < 0.5 or NONE: its pick and the 3 closest under the notice",
        1.0,
        3,
        0.5,
    ),
    (
        "lead >= 2.0 skips the model; a pick with p < 0.5 or NONE: its pick and the 3 closest under the notice",
        2.0,
        3,
        0.5,
    ),
)


def policy_table(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    if not rows or any(r["chosen_by"] == "ranker" for r in rows):
        return {}  # needs the model's pick for every question (--model-always)
    with_probabilities = any(r["choice"] for r in rows)  # llama.cpp gives them only with prompt_logits on
    return {
        name: policy_row(rows, margin, unsure, sure_p)
        for name, margin, unsure, sure_p in POLICIES
        if sure_p is None or with_probabilities
    }


def _count(flags: list[bool]) -> dict[str, Any]:
    return {"count": sum(flags), "of": len(flags), "share": round(sum(flags) / len(flags), 3) if flags else None}


def yes_no_summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """For a set whose questions say their true answer (yes or no): the lead-ins given, right and wrong."""
    asked = [r for r in rows if r.get("expected")]
    if not asked:
        return {}
    led = [r for r in asked if r["lead_in"]]

    def right(r: dict[str, Any]) -> bool:
        return r["lead_in"].lower().startswith(r["expected"]) and r["picked_answers"]

    return {
        "yes/no: the model gave a verdict (YES or NO)": share(asked, lambda r: r["verdict"] in ("yes", "no")),
        "yes/no: a lead-in was shown": share(asked, lambda r: r["lead_in"]),
        "yes/no: lead-in right, above a statement that answers": share(led, right),
        "yes/no: lead-in wrong (the wrong word, or above a statement that does not answer)": share(
            led, lambda r: not right(r)
        ),
        "yes/no: no lead-in though the quote answers": share(asked, lambda r: r["picked_answers"] and not r["lead_in"]),
    }


def paired_summary(baseline: list[dict[str, Any]], rows: list[dict[str, Any]], name: str) -> dict[str, Any]:
    """This run against ``baseline`` on the questions both answered: how often each shows an answering
    statement (its pick, or the closest quoted under the notice), the questions where only one does (a
    paired randomization test over them), and the model's choice time and prompt tokens where it chose."""
    from rag_app.evaluation.significance import paired_test

    before = {row["qid"]: row for row in baseline}
    both = [(before[row["qid"]], row) for row in rows if row["qid"] in before]

    def shows(row: dict[str, Any]) -> float:
        if "shows_answer" in row:
            return float(row["shows_answer"])
        unsure = row["status"] == AnswerStatus.UNSUPPORTED.value
        return float(row["first_answers"] if unsure else row["picked_answers"])

    test = paired_test(name, "this run", "shows an answering statement",
                       {a["qid"]: shows(a) for a, _ in both}, {b["qid"]: shows(b) for _, b in both})  # fmt: skip
    chose = [(a, b) for a, b in both if a.get("choice_ms") and b.get("choice_ms")]
    return {
        "baseline": name,
        "questions": len(both),
        "shows an answering statement, baseline": sum(shows(a) for a, _ in both),
        "shows an answering statement, this run": sum(shows(b) for _, b in both),
        "only the baseline shows one": sum(shows(a) > shows(b) for a, b in both),
        "only this run shows one": sum(shows(b) > shows(a) for a, b in both),
        "randomization p": round(test.randomization_p, 4),
        "the model chose in both": len(chose),
        "choice ms p50, baseline": float(np.median([a["choice_ms"] for a, _ in chose])) if chose else None,
        "choice ms p50, this run": float(np.median([b["choice_ms"] for _, b in chose])) if chose else None,
        "prompt tokens mean, baseline": round(float(np.mean([a["prompt_tokens"] for a, _ in chose])), 1)
        if chose and all(a.get("prompt_tokens") for a, _ in chose) else None,
        "prompt tokens mean, this run": round(float(np.mean([b["prompt_tokens"] for _, b in chose])), 1)
        if chose and all(b.get("prompt_tokens") for _, b in chose) else None,
    }  # fmt: skip


def markdown(result: dict[str, Any]) -> str:
    lines = [
        "# Choosing the statement: the model's pick against the ranker's first result",
        "",
        f"Command: `{result['command']}`",
        "",
        f"- set: {result['set']} ({result['summary']['questions']} questions); index: {result['index']}",
        f"- model: {result['model']}; machine: {result['machine']}",
        "",
        "| measure | count | of | share |",
        "| --- | ---: | ---: | ---: |",
    ]
    for name, value in result["summary"].items():
        if isinstance(value, dict):
            share_text = "—" if value["share"] is None else f"{value['share']:.3f}"
            lines.append(f"| {name} | {value['count']} | {value['of']} | {share_text} |")
        elif isinstance(value, list):
            lines.append(f"| {name} | {value[0]:,} / {value[1]:,} | | |")
        else:
            lines.append(f"| {name} | {value} | | |")
    paired = result.get("paired")
    if paired:
        lines += ["", f"Paired with `{paired['baseline']}` (the same questions):", "", "| measure | value |",
                  "| --- | ---: |"]  # fmt: skip
        lines += [f"| {name} | {value} |" for name, value in paired.items() if name != "baseline"]
    policies = result.get("policies") or {}
    if policies:
        lines += [
            "",
            "Ways of choosing, replayed over the same answers (the model asked every time):",
            "",
            "| policy | shows an answering statement | quoted as the answer, does not answer | under the notice "
            "| model not asked |",
            "| --- | ---: | ---: | ---: | ---: |",
        ]
        for name, row in policies.items():
            wrong = row["quoted as the answer, does not answer"]
            lines.append(
                f"| {name} | {row['shows an answering statement']:.3f} | {wrong} "
                f"| {row['under the notice']} | {row['model not asked']} |"
            )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--set", type=Path, default=DEFAULT_SET)
    parser.add_argument("--index", type=Path, default=DEFAULT_INDEX)
    parser.add_argument("--limit", type=int, default=0)
    parser.add_argument("--stride", type=int, default=1, help="every Nth question (a sample across the corpora)")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    parser.add_argument(
        "--prompt-logits", action=argparse.BooleanOptionalAction, default=None,
        help="start the local server with logits kept (llama.cpp's logprobs need them); default: as configured",
    )  # fmt: skip
    parser.add_argument(
        "--model-always", action="store_true",
        help="ask the model even where the ranker's first result leads clearly (to measure that policy)",
    )  # fmt: skip
    parser.add_argument(
        "--from-answers", type=Path,
        help="summarize an answers file of an earlier run (choice_quality-answers.jsonl) without asking again",
    )  # fmt: skip
    parser.add_argument(
        "--model", default=None, help="the packaged chat model (llm.local_model), e.g. qwen2.5-coder-0.5b-instruct"
    )
    parser.add_argument("--max-source-tokens", type=int, default=None, help="answers.quote.max_source_tokens")
    parser.add_argument(
        "--prompt", default=None, help="answers.quote.prompt, e.g. answer_select@v2 (sources one line each)"
    )
    parser.add_argument("--reading-gap", type=float, default=None, help="answers.quote.reading_gap")
    parser.add_argument(
        "--paired", type=Path,
        help="an answers file of another run over the same questions: the two compared question by question",
    )  # fmt: skip
    parser.add_argument(
        "--max-sources", type=int, default=None,
        help="sources the model chooses among (answers.quote.max_sources; the token budget grows with it)",
    )
    parser.add_argument(
        "--same-budget", action="store_true",
        help="with --max-sources: keep the sources' token budget, each source cut to its share (a deeper reading)",
    )  # fmt: skip
    args = parser.parse_args()
    if args.same_budget and not args.max_sources:
        parser.error("--same-budget goes with --max-sources")
    if args.from_answers:
        rows = [json.loads(line) for line in args.from_answers.read_text().splitlines() if line.strip()]
        defaults = {"chosen_by": "model", "expected": None, "lead_in": None, "verdict": None}
        rows = [{**defaults, **row} for row in rows]  # files from before these fields: the model chose every time
        write_summary(args, rows, model=rows[0].get("model", "qwen2.5-coder-1.5b-instruct") if rows else "")
        return
    if not (args.index / "manifest.json").exists():
        sys.exit(f"no index at {args.index}: run `python scripts/build_question_index.py` first")
    queries = list(QuerySet.load(args.set).queries)[:: args.stride][: args.limit or None]
    settings = Settings(data_dir=args.index.parent / "data", index_dir=args.index)
    if args.prompt_logits is not None:
        settings.llm.llama_cpp = settings.llm.llama_cpp.model_copy(update={"prompt_logits": args.prompt_logits})
    if args.model_always:
        settings.answers.quote.ranker_sure_margin = None
    if args.model:
        settings.llm.local_model = args.model
    if args.max_source_tokens:
        settings.answers.quote.max_source_tokens = args.max_source_tokens
    if args.prompt:
        settings.answers.quote.prompt = args.prompt
    if args.reading_gap is not None:
        settings.answers.quote.reading_gap = args.reading_gap
    if args.max_sources:
        quote = settings.answers.quote
        per_source = quote.sources_budget_tokens / quote.max_sources
        if args.same_budget:  # more sources in the same prompt tokens: each cut to its opening
            quote.max_source_tokens = max(24, round(quote.sources_budget_tokens / args.max_sources))
        else:
            quote.sources_budget_tokens = round(per_source * args.max_sources)
        quote.max_sources = args.max_sources
    args.out.mkdir(parents=True, exist_ok=True)
    rows: list[dict[str, Any]] = []
    # Each answer is written as it comes, so a run stopped early still leaves its rows.
    with MathRAG(settings) as rag, (args.out / "choice_quality-answers.jsonl").open("w") as answers:
        model = rag.llm.client().model  # starts the local server before the first question is timed
        for query in tqdm(queries, desc="asking", unit="question"):
            rows.append(ask_one(rag, query, set(query.relevant)))
            answers.write(json.dumps(rows[-1], ensure_ascii=False) + "\n")
            answers.flush()
    write_summary(args, rows, model)


def write_summary(args: argparse.Namespace, rows: list[dict[str, Any]], model: str) -> None:
    result = {
        "command": "python bench/choice_quality.py " + " ".join(sys.argv[1:]),
        "set": str(args.set.relative_to(ROOT) if args.set.is_relative_to(ROOT) else args.set),
        "index": str(args.index),
        "model": model,
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs",
        "summary": summarize(rows),
        "policies": policy_table(rows),
    }
    if getattr(args, "paired", None):
        baseline = [json.loads(line) for line in args.paired.read_text().splitlines() if line.strip()]
        result["paired"] = paired_summary(baseline, rows, str(args.paired))
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "choice_quality.json").write_text(json.dumps(result, indent=2) + "\n")
    (args.out / "choice_quality.md").write_text(markdown(result))
    print(markdown(result))


if __name__ == "__main__":
    main()
