"""Benchmark: does the answer say what its quote settles, and is it sure only when right (issue 100)?

Over the labelled sets of ``bench/answer_choice.py`` (each split into a half tuned on and a half only measured; the
sets written apart are untouched whole), on the same index:

- ``collect``: each question's answer (``MathRAG.ask``, the model not asked): its sources, the chooser's
  probabilities and order, the verdict reader's readings of each source and the truth, as rows
  (:class:`rag_app.training.fit_verdict_policy.VerdictRow`) under ``--work``;
- ``fit``: the verdict's calibration and thresholds fitted on the tuning halves' rows, written as the packaged
  policy (``rag_app/answering/verdict_weights/verdict-policy.json``);
- ``report``: the verdict each row gets under the policy (what ``ask`` does, replayed), per set and half: the verdict
  confusion (truth against verdict), doubt recall and precision, "nothing answers" on the no-answer set, settles
  against the first result, the calibration error of ``confidence``; a reliability plot;
- ``measure``: the same through ``MathRAG.ask`` itself (the stage live, as every front end gets it), with timings.

    python bench/verdict_answers.py collect [--index DIR] [--work DIR]
    python bench/verdict_answers.py fit
    python bench/verdict_answers.py report [--name replay]
    python bench/verdict_answers.py measure [--name live]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

import numpy as np
from tqdm import tqdm

sys.path.insert(0, str(Path(__file__).resolve().parent))
from answer_choice import DEFAULT_WORK, all_sets, open_rag, places

from rag_app import MathRAG
from rag_app.answering.claims import is_yes_no_question
from rag_app.answering.verdict import PACKAGED_POLICY, AnswerVerdict, VerdictPolicy, VerdictRead
from rag_app.answering.verdict_cross_encoder import VerdictCrossEncoder
from rag_app.answering.verdict_reader import expected_calibration_error
from rag_app.answering.verdict_stage import rules_of
from rag_app.datasets.query_set import EvalQuery
from rag_app.datasets.set_halves import SetHalves
from rag_app.training.fit_verdict_policy import VerdictRow, fit_policy, read_rows, replay
from rag_app.training.verdict_data import reliability_plot

OUT = Path(__file__).resolve().parent / "results"
ROWS = "verdict_rows.jsonl"
VERDICTS = tuple(verdict.value for verdict in AnswerVerdict)
DOUBT = (AnswerVerdict.UNSURE.value, AnswerVerdict.NOT_FOUND.value)


def truth_of(expected: str | None) -> str:
    return {"yes": "true claim", "no": "false claim", "not_found": "no answer", "": "open"}.get(expected or "", "open")


def with_verdict(rag: MathRAG, reader: str) -> MathRAG:
    """``rag``'s settings with ``answers.verdict.reader`` set to ``reader``."""
    answers = rag.settings.answers
    verdict = answers.verdict.model_copy(update={"reader": reader})
    return MathRAG(rag.settings.model_copy(update={"answers": answers.model_copy(update={"verdict": verdict})}))


def collect_one(rag: MathRAG, reader: VerdictCrossEncoder, set_name: str, side: str, query: EvalQuery) -> VerdictRow:
    answer = rag.ask(query.text)
    choice = answer.generation.choice_of
    sources = list(answer.generation.sources if choice is not None else answer.sources[:4])
    gold = {docno for docno, grade in query.relevant.items() if grade > 0}
    refuting = set(query.metadata.get("refuted_by") or (gold if query.metadata.get("kind") == "opposite" else ()))
    readings = reader.readings(query.text, [hit.record for hit in sources])
    return VerdictRow(
        set=set_name,
        qid=query.qid,
        side=side,
        question=query.text,
        expected=query.metadata.get("expected"),
        yes_no=is_yes_no_question(query.text),
        relevance=answer.relevance,
        chooser=list(choice.probabilities) if choice is not None else [],
        order=list(choice.order) if choice is not None else list(range(1, len(sources) + 1)),
        readings=[reading.probabilities for reading in readings],
        answering=[bool(places(rag, hit) & gold) for hit in sources],
        refuting=[bool(places(rag, hit) & refuting) for hit in sources],
        kinds=[hit.record.kind.value for hit in sources],
        rules=rules_of(choice) if choice is not None else [],
    )


