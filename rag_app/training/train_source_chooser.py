"""Fitting the answer's learned chooser (``rag-app train chooser``).

The rows come from ``bench/answer_choice.py collect``: for each question of every set, the sources the answer
reads, what the chooser reads of each (:data:`rag_app.answering.source_features.FEATURE_NAMES`) and whether each
answers the question. Only the tuning halves are fitted on (:mod:`rag_app.datasets.set_halves`).

- **The model**: scikit-learn's L2 logistic regression on standardized features, one row per source, so its
  output is a probability that the source answers.
- **Cross-validation**: five folds over the tuning rows, grouped by statement (no statement's questions on both
  sides of a fold); the out-of-fold probabilities report how often the chooser's first quote answers against
  the search's first result, and set the two thresholds the answer reads:
  ``notice_below`` (the notice that none answers: wrong at most 1 time in 10) and ``check_below`` (a "Check"
  above a yes/no quote: above a statement that answers at most 1 time in 10).
- **Stored** as JSON (:class:`rag_app.answering.source_chooser.SourceChooser`): features, scaling, weights,
  thresholds and the cross-validated figures as provenance.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from rag_app.answering.source_chooser import SourceChooser
from rag_app.answering.source_features import FEATURE_NAMES
from rag_app.datasets.set_halves import TUNE

MAX_WRONG_NOTICE = 0.10  # of the notices shown, at most this share with an answering statement among the sources
MAX_FALSE_CHECK = 0.10  # of the "Check" lead-ins shown, at most this share above an answering statement
FOLDS = 5


class ChooserRowsError(ValueError):
    """Rows that cannot be read: the file, the line and why."""


@dataclass(frozen=True, slots=True)
class ChoiceRow:
    """One question: its sources' features (search order), which of them answer, and where it stands."""

    set: str
    qid: str
    side: str
    group: str
    features: np.ndarray
    labels: np.ndarray
    check: np.ndarray  # per source: the rules' lead-in above it would be a "Check against the question"


def read_rows(path: Path) -> list[ChoiceRow]:
    lines = path.read_text(encoding="utf-8").splitlines()
    if not lines:
        raise ChooserRowsError(f"{path}: empty: expected a header line naming the features")
    names = tuple(json.loads(lines[0]).get("features", ()))
    if names != FEATURE_NAMES:
        raise ChooserRowsError(f"{path}:1: the rows hold features {names}, this version computes {FEATURE_NAMES}")
    rows = []
    for number, line in enumerate(lines[1:], start=2):
        try:
            data = json.loads(line)
            features = np.asarray(data["features"], np.float64).reshape(-1, len(FEATURE_NAMES))
            labels = np.asarray(data["labels"], bool)
            check = np.asarray(data.get("check") or [False] * len(labels), bool)
            if len(labels) != len(features) or len(check) != len(features):
                raise ValueError("features, labels and check differ in length")
            rows.append(ChoiceRow(data["set"], data["qid"], data["side"], data["group"], features, labels, check))
        except (KeyError, ValueError, TypeError) as error:
            raise ChooserRowsError(f"{path}:{number}: {error}") from error
    return rows


def fit(rows: Sequence[ChoiceRow], c: float = 1.0) -> SourceChooser:
    """The logistic regression over ``rows`` (thresholds left at 0; :func:`train` sets them)."""
    from sklearn.linear_model import LogisticRegression

    x = np.concatenate([row.features for row in rows])
    y = np.concatenate([row.labels for row in rows])
    mean, scale = x.mean(axis=0), x.std(axis=0)
    scale = np.where(scale > 0, scale, 1.0)
    model = LogisticRegression(C=c, max_iter=2000).fit((x - mean) / scale, y)
    return SourceChooser(FEATURE_NAMES, mean, scale, model.coef_[0], float(model.intercept_[0]), 0.0, 0.0, {})


def out_of_fold(rows: Sequence[ChoiceRow], folds: int = FOLDS, c: float = 1.0) -> list[np.ndarray]:
    """Each row's probabilities from a chooser fitted without its statement group."""
    groups = sorted({row.group for row in rows})
    fold_of = {group: n % folds for n, group in enumerate(_shuffled(groups))}
    probabilities: list[np.ndarray] = [np.zeros(0)] * len(rows)
    for fold in range(folds):
        train = [row for row in rows if fold_of[row.group] != fold]
        chooser = fit(train, c)
        for n, row in enumerate(rows):
            if fold_of[row.group] == fold:
                probabilities[n] = chooser.of_matrix(row.features)
    return probabilities


