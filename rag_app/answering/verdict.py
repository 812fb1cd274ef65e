"""The answer's verdict: what its first quote settles of the question, in words, and how sure.

The stage reads each source with the verdict cross-encoder (:mod:`rag_app.answering.verdict_cross_encoder`: the
probabilities that it proves what is asked, refutes it, answers an open question, is related without settling, or
is unrelated) beside the chooser's probability that it answers. A calibration (:class:`VerdictPolicy`, a logistic
regression over :class:`VerdictInputs`, fitted on the labelled sets' tuning halves by
``python -m rag_app.training.fit_verdict_policy``) turns those into ``confidence``: the probability that the
statement quoted first settles the question. Four thresholds, set on the tuning halves, decide the verdict:

- ``not_found``: the confidence is under ``not_found_below``; the closest statements are quoted under "Nothing in
  the index answers this".
- ``no``: a yes/no question and a source the reader gives P(refutes) at least ``no_at``; it is quoted first.
- ``yes``: a yes/no question and the first quote's P(proves) at least ``yes_at``.
- ``unsure``: the confidence is under ``unsure_below``; "[n] is the closest statement found; it may not answer".
- ``answers``: the rest; the quote stands without a lead-in.

``only_under`` is in the vocabulary of the record but this reader does not say it: its "related" reading cannot tell
a dropped hypothesis from another statement of the same section, and a wrong "Only under" to a true claim is what the
answer must never say. Such a quote is ``unsure``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, fields
from enum import StrEnum
from pathlib import Path
from typing import Any

from ingestion.records import StatementKind
from rag_app.answering.verdict_reader import VerdictReading

PACKAGED_POLICY = Path(__file__).resolve().parent / "verdict_weights" / "verdict-policy.json"
POLICY_FORMAT = "rag-app-verdict-policy"
NOTHING_ANSWERS = "Nothing in the index answers this; the closest statements:"


class AnswerVerdict(StrEnum):
    YES = "yes"
    NO = "no"
    ONLY_UNDER = "only_under"
    ANSWERS = "answers"
    UNSURE = "unsure"
    NOT_FOUND = "not_found"


class VerdictPolicyError(ValueError):
    """A policy file that cannot be applied: the file and why."""


@dataclass(frozen=True, slots=True)
class VerdictInputs:
    """What the calibration reads of one answer, by name (a policy file names the inputs it was fitted on)."""

    chooser_first: float  # the chooser's probability that the first quote answers
    reader_settles_first: float  # the reader's P(proves, refutes or answers) of the first quote
    reader_unrelated_first: float
    reader_settles_other: float  # the most any other source settles, by the reader
    relevance: float  # the question's best cosine with a source
    asks_yes_no: float  # 1.0 where the question asks yes or no
    rules_yes_first: float  # 1.0 where the claim rules read the first quote as proving the claim

    def as_dict(self) -> dict[str, float]:
        return asdict(self)


INPUT_NAMES = tuple(field.name for field in fields(VerdictInputs))


@dataclass(frozen=True, slots=True)
class VerdictPolicy:
    """The calibration and the four thresholds, read from JSON."""

    names: tuple[str, ...]
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    weights: tuple[float, ...]
    bias: float
    not_found_below: float
    unsure_below: float
    yes_at: float  # the reader's P(proves) of the first quote, alone
    no_at: float  # the reader's P(refutes) of a source, alone
    yes_with_rules_at: float  # ... where the claim rules read it as proving the claim too
    no_with_rules_at: float  # ... where the claim rules read it as refuting (or opposite to) the claim too
    provenance: dict[str, Any]

    def confidence(self, inputs: VerdictInputs) -> float:
        values = inputs.as_dict()
        z = self.bias + sum(
            weight * (values[name] - mean) / scale
            for name, mean, scale, weight in zip(self.names, self.mean, self.scale, self.weights, strict=True)
        )
        return 1.0 / (1.0 + math.exp(-z))

    def to_dict(self) -> dict[str, Any]:
        return {"format": POLICY_FORMAT, "version": 1, **{f.name: getattr(self, f.name) for f in fields(self)}}

    def save(self, path: Path) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.to_dict(), indent=1, default=float) + "\n", encoding="utf-8")
        return path

    @classmethod
    def load(cls, spec: str | Path = "packaged") -> VerdictPolicy:
        path = PACKAGED_POLICY if str(spec) == "packaged" else Path(spec).expanduser()
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as error:
            raise VerdictPolicyError(f"cannot read the verdict policy {path}: {error}") from error
        if data.get("format") != POLICY_FORMAT:
            raise VerdictPolicyError(f"{path}: not a verdict policy (format {data.get('format')!r})")
        names = tuple(data.get("names") or ())
        unknown = [name for name in names if name not in INPUT_NAMES]
        if unknown:
            raise VerdictPolicyError(f"{path}: inputs this version does not compute: {', '.join(unknown)}")
        lacking = [name for name in INPUT_NAMES if name not in names]
        if lacking:
            raise VerdictPolicyError(f"{path}: lacks the inputs {', '.join(lacking)}; fit it again "
                                     "(bench/verdict_answers.py fit)")  # fmt: skip
        try:
            arrays = [tuple(float(v) for v in data[key]) for key in ("mean", "scale", "weights")]
            numbers = [float(data[key]) for key in ("bias", "not_found_below", "unsure_below", "yes_at", "no_at",
                                                    "yes_with_rules_at", "no_with_rules_at")]  # fmt: skip
        except (KeyError, TypeError, ValueError) as error:
            raise VerdictPolicyError(f"{path}: a missing or malformed field ({error})") from error
        if any(len(array) != len(names) for array in arrays):
            raise VerdictPolicyError(f"{path}: mean, scale and weights must each hold {len(names)} numbers")
        return cls(names, *arrays, *numbers, dict(data.get("provenance", {})))


@dataclass(frozen=True, slots=True)
class VerdictRead:
    """The verdict stage's output: the source numbers in the order to quote them (a refuting statement first),
    the verdict, the calibrated confidence that the first settles the question, and the lead-in above the quote."""

    order: tuple[int, ...]
    verdict: AnswerVerdict
    confidence: float | None
    lead_in: str | None
    inputs: VerdictInputs | None
    readings: tuple[VerdictReading, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict.value,
            "confidence": None if self.confidence is None else round(self.confidence, 4),
            "order": list(self.order),
            "inputs": None if self.inputs is None else {k: round(v, 4) for k, v in self.inputs.as_dict().items()},
            "readings": [
                {label: round(p, 4) for label, p in reading.probabilities.items()} for reading in self.readings
            ],
        }


def inputs_of(
    first: int,
    readings: Sequence[VerdictReading],
    chooser: Sequence[float],
    relevance: float | None,
    yes_no: bool,
    rules: Sequence[str | None] = (),
) -> VerdictInputs:
    """The calibration's inputs for quoting source ``first`` (numbered from 1) first; ``rules``: the claim rules'
    reading of each source (``yes``, ``no``, ``opposite``, ``only-if``, ``none``; None: not a yes/no question)."""
    others = [reading.settles for n, reading in enumerate(readings, start=1) if n != first]
    return VerdictInputs(
        chooser_first=float(chooser[first - 1]) if chooser else 0.0,
        reader_settles_first=readings[first - 1].settles,
        reader_unrelated_first=readings[first - 1].probabilities["unrelated"],
        reader_settles_other=max(others, default=0.0),
        relevance=float(relevance or 0.0),
        asks_yes_no=float(yes_no),
        rules_yes_first=float(len(rules) >= first and rules[first - 1] == "yes"),
    )


def decide(
    policy: VerdictPolicy,
    readings: Sequence[VerdictReading],
    order: Sequence[int],
    chooser: Sequence[float],
    relevance: float | None,
    yes_no: bool,
    kinds: Sequence[StatementKind] = (),
    rules: Sequence[str | None] = (),
) -> VerdictRead:
    """The verdict over sources numbered ``1..len(readings)``, quoted in ``order`` (the chooser's), unless a
    yes/no question's refuting statement goes first. ``kinds``: each source's kind (a counterexample's wording);
    ``rules``: the claim rules' reading of each source, one input beside the reader's (see :func:`inputs_of`): a
    "Yes" or "No" the rules agree with may be said at a lower reader probability, each threshold set on the tuning
    halves at the same bound of wrong verdicts."""
    if not readings:
        return VerdictRead((), AnswerVerdict.NOT_FOUND, None, None, None)
    order = tuple(order)

    def rule(number: int) -> str | None:
        return rules[number - 1] if len(rules) >= number else None

    if yes_no:
        ruled = [n for n in order if rule(n) in ("no", "opposite")]  # the rules' refuting reading, in quote order
        by_reader = max(range(1, len(readings) + 1), key=lambda n: readings[n - 1].probabilities["no"])
        refuting = ruled[0] if ruled else by_reader
        refutes = readings[refuting - 1].probabilities["no"]
        if refutes >= policy.no_at or (ruled and refutes >= policy.no_with_rules_at):
            order = (refuting, *(n for n in order if n != refuting))
            inputs = inputs_of(refuting, readings, chooser, relevance, yes_no, rules)
            example = bool(kinds) and kinds[refuting - 1] in (StatementKind.EXAMPLE, StatementKind.REMARK)
            lead = f"No: [{refuting}] gives a counterexample:" if example else f"No: [{refuting}] states the opposite:"
            return VerdictRead(order, AnswerVerdict.NO, policy.confidence(inputs), lead, inputs, tuple(readings))
    first = order[0]
    inputs = inputs_of(first, readings, chooser, relevance, yes_no, rules)
    confidence = policy.confidence(inputs)
    if confidence < policy.not_found_below:
        return VerdictRead(order, AnswerVerdict.NOT_FOUND, confidence, NOTHING_ANSWERS, inputs, tuple(readings))
    proves = readings[first - 1].probabilities["yes"]
    if yes_no and (proves >= policy.yes_at or (rule(first) == "yes" and proves >= policy.yes_with_rules_at)):
        return VerdictRead(order, AnswerVerdict.YES, confidence, f"Yes, as [{first}] states:", inputs, tuple(readings))
    if confidence < policy.unsure_below:
        lead = f"[{first}] is the closest statement found; it may not answer the question:"
        return VerdictRead(order, AnswerVerdict.UNSURE, confidence, lead, inputs, tuple(readings))
    return VerdictRead(order, AnswerVerdict.ANSWERS, confidence, None, inputs, tuple(readings))


def verdict_line(verdict: str, confidence: float | None) -> str:
    """The verdict and how sure, in one line (the CLI and the chat show it under the answer)."""
    sure = f"; {confidence:.0%} likely that the first quote settles the question" if confidence is not None else ""
    return f"Verdict: {verdict.replace('_', ' ')}{sure}."