def collect(rag: MathRAG, work: Path) -> Path:
    sets = all_sets()
    halves = SetHalves.of(sets)
    reader = VerdictCrossEncoder()
    path = work / ROWS
    with path.open("w", encoding="utf-8") as handle:
        for query_set in sets:
            for query in tqdm(query_set.queries, desc=query_set.name, unit="q"):
                row = collect_one(rag, reader, query_set.name, halves.side(query_set.name, query.qid), query)
                if row.order:
                    handle.write(row.to_json() + "\n")
    return path


def measure(rag: MathRAG) -> list[dict[str, Any]]:
    """Each question asked: what the answer said (its verdict, confidence and first quote), judged, with timings."""
    sets = all_sets()
    halves = SetHalves.of(sets)
    outcomes = []
    for query_set in sets:
        for query in tqdm(query_set.queries, desc=query_set.name, unit="q"):
            started = time.perf_counter()
            answer = rag.ask(query.text)
            elapsed = (time.perf_counter() - started) * 1000
            sources = list(answer.generation.sources)
            read = answer.generation.verdict
            if read is None:  # the similarity gate stopped it (or no verdict was read)
                read = VerdictRead((), AnswerVerdict.NOT_FOUND, None, None, None)
            gold = {docno for docno, grade in query.relevant.items() if grade > 0}
            opposite = query.metadata.get("kind") == "opposite"
            refuting = set(query.metadata.get("refuted_by") or (gold if opposite else ()))
            row = VerdictRow(
                query_set.name, query.qid, halves.side(query_set.name, query.qid), query.text,
                query.metadata.get("expected"), is_yes_no_question(query.text), answer.relevance, [], list(read.order),
                [], [bool(places(rag, hit) & gold) for hit in sources],
                [bool(places(rag, hit) & refuting) for hit in sources], [hit.record.kind.value for hit in sources],
            )  # fmt: skip
            item = outcome(row, read)
            item.update(first_token_ms=answer.timings_ms.get("first_token"), answer_ms=round(elapsed, 1),
                        verdict_ms=answer.timings_ms.get("verdict"))  # fmt: skip
            outcomes.append(item)
    return outcomes


def model_adds(rag: MathRAG, limit: int) -> None:
    """Does the model's added statement (``answers.quote.model_adds``: the model reads the sources after the verdict's
    quote and may point to one more) help? Over questions sampled from the untouched halves where the model is asked
    (the ranker not sure): how often it adds one, and how often the added one answers where the first quote does
    not (the only place it can help), against the seconds it costs."""
    import random

    sets = [query_set for query_set in all_sets() if query_set.name != "no-answer-questions"]
    halves = SetHalves.of(sets)
    pool = [(s.name, q) for s in sets for q in s.queries if halves.side(s.name, q.qid) == "untouched"]
    rows = []
    for set_name, query in tqdm(random.Random(2026).sample(pool, min(limit, len(pool))), unit="q"):
        started = time.perf_counter()
        answer = rag.ask(query.text)
        seconds = time.perf_counter() - started
        gold = {docno for docno, grade in query.relevant.items() if grade > 0}
        sources = list(answer.generation.sources)
        answering = [bool(places(rag, hit) & gold) for hit in sources]
        picked = list(answer.generation.picked)
        asked = any(call.purpose == "choice" for call in answer.model_calls)
        rows.append({"set": set_name, "asked": asked, "first_settles": bool(picked) and answering[picked[0] - 1],
                     "added": len(picked) > 1, "added_answers": len(picked) > 1 and answering[picked[1] - 1],
                     "seconds": seconds, "verdict": answer.verdict})  # fmt: skip
    asked = [r for r in rows if r["asked"]]
    helped = [r for r in asked if r["added_answers"] and not r["first_settles"]]
    lines = [
        f"# The model's added statement ({time.strftime('%Y-%m-%d')}, {os.cpu_count()} CPUs)", "",
        f"{len(rows)} questions sampled from the untouched halves (no-answer set left out); the model asked for "
        f"{len(asked)}; it added a statement to {sum(r['added'] for r in asked)}; the added one answers for "
        f"{sum(r['added_answers'] for r in asked)}, and **where the first quote does not settle, for {len(helped)}** "
        f"(of {sum(not r['first_settles'] for r in asked)} such asked). Seconds per answer where asked: p50 "
        f"{_p(asked, 50)}, p95 {_p(asked, 95)}; where not asked: p50 {_p([r for r in rows if not r['asked']], 50)}.",
    ]  # fmt: skip
    (OUT / "verdict_answers-model-adds.md").write_text("\n".join(lines) + "\n")
    (OUT / "verdict_answers-model-adds.json").write_text(json.dumps(rows, indent=1) + "\n")
    print("\n".join(lines))


