"""Fitting the verdict's calibration and thresholds (:class:`rag_app.answering.verdict.VerdictPolicy`).

The rows are answers (``bench/verdict_answers.py collect``): for each question of the labelled sets, the sources
the answer read, the chooser's probabilities and order, the verdict reader's readings of each source, and the
truth (which sources answer; which refute a false claim). Only the tuning halves are fitted on:

- the **calibration**: a logistic regression from :class:`~rag_app.answering.verdict.VerdictInputs` of the chooser's
  first source to whether it answers; its confidences for setting the thresholds are cross-validated (five folds),
  so the thresholds are not set on probabilities the calibration was fitted to;
- ``yes_at`` / ``no_at``: the least reader probability at which "Yes" / "No" was wrong at most 1 time in 100 (a
  "Yes" is wrong where the claim is false or the quote does not prove it; a "No" where the claim is true or the
  statement quoted does not refute it);
- ``not_found_below``: the highest confidence under which, of the answers so flagged, at most 1 in 10 had a source
  that answers;
- ``unsure_below``: the least confidence at which the answers shown without doubt settle at least 92 times in 100
  (the target is 9 in 10, on halves the thresholds never saw).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from ingestion.records import StatementKind
from rag_app.answering.verdict import INPUT_NAMES, AnswerVerdict, VerdictPolicy, VerdictRead, decide, inputs_of
from rag_app.answering.verdict_reader import VerdictReading, expected_calibration_error
from rag_app.datasets.set_halves import TUNE

WRONG_VERDICTS_AT_MOST = 0.01
NOTICE_WRONG_AT_MOST = 0.10
SHOWN_SETTLE_AT_LEAST = 0.92


@dataclass(frozen=True, slots=True)
class VerdictRow:
    """One answer as the verdict reads it, with the truth."""

    set: str
    qid: str
    side: str
    question: str
    expected: str | None  # "yes", "no", "" (an open question), "not_found", or None (a known-item query)
    yes_no: bool
    relevance: float | None
    chooser: list[float]  # empty: the similarity gate stopped the answer before the chooser read anything
    order: list[int]
    readings: list[dict[str, float]]
    answering: list[bool]  # per source: it answers (a statement judged to answer, or one word for word the same)
    refuting: list[bool]  # per source: it is the statement that refutes the (false) claim
    kinds: list[str]

    def reading_objects(self) -> list[VerdictReading]:
        return [VerdictReading(reading) for reading in self.readings]

    def to_json(self) -> str:
        return json.dumps(asdict(self), ensure_ascii=False)


def read_rows(path: Path) -> list[VerdictRow]:
    return [VerdictRow(**json.loads(line)) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def replay(policy: VerdictPolicy, row: VerdictRow) -> VerdictRead:
    """The verdict the answer gives for ``row`` under ``policy`` (what :class:`~rag_app.answering.answerer` does)."""
    if not row.chooser:  # the similarity gate: nothing was read, nothing is quoted as the answer
        return VerdictRead((), AnswerVerdict.NOT_FOUND, None, None, None)
    kinds = [StatementKind(kind) for kind in row.kinds]
    return decide(policy, row.reading_objects(), row.order, row.chooser, row.relevance, row.yes_no, kinds)


def _first_inputs(row: VerdictRow) -> list[float]:
    values = inputs_of(row.order[0], row.reading_objects(), row.chooser, row.relevance, row.yes_no).as_dict()
    return [values[name] for name in INPUT_NAMES]


def fit_policy(rows: Sequence[VerdictRow], c: float = 1.0, seed: int = 2026) -> VerdictPolicy:
    """The calibration and thresholds fitted on the tuning halves of ``rows``."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import cross_val_predict

    tuning = [row for row in rows if row.side == TUNE and row.order and row.chooser]
    x = np.array([_first_inputs(row) for row in tuning])
    y = np.array([row.answering[row.order[0] - 1] for row in tuning], dtype=int)
    mean, scale = x.mean(axis=0), x.std(axis=0)
    scale[scale == 0] = 1.0
    z = (x - mean) / scale
    model = LogisticRegression(C=c, max_iter=1000)
    folds = np.random.default_rng(seed).permutation(len(tuning)) % 5
    splits = [(np.flatnonzero(folds != k), np.flatnonzero(folds == k)) for k in range(5)]
    crossed = cross_val_predict(model, z, y, cv=splits, method="predict_proba")[:, 1]
    model.fit(z, y)
    yes_at = _least_safe([r.readings[r.order[0] - 1]["yes"] for r in tuning if r.yes_no],
                         [r.expected == "yes" and r.answering[r.order[0] - 1] for r in tuning if r.yes_no])  # fmt: skip
    no_scores, no_right = [], []
    for row in (r for r in tuning if r.yes_no):
        best = int(np.argmax([reading["no"] for reading in row.readings]))
        no_scores.append(row.readings[best]["no"])
        no_right.append(row.expected == "no" and row.refuting[best])
    no_at = _least_safe(no_scores, no_right)
    any_answer = np.array([any(row.answering) for row in tuning])
    not_found_below = 0.0
    for threshold in np.linspace(0.02, 0.6, 59):
        flagged = crossed < threshold
        if flagged.any() and any_answer[flagged].mean() <= NOTICE_WRONG_AT_MOST:
            not_found_below = float(threshold)
    unsure_below = 1.0
    for threshold in np.linspace(0.99, not_found_below, 100):
        shown = crossed >= threshold
        if shown.any() and y[shown].mean() >= SHOWN_SETTLE_AT_LEAST:
            unsure_below = float(threshold)
    provenance = {
        "fitted_on": f"{len(tuning)} answers of the tuning halves",
        "sets": sorted({row.set for row in tuning}),
        "c": c,
        "cross_validated_ece": round(expected_calibration_error(crossed, y.astype(float)), 4),
    }
    return VerdictPolicy(
        INPUT_NAMES, tuple(mean.tolist()), tuple(scale.tolist()), tuple(model.coef_[0].tolist()),
        float(model.intercept_[0]), not_found_below, unsure_below, yes_at, no_at, provenance,
    )  # fmt: skip


def _least_safe(scores: Sequence[float], right: Sequence[bool]) -> float:
    """The least threshold at which saying it where the score reaches it was wrong at most 1 time in 100, and
    said at least once (1.0, never said, where none is)."""
    scores_array, right_array = np.asarray(scores, float), np.asarray(right, bool)
    for threshold in np.linspace(0.3, 0.995, 140):
        said = scores_array >= threshold
        if said.any() and (~right_array[said]).mean() <= WRONG_VERDICTS_AT_MOST:
            return float(threshold)
    return 1.0
