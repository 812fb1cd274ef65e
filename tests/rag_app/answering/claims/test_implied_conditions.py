"""Numeric hypotheses a question states in words or implies by what it names (units)."""

from __future__ import annotations

import pytest

from rag_app.answering.claims import Verdict, compare
from rag_app.answering.claims.implied_conditions import StatedConditions

WILSON = r"Let $p > 1$ be an integer. Then $p$ is prime if and only if $(p-1)! \equiv -1 \pmod p$."
FTA = r"Every integer $n > 1$ can be written as a product of primes, uniquely up to the order of the factors."
ABEL_RUFFINI = r"For $n \geq 5$ the general polynomial of degree $n$ is not solvable by radicals."
TWO_SQUARES = r"An odd prime $p$ is a sum of two squares if and only if $p \equiv 1 \pmod 4$."


@pytest.mark.parametrize(
    ("question", "formulas", "hypothesis", "stated"),
    [
        ("Does every integer greater than one factor into primes?", "", "n>1", True),
        ("Does every integer greater than one factor into primes?", "", "n>2", False),
        ("Is every integer at least 3 ...?", "", "n≥3", True),
        ("Is the general polynomial of degree 5 solvable?", "", "n≥5", True),
        ("Is the general polynomial of degree 4 solvable?", "", "n≥5", False),
        ("Is (p-1)! congruent to -1 mod p for every prime p?", "", "p>1", True),
        ("Is (p-1)! congruent to -1 mod p for every prime p?", "", "p>2", False),
        # issue 92: readings that matched one development claim each are gone (not a class of phrasing)
        ("Is every prime p congruent to 1 mod 4 a sum of two squares?", "p≡1(mod4)", "odd", False),
        ("Is every integer congruent to 1 mod 3 odd?", "n≡1(mod3)", "odd", False),
        ("Does the sum of 1/p over all primes diverge?", "1/p", "reciprocals", False),
        ("Is every positive integer a sum of four squares?", "", "n>0", True),
        ("Is every integer at most 10 ...?", "", "n<11", True),
        ("Is every integer at most 10 ...?", "", "n<10", False),
    ],
)  # fmt: skip
def test_a_condition_is_stated_where_the_question_gives_a_bound_that_satisfies_it(
    question: str, formulas: str, hypothesis: str, stated: bool
) -> None:
    assert StatedConditions.of(question, formulas).states(hypothesis) is stated


def test_the_comparison_reads_conditions_stated_in_words() -> None:
    assert compare("Is (p-1)! congruent to -1 mod p for every prime p?", WILSON).verdict is Verdict.YES
    assert compare("Does every integer greater than one factor into primes uniquely up to order?", FTA).verdict in (
        Verdict.YES,
    )
    assert compare("Is the general polynomial of degree 5 not solvable by radicals?", ABEL_RUFFINI).verdict is (
        Verdict.YES
    )
    # degree 4 does not satisfy n >= 5: the hypothesis is still the question's to state
    four = compare("Is the general polynomial of degree 4 not solvable by radicals?", ABEL_RUFFINI)
    assert four.verdict is not Verdict.YES
    # "odd" is a hypothesis the question states only through its congruence: no longer read (issue 92)
    assert compare("Is every prime p congruent to 1 mod 4 a sum of two squares?", TWO_SQUARES).verdict is not (
        Verdict.YES
    )
