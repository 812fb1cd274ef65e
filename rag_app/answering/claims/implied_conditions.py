"""Conditions a question states without the statement's formula: "an integer greater than one" for ``n > 1``,
"degree 5" for ``n ≥ 5``, "every prime p" for ``p > 1``.

A statement writes its numeric hypotheses as formulas (``Let $n > 1$ be an integer``); a question types them in
words or implies them by what it names. Each such hypothesis, read as ``variable relation number``, is stated by
the question when the question gives a bound or a number that satisfies it. Only integer bounds are read (the
statements these rules compare are about integers, degrees, orders and primes); anything else stays a
hypothesis the question does not state. Pure reading of text, as the rest of this package.

Each reading here reads a class of phrasing (numbers and bounds in words). Readings that would each match one
claim of the development sets and no phrasing beyond it ("1/p" for reciprocals, "pairwise" for ``i ≠ j``,
"comaximal" for ``I + J = R``, "≡ 1 mod 4" for odd) are left out: a rule fitted to one sentence reads that sentence.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rag_app.answering.claims.vocabulary import NUMBER_WORDS

_NUMBER = r"(\d+|" + "|".join(NUMBER_WORDS) + r")"
_WORDED_BOUND = re.compile(
    r"\b(?:(greater|larger|bigger|more) than|(at least|no less than)|(less|smaller|fewer) than|(at most|no more than))"
    r"\s+" + _NUMBER + r"\b",
    re.IGNORECASE,
)
_MEASURED = re.compile(
    r"\b(?:degree|order|dimension|rank|genus|length|size|index|characteristic)\s+(?:of\s+)?(\d+)\b", re.IGNORECASE
)
_POSITIVE = re.compile(r"\bpositive\b", re.IGNORECASE)
_PRIME = re.compile(r"\bprimes?\b", re.IGNORECASE)
# A hypothesis as compared (rendered, no spaces): "n>1", "n≥5", "p≥3", "k<n" (the last is no numeric bound).
_BOUND_FORMULA = re.compile(r"^([^\W\d_]{1,2})(>|≥|<|≤)(\d+)$")


@dataclass(frozen=True, slots=True)
class StatedConditions:
    """What a question states of its numbers: the bounds it gives (relation, number), whether it speaks of
    primes, and its formulas as compared."""

    bounds: tuple[tuple[str, int], ...]
    primes: bool
    formulas: str

    @classmethod
    def of(cls, question: str, formulas: str) -> StatedConditions:
        bounds: list[tuple[str, int]] = []
        for match in _WORDED_BOUND.finditer(question):
            number = _as_number(match.group(5))
            relation = ">" if match.group(1) else "≥" if match.group(2) else "<" if match.group(3) else "≤"
            bounds.append((relation, number))
        bounds += [("=", int(match.group(1))) for match in _MEASURED.finditer(question)]
        if _POSITIVE.search(question):
            bounds.append((">", 0))
        return cls(tuple(bounds), bool(_PRIME.search(question)), formulas)

    def states(self, hypothesis: str) -> bool:
        """Whether the question states ``hypothesis``, a formula as compared ("n>1")."""
        match = _BOUND_FORMULA.match(hypothesis)
        if match is None:
            return False
        relation, bound = match.group(2), int(match.group(3))
        if self.primes and relation in (">", "≥") and (bound < 2 if relation == ">" else bound <= 2):
            return True  # a prime is at least 2
        return any(_implies(stated, number, relation, bound) for stated, number in self.bounds)


def _as_number(text: str) -> int:
    return int(text) if text.isdigit() else NUMBER_WORDS[text.lower()]


def _implies(stated: str, number: int, relation: str, bound: int) -> bool:
    """Whether an integer with ``stated number`` (">" 1, "=" 5) satisfies ``relation bound``."""
    low = {"=": number, ">": number + 1, "≥": number}.get(stated)
    high = {"=": number, "<": number - 1, "≤": number}.get(stated)
    if relation in (">", "≥"):
        return low is not None and (low > bound if relation == ">" else low >= bound)
    return high is not None and (high < bound if relation == "<" else high <= bound)
