"""The verdict reader's training and measuring data: questions made from the corpus and the labelled sets' questions,
each against a statement with what it settles of it, and the report of a reader's readings per source and half.

- **Pairs made from the corpus** (:mod:`rag_app.training.verdict_pairs`): questions made from statements of the
  Stacks project, the HoTT book and the thesis sample, each labelled with what its statement settles of it, split by
  statement: four fifths trained on, one fifth held out (the temperature is fitted there).
- **The labelled sets** (``eval/questions``): each question against the statement that settles it, labelled from
  its metadata (a true claim: ``yes``; a false one against the statement that refutes it: ``no``; a false one
  against the statement it drops a hypothesis of, reverses, or strengthens: ``related``; an open question:
  ``answers``), and each question no statement answers against its nearest statement of the corpus (``related``
  near the corpus, ``unrelated`` far from it), on their sides (:mod:`rag_app.datasets.set_halves`).
- **Reported** per set and half: the confusion of truth against verdict, the share of settling pairs said to
  settle and of the others said not to, and the calibration error of the probability that the statement settles
  the question, with a reliability plot.
"""

from __future__ import annotations

import hashlib
import itertools
import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ingestion.records import StatementRecord
from rag_app.answering.verdict_reader import (
    LABELS,
    SETTLING,
    expected_calibration_error,
)
from rag_app.datasets.query_set import QuerySet
from rag_app.datasets.set_halves import TUNE, SetHalves
from rag_app.training.verdict_pairs import VerdictPair

ROOT = Path(__file__).resolve().parents[2]
QUESTIONS = ROOT / "eval" / "questions"
LABELLED_SETS = (
    "yes-no-claims.v1.jsonl",
    "research-claims.v1.jsonl",
    "research-questions-apart.v1.jsonl",
    "stacks-research-questions.v1.jsonl",
    "yes-no-questions.v1.jsonl",
    "no-answer-questions.v1.jsonl",
)
SYNTHETIC = "corpus pairs"
HELD_OUT_SHARE = 0.2


@dataclass(frozen=True, slots=True)
class LabelledPair:
    """A question against one statement, with the truth and where it stands."""

    question: str
    statement: StatementRecord
    label: str
    source: str  # the set's name, or SYNTHETIC
    side: str  # TUNE, UNTOUCHED, or for made pairs "fit" / "held out"


def labelled_pairs(
    sets: Sequence[QuerySet], records: dict[str, StatementRecord], nearest: dict[str, StatementRecord]
) -> list[LabelledPair]:
    """Each question of ``sets`` against the statement that settles it (``records`` by docno), or, for a question
    no statement answers, against ``nearest[qid]``; its side by :class:`SetHalves`."""
    halves = SetHalves.of(sets)
    pairs = []
    for query_set in sets:
        for query in query_set.queries:
            side = halves.side(query_set.name, query.qid)
            metadata = query.metadata or {}
            if metadata.get("expected") == "not_found":
                statement = nearest.get(query.qid)
                if statement is not None:
                    label = "related" if metadata.get("corpus_near") else "unrelated"
                    pairs.append(LabelledPair(query.text, statement, label, query_set.name, side))
                continue
            for docno, grade in query.relevant.items():
                statement = records.get(docno)
                label = _truth(metadata, docno)
                if grade > 0 and statement is not None and label is not None:
                    pairs.append(LabelledPair(query.text, statement, label, query_set.name, side))
    return pairs


def _truth(metadata: dict[str, Any], docno: str) -> str | None:
    expected = metadata.get("expected")
    if expected == "yes":
        return "yes"
    if expected == "":
        return "answers"
    if expected == "no":
        refuted_by = metadata.get("refuted_by")
        if refuted_by == docno or (refuted_by is None and metadata.get("kind") == "opposite"):
            return "no"
        return "related"  # proves it under a hypothesis the claim drops, or the converse, or something weaker
    return None


def docno(record: StatementRecord) -> str:
    return f"{record.paper_id}#{record.label}"


def made_pairs(pairs: Sequence[VerdictPair], records: dict[str, StatementRecord]) -> list[LabelledPair]:
    """The made pairs as labelled pairs, a fifth of the statements held out (by a hash of the statement)."""
    found = []
    for pair in pairs:
        statement = records.get(pair.statement_id)
        if statement is None:
            continue
        held_out = hashlib.sha256(pair.statement_id.encode()).digest()[0] < 256 * HELD_OUT_SHARE
        found.append(LabelledPair(pair.question, statement, pair.label, SYNTHETIC, "held out" if held_out else "fit"))
    return found


def said_thresholds(probabilities: np.ndarray, pairs: Sequence[LabelledPair], wrong_at_most: float = 0.01) -> dict:
    """For "yes" and for "no": the least probability above which saying it was wrong at most ``wrong_at_most`` of
    the times on the labelled tuning halves (the two sides of a verdict: how often it is said, how often wrong)."""
    tuning = [row for row, pair in enumerate(pairs) if pair.source != SYNTHETIC and pair.side == TUNE]
    found = {}
    for label in ("yes", "no"):
        column = probabilities[tuning, LABELS.index(label)]
        right = np.array([pairs[row].label == label for row in tuning])
        found[label] = 1.0
        for threshold in np.linspace(0.5, 0.995, 100):
            said = column >= threshold
            if said.any() and (~right[said]).mean() <= wrong_at_most:
                found[label] = float(threshold)
                break
    return found