def _p(rows: list[dict[str, Any]], q: float) -> float | None:
    return round(float(np.percentile([r["seconds"] for r in rows], q)), 1) if rows else None


def _percentile(outcomes: list[dict[str, Any]], key: str, q: float) -> float | None:
    values = [o[key] for o in outcomes if o.get(key) is not None]
    return round(float(np.percentile(values, q)), 1) if values else None


def outcome(row: VerdictRow, read: VerdictRead) -> dict[str, Any]:
    """What the answer said of ``row`` and whether it was right."""
    first = read.order[0] if read.order else None
    settles = first is not None and row.answering[first - 1] and read.verdict is not AnswerVerdict.NOT_FOUND
    if read.verdict is AnswerVerdict.NO:
        settles = bool(first) and (row.refuting[first - 1] or row.answering[first - 1])
    return {
        "set": row.set,
        "side": row.side,
        "truth": truth_of(row.expected),
        "verdict": read.verdict.value,
        "confidence": read.confidence,
        "first_settles": bool(first) and row.answering[first - 1],
        "settles": bool(settles),
        "first_result_settles": bool(row.answering) and row.answering[0],
        "refuter_read": any(row.refuting),
        "gold_read": any(row.answering),
    }


def summarize(outcomes: list[dict[str, Any]]) -> dict[str, Any]:
    summary: dict[str, Any] = {}
    groups: dict[str, list[dict[str, Any]]] = {}
    for item in outcomes:
        groups.setdefault(f"{item['set']} / {item['side']}", []).append(item)
    groups["all sets / tune"] = [item for item in outcomes if item["side"] == "tune"]
    groups["all sets / untouched"] = [item for item in outcomes if item["side"] == "untouched"]
    for name, group in sorted(groups.items()):
        confusion = Counter((item["truth"], item["verdict"]) for item in group)
        not_settling = [item for item in group if not item["first_settles"]]
        undoubted = [item for item in group if item["verdict"] not in DOUBT]
        true_read = [item for item in group if item["truth"] == "true claim" and item["gold_read"]]
        false_read = [item for item in group if item["truth"] == "false claim" and item["refuter_read"]]
        no_answer = [item for item in group if item["truth"] == "no answer"]
        rated = [item for item in group if item["confidence"] is not None]
        confidence = np.array([item["confidence"] for item in rated], float)
        correct = np.array([item["first_settles"] for item in rated], float)
        count = lambda items, test: sum(bool(test(i)) for i in items)  # noqa: E731
        summary[name] = {
            "questions": len(group),
            "confusion": {f"{truth} -> {verdict}": n for (truth, verdict), n in sorted(confusion.items())},
            "settles": count(group, lambda i: i["settles"]),
            "first result settles": count(group, lambda i: i["first_result_settles"]),
            "yes for true claims whose statement was read": [
                count(true_read, lambda i: i["verdict"] == "yes"), len(true_read)],
            "no for false claims whose refuting statement was read": [
                count(false_read, lambda i: i["verdict"] == "no"), len(false_read)],
            "yes to a false claim": count(group, lambda i: i["verdict"] == "yes" and i["truth"] == "false claim"),
            "no to a true claim": count(group, lambda i: i["verdict"] == "no" and i["truth"] == "true claim"),
            "wrong yes": count(group, lambda i: i["verdict"] == "yes"
                               and (i["truth"] != "true claim" or not i["first_settles"])),
            "wrong no": count(group, lambda i: i["verdict"] == "no"
                              and (i["truth"] != "false claim" or not i["settles"])),
            "only under to a true claim": count(group, lambda i: i["verdict"] == "only_under"
                                                and i["truth"] == "true claim"),
            "nothing answers (no-answer questions)": [
                count(no_answer, lambda i: i["verdict"] == "not_found"), len(no_answer)],
            "doubt recall": [count(not_settling, lambda i: i["verdict"] in DOUBT), len(not_settling)],
            "doubt precision (undoubted that settle)": [count(undoubted, lambda i: i["settles"]), len(undoubted)],
            "ece": round(expected_calibration_error(confidence, correct), 3) if len(rated) else None,
        }
    return summary


