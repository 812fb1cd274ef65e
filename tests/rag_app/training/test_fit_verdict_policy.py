"""Fitting the verdict's calibration and thresholds on the tuning halves (units, synthetic answers)."""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path

from rag_app.answering.verdict import AnswerVerdict, VerdictPolicy
from rag_app.training.fit_verdict_policy import VerdictRow, fit_policy, read_rows, replay


def row(qid: str, settles: bool, chooser: float, yes: float, expected: str | None, side: str = "tune") -> VerdictRow:
    reading = {"yes": yes, "no": 0.02, "answers": 0.02, "related": (1 - yes - 0.04) / 2,
               "unrelated": (1 - yes - 0.04) / 2}  # fmt: skip
    other = {"yes": 0.05, "no": 0.05, "answers": 0.05, "related": 0.45, "unrelated": 0.4}
    return VerdictRow("set", qid, side, "Is it?", expected, expected in ("yes", "no"), 0.6, [chooser, 0.1], [1, 2],
                      [reading, other], [settles, False], [False, False], ["lemma", "lemma"])  # fmt: skip


def answers(count: int, seed: int = 0) -> list[VerdictRow]:
    """Answers whose first quote settles about as often as the chooser says, the proving ones read "yes"."""
    rng = random.Random(seed)
    rows = []
    for n in range(count):
        chooser = rng.random()
        settles = rng.random() < chooser
        yes = 0.9 if settles and n % 2 else rng.uniform(0.05, 0.5)
        rows.append(row(f"q{n}", settles, chooser, yes, "yes" if settles else "no"))
    return rows


def test_the_policy_is_fitted_on_the_tuning_halves_and_its_yes_is_never_wrong_there(tmp_path: Path) -> None:
    rows = answers(400)
    untouched = [row(f"u{n}", False, 0.99, 0.99, "no", side="untouched") for n in range(50)]  # would spoil "yes"
    policy = fit_policy([*rows, *untouched])
    assert policy.provenance["fitted_on"].startswith("400 answers")
    assert 0.45 < policy.yes_at <= 0.9 and policy.no_at == 1.0  # no refuting statement: "No" is never said
    assert policy.not_found_below < policy.unsure_below
    said_yes = [r for r in rows if replay(policy, r).verdict is AnswerVerdict.YES]
    assert said_yes and all(r.expected == "yes" for r in said_yes)
    assert VerdictPolicy.load(policy.save(tmp_path / "policy.json")) == policy
    path = tmp_path / "rows.jsonl"
    path.write_text("\n".join(r.to_json() for r in rows[:3]) + "\n")
    assert read_rows(path) == rows[:3]


def test_an_answer_the_similarity_gate_stopped_is_nothing_found_and_not_fitted_on() -> None:
    gated = dataclasses.replace(row("g", False, 0.5, 0.5, None), chooser=[])
    policy = fit_policy(answers(200))
    read = replay(policy, gated)
    assert read.verdict is AnswerVerdict.NOT_FOUND and read.confidence is None and read.order == ()