def measure(
    probabilities: np.ndarray, pairs: Sequence[LabelledPair], thresholds: dict[str, float] | None = None
) -> dict[str, Any]:
    """Per source and side: the confusion, settle recall and precision, the calibration of P(settles), and with
    ``thresholds`` how often "yes" and "no" are said above them and how often wrongly. ``probabilities``: one row
    of the five readings' calibrated probabilities per pair."""
    settles = probabilities[:, [LABELS.index(label) for label in SETTLING]].sum(axis=1)
    verdicts = [LABELS[i] for i in probabilities.argmax(axis=1)]
    groups: dict[str, list[int]] = {}
    for row, pair in enumerate(pairs):
        groups.setdefault(f"{pair.source} / {pair.side}", []).append(row)
    report: dict[str, Any] = {}
    for name, rows in sorted(groups.items()):
        truth = [pairs[row].label for row in rows]
        said = [verdicts[row] for row in rows]
        settled = np.array([label in SETTLING for label in truth])
        says_settles = settles[rows] >= 0.5
        report[name] = {
            "pairs": len(rows),
            "confusion": {f"{t} -> {s}": n for (t, s), n in sorted(Counter(zip(truth, said, strict=True)).items())},
            "exact": round(float(np.mean([t == s for t, s in zip(truth, said, strict=True)])), 3),
            "settling_said_to_settle": _share(says_settles[settled]),
            "not_settling_said_not_to": _share(~says_settles[~settled]),
            "said_to_settle_that_settle": _share(settled[says_settles]),
            "ece_settles": round(expected_calibration_error(settles[rows], settled.astype(float)), 3),
            "wrong_yes_or_no": int(sum(s in ("yes", "no") and s != t for t, s in zip(truth, said, strict=True))),
        }
        for label, threshold in (thresholds or {}).items():
            above = [row for row in rows if probabilities[row, LABELS.index(label)] >= threshold]
            report[name][f"{label}_said_above_threshold"] = len(above)
            report[name][f"{label}_wrong_above_threshold"] = sum(pairs[row].label != label for row in above)
            report[name][f"{label}_true_pairs"] = sum(pairs[row].label == label for row in rows)
    return report


def markdown(title: str, made_by: str, report: dict[str, Any]) -> str:
    """The report as a table: one row per source and half, under ``title`` and the line ``made_by``."""
    lines = [
        f"# {title}",
        "",
        made_by,
        "",
        "Settle: the probability that the statement settles the question (yes, no or answers) is at least 0.5.",
        "",
        "| source / half | pairs | exact | settling said to settle | not settling said not to | said to settle that "
        "do | ECE | wrong yes/no (argmax) | yes above threshold (wrong) | no above threshold (wrong) |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name, row in report.items():
        yes = f"{row.get('yes_said_above_threshold', '')} ({row.get('yes_wrong_above_threshold', '')})"
        no = f"{row.get('no_said_above_threshold', '')} ({row.get('no_wrong_above_threshold', '')})"
        lines.append(
            f"| {name} | {row['pairs']} | {row['exact']:.3f} | {row['settling_said_to_settle']} | "
            f"{row['not_settling_said_not_to']} | {row['said_to_settle_that_settle']} | {row['ece_settles']:.3f} | "
            f"{row['wrong_yes_or_no']} | {yes} | {no} |"
        )
    return "\n".join(lines) + "\n"


def _share(flags: np.ndarray) -> str:
    return f"{int(flags.sum())}/{len(flags)}"


def reliability_plot(
    path: Path,
    curves: dict[str, tuple[np.ndarray, np.ndarray]],
    bins: int = 10,
    axis: tuple[str, str] = ("P(the statement settles the question)", "share that settle"),
    title: str = "Verdict reader: reliability",
) -> None:
    """Stated probability against the share right, one curve per group (bins of at least 5), each with its ECE."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(5.5, 5))
    axes.plot([0, 1], [0, 1], color="grey", linestyle="--", linewidth=1, label="calibrated")
    edges = np.linspace(0, 1, bins + 1)
    for name, (confidence, correct) in curves.items():
        points = []
        for low, high in itertools.pairwise(edges):
            inside = (confidence >= low) & (confidence <= high)
            if inside.sum() >= 5:
                points.append((float(confidence[inside].mean()), float(correct[inside].mean())))
        if points:
            error = expected_calibration_error(confidence, correct)
            axes.plot(*zip(*points, strict=True), marker="o", label=f"{name} (ECE {error:.3f}, n {len(confidence)})")
    axes.set_xlabel(axis[0])
    axes.set_ylabel(axis[1])
    axes.set_title(title)
    axes.legend(fontsize=7)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)


def nearest_statements(sets: Sequence[QuerySet], records: Sequence[StatementRecord]) -> dict[str, StatementRecord]:
    """For each question no statement answers, the statement of the corpus BM25 ranks first for it: a statement a
    search would put before the reader (BM25, not the dense model: embedding the whole corpus takes most of an hour
    on 2 CPUs)."""
    from retriever.storage.bm25_index import BM25Index

    asked = [
        query for query_set in sets for query in query_set.queries
        if (query.metadata or {}).get("expected") == "not_found"
    ]  # fmt: skip
    if not asked:
        return {}
    by_id = {record.id: record for record in records}
    index = BM25Index.build(list(by_id), [record.search_text() for record in by_id.values()])
    found = {}
    for query in asked:
        best = index.search(query.text, 1)
        if best:
            found[query.qid] = by_id[best[0].id]
    return found


def sampled(pairs: Sequence[VerdictPair], statements: int, rng: random.Random) -> list[VerdictPair]:
    """The made pairs of ``statements`` statements drawn at random (embedding every statement of the corpus would
    take most of an hour on 2 CPUs)."""
    chosen = sorted({pair.statement_id for pair in pairs})
    keep = set(rng.sample(chosen, min(statements, len(chosen))))
    return [pair for pair in pairs if pair.statement_id in keep]