def notice_threshold(rows: Sequence[ChoiceRow], probabilities: Sequence[np.ndarray]) -> float:
    """The highest best-source probability under which the notice is wrong at most ``MAX_WRONG_NOTICE`` of the
    time (0: never a notice)."""
    best = np.array([p.max() if len(p) else 0.0 for p in probabilities])
    read = np.array([bool(row.labels.any()) for row in rows])
    return _highest_threshold(best, read)


def check_threshold(rows: Sequence[ChoiceRow], probabilities: Sequence[np.ndarray]) -> float:
    """The highest probability of the chosen source under which a "Check" stands above an answering statement
    at most ``MAX_FALSE_CHECK`` of the time (0: never a Check)."""
    chosen_p, answers = [], []
    for row, p in zip(rows, probabilities, strict=True):
        if len(p) and row.check[int(np.argmax(p))]:
            first = int(np.argmax(p))
            chosen_p.append(p[first])
            answers.append(bool(row.labels[first]))
    return _highest_threshold(np.array(chosen_p), np.array(answers, bool), MAX_FALSE_CHECK)


def _highest_threshold(scores: np.ndarray, wrong_if: np.ndarray, limit: float = MAX_WRONG_NOTICE) -> float:
    """The largest t (among ``scores``) such that of the items under t, at most ``limit`` have ``wrong_if``, counted
    with one wrong item more than were seen ((wrong + 1) / (shown + 1)): a threshold set on a handful of doubts
    shown must not promise more than they can tell (a notice right 3 times in 3 is not "wrong under 1 in 10")."""
    best = 0.0
    for t in np.unique(np.concatenate([scores, [1.0]])):
        under = scores < t
        if under.any() and (wrong_if[under].sum() + 1) / (under.sum() + 1) <= limit:
            best = float(t)
    return best


def figures(rows: Sequence[ChoiceRow], probabilities: Sequence[np.ndarray], notice_below: float) -> dict[str, Any]:
    """How the choice does on ``rows`` against quoting the search's first result."""
    count = len(rows)
    first = sum(bool(row.labels[0]) for row in rows if len(row.labels))
    chosen = notices = wrong = 0
    for row, p in zip(rows, probabilities, strict=True):
        if not len(p):
            continue
        if p.max() < notice_below:
            notices += 1
            wrong += bool(row.labels.any())
        elif row.labels[int(np.argmax(p))]:
            chosen += 1
    return {
        "questions": count,
        "first result answers": first,
        "chooser's first answers (no notice)": chosen,
        "notices": notices,
        "notices wrong": wrong,
        "an answering statement read": sum(bool(row.labels.any()) for row in rows),
    }


def train(rows_path: Path, out: Path, c: float = 1.0) -> tuple[SourceChooser, dict[str, Any]]:
    """Fit on the tuning halves of ``rows_path``, set the thresholds by cross-validation, write ``out``."""
    rows = read_rows(rows_path)
    tune = [row for row in rows if row.side == TUNE and len(row.labels)]
    if len({row.group for row in tune}) < FOLDS:
        raise ChooserRowsError(f"{rows_path}: {len(tune)} tuning questions: too few to cross-validate")
    oof = out_of_fold(tune, FOLDS, c)
    notice_below = notice_threshold(tune, oof)
    check_below = check_threshold(tune, oof)
    cross_validated = figures(tune, oof, notice_below)
    chooser = fit(tune, c)
    by_set: dict[str, Any] = {}
    for name in sorted({row.set for row in tune}):
        part = [(row, p) for row, p in zip(tune, oof, strict=True) if row.set == name]
        by_set[name] = figures([r for r, _ in part], [p for _, p in part], notice_below)
    provenance = {
        "trained": time.strftime("%Y-%m-%d"),
        "rows": rows_path.name,
        "fitted on": f"{len(tune)} questions of the tuning halves ({sum(len(r.labels) for r in tune)} sources)",
        "regularization C": c,
        "cross-validated (5 folds by statement)": cross_validated,
        "cross-validated by set": by_set,
        "notice": f"none reaches {notice_below:.3f}: wrong at most {MAX_WRONG_NOTICE:.0%} out of fold",
        "check": f"the quote's probability under {check_below:.3f}: over an answer at most {MAX_FALSE_CHECK:.0%}",
    }
    chooser = SourceChooser(
        chooser.names, chooser.mean, chooser.scale, chooser.coef, chooser.intercept, notice_below, check_below,
        provenance,
    )  # fmt: skip
    chooser.save(out)
    return chooser, provenance


def _shuffled(items: list[str]) -> list[str]:
    rng = np.random.default_rng(92)
    return [items[i] for i in rng.permutation(len(items))]