def _settles(row: VerdictRow) -> list[float]:
    return [reading["yes"] + reading["no"] + reading["answers"] for reading in row.readings]


ORDERS = {
    "chooser": lambda row: row.chooser,
    "reader": _settles,
    "both": lambda row: [c * r for c, r in zip(row.chooser, _settles(row), strict=True)],
}


def orders_table(rows: list[VerdictRow]) -> str:
    """Whether the first source settles when the sources are ordered by the chooser, by the reader's probability
    that each settles, or by their product: per set and half (where the reader orders better, it may order)."""
    groups: dict[str, list[VerdictRow]] = {}
    for row in rows:
        if row.chooser:
            groups.setdefault(f"{row.set} / {row.side}", []).append(row)
            groups.setdefault(f"all sets / {row.side}", []).append(row)
    lines = ["| set / half | n | first settles, ordered by the chooser | by the reader | by both (product) |",
             "| --- | ---: | ---: | ---: | ---: |"]  # fmt: skip
    for name, group in sorted(groups.items()):
        counts = []
        for how in ORDERS.values():
            counts.append(sum(row.answering[int(np.argmax(how(row)))] for row in group))
        lines.append(f"| {name} | {len(group)} | " + " | ".join(map(str, counts)) + " |")
    return "\n".join(lines)


def markdown(summary: dict[str, Any], meta: dict[str, Any]) -> str:
    lines = [f"# The answer's verdict: {meta['name']} ({meta['date']}, {meta['machine']})", "", meta["about"], ""]
    lines += [
        "| set / half | n | settles | first result | yes (true, read) | no (false, refuter read) | yes to false "
        "| no to true | yes not judged (open or other quote) | no not judged | nothing answers (no-answer) "
        "| doubt recall | undoubted that settle | ECE |",
        "|" + " --- |" * 14,
    ]
    for name, s in summary.items():
        def pair(key: str, s: dict[str, Any] = s) -> str:
            return "/".join(map(str, s[key]))

        lines.append(
            f"| {name} | {s['questions']} | {s['settles']} | {s['first result settles']} | "
            f"{pair('yes for true claims whose statement was read')} | "
            f"{pair('no for false claims whose refuting statement was read')} | {s['yes to a false claim']} | "
            f"{s['no to a true claim']} | {s['wrong yes'] - s['yes to a false claim']} | "
            f"{s['wrong no'] - s['no to a true claim']} | "
            f"{pair('nothing answers (no-answer questions)')} | {pair('doubt recall')} | "
            f"{pair('doubt precision (undoubted that settle)')} | {s['ece']} |"
        )
    lines += ["", "## Verdict confusion (truth -> verdict)", ""]
    for name, s in summary.items():
        lines.append(f"- **{name}**: " + ", ".join(f"{key} {n}" for key, n in s["confusion"].items()))
    return "\n".join(lines) + "\n"


def plot(path: Path, outcomes: list[dict[str, Any]]) -> None:
    """The answer's confidence against whether its first quote settles, per half."""
    curves = {}
    for side in ("tune", "untouched"):
        rated = [o for o in outcomes if o["side"] == side and o["confidence"] is not None]
        curves[f"{side} halves"] = (np.array([o["confidence"] for o in rated]),
                                    np.array([o["first_settles"] for o in rated], float))  # fmt: skip
    axis = ("confidence (the answer's, that its first quote settles)", "share whose first quote settles")
    reliability_plot(path, curves, axis=axis, title="The answer's confidence: reliability")


def write(name: str, outcomes: list[dict[str, Any]], about: str, full: bool = True) -> None:
    """The summary as Markdown; with ``full``, its JSON and the reliability plot too (the replay of a collected run
    gives the same answers as ``measure``, which writes them)."""
    meta = {"name": name, "date": time.strftime("%Y-%m-%d"), "machine": f"{platform.machine()}, {os.cpu_count()} CPUs",
            "about": about}  # fmt: skip
    summary = summarize(outcomes)
    (OUT / f"verdict_answers-{name}.md").write_text(markdown(summary, meta))
    if full:
        summary_json = json.dumps({"meta": meta, "summary": summary}, indent=1)
        (OUT / f"verdict_answers-{name}.json").write_text(summary_json + "\n")
        plot(OUT / f"verdict_answers-{name}.png", outcomes)
    print(markdown(summary, meta))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("step", choices=("collect", "fit", "report", "measure", "model-adds"))
    parser.add_argument("--limit", type=int, default=60, help="model-adds: questions sampled from the untouched halves")
    parser.add_argument("--index", type=Path, default=DEFAULT_WORK / "index")
    parser.add_argument("--work", type=Path, default=DEFAULT_WORK)
    parser.add_argument("--policy", type=Path, default=PACKAGED_POLICY)
    parser.add_argument("--name", default=None)
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    if args.step == "collect":  # the readings are collected for the policy, so no policy decides here
        print(collect(with_verdict(open_rag(args.index, model_adds=False), "off"), args.work))
        return
    if args.step == "fit":
        policy = fit_policy(read_rows(args.work / ROWS))
        print(policy.save(args.policy), json.dumps(policy.to_dict(), indent=1))
        return
    if args.step == "report":
        policy = VerdictPolicy.load(args.policy)
        rows = read_rows(args.work / ROWS)
        outcomes = [outcome(row, replay(policy, row)) for row in rows]
        about = f"Replayed from {len(rows)} collected answers under `{args.policy.name}`.\n\n" + orders_table(rows)
        write(args.name or "replay", outcomes, about, full=False)
        return
    if args.step == "model-adds":
        model_adds(open_rag(args.index), args.limit)
        return
    reader = "off" if args.name == "off" else "packaged"
    rag = with_verdict(open_rag(args.index, model_adds=False), reader)
    outcomes = measure(rag)
    about = (f"Through `MathRAG.ask` (answers.verdict.reader {reader}, the model not asked), {len(outcomes)} "
             "questions; "
             f"first words p50 {_percentile(outcomes, 'first_token_ms', 50)} ms, answer p95 "
             f"{_percentile(outcomes, 'answer_ms', 95)} ms.")  # fmt: skip
    write(args.name or "live", outcomes, about)


if __name__ == "__main__":
    main()
