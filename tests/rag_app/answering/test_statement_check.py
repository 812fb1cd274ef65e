"""The statement check: what the cited source states, not what it is about (the failures the issue lists)."""

from __future__ import annotations

import pytest

from rag_app.answering.claims.vocabulary import formula_shape
from rag_app.answering.statement_check import StatementChecker, split_hypotheses

CHECK = StatementChecker()
COHEN_MACAULAY = (
    r"Let $R$ be a Noetherian local ring and $M$ a Cohen-Macaulay $R$-module. Then every maximal chain of "
    r"primes in the support of $M$ has length $\dim(M)$."
)
FINITE_MODULE = r"Let $M$ be a finite $R$-module. Then there exists a surjection $R^{r} \to M$."
FIELD = r"Let $k$ be a field and $V$ a finite dimensional vector space over $k$. Then $V \cong k^n$ for some $n$."


def test_a_faithful_restatement_is_stated() -> None:
    sentence = (
        r"If $M$ is a Cohen-Macaulay module over a Noetherian local ring $R$, every maximal chain of primes "
        r"in the support of $M$ has length $\dim(M)$ [1]."
    )
    assert CHECK.check(sentence, COHEN_MACAULAY).stated


@pytest.mark.parametrize(
    ("sentence", "source", "problem"),
    [
        # a dropped hypothesis
        (r"In a Noetherian local ring every maximal chain of primes has length $\dim(M)$ [1].", COHEN_MACAULAY,
         "drops the hypothesis word 'cohen-macaulay'"),
        # one inserted word, the formula copied exactly
        (r"For a finite $R$-module $M$ there exists an injective surjection $R^{r} \to M$ [1].", FINITE_MODULE,
         "term not in the source: 'inject'"),
        # a field turned into a ring
        (r"For a finite dimensional vector space $V$ over a ring $k$, $V \cong k^n$ for some $n$ [1].", FIELD,
         "term not in the source: 'ring'"),
        # a formula the source does not have
        (r"For a finite $R$-module $M$ there exists a surjection $R \to M$ [1].", FINITE_MODULE,
         "formula not in the source"),
        # a reasoning link no source makes
        (r"There exists a surjection $R^{r} \to M$, and this implies $M$ is finite [1].", FINITE_MODULE,
         "reasoning link"),
        # an equivalence turned out of a one-way statement
        (r"$M$ is a finite $R$-module if and only if there exists a surjection $R^{r} \to M$ [1].", FINITE_MODULE,
         "an equivalence the source does not state"),
        # a negation added
        (r"For a finite $R$-module $M$ there exists no surjection $R^{r} \to M$ [1].", FINITE_MODULE,
         "negation not in the source"),
    ],
)  # fmt: skip
def test_what_the_source_does_not_state_is_caught(sentence: str, source: str, problem: str) -> None:
    check = CHECK.check(sentence, source)
    assert not check.stated and any(problem in p for p in check.problems), check.problems


def test_or_turned_into_and_is_caught() -> None:
    source = r"Let $x$ be an element of a local ring $R$. Then $x$ is a unit or $1 - x$ is a unit."
    check = CHECK.check(r"For $x$ in a local ring $R$, $x$ is a unit and $1 - x$ is a unit [1].", source)
    assert not check.stated and any("connective changed" in p for p in check.problems), check.problems


def test_formulas_are_equal_up_to_renaming_of_variables() -> None:
    assert formula_shape("IM = M") == formula_shape("J N=N") != formula_shape("IM = N")
    source = r"Let $I$ be an ideal and $M$ a finite module with $IM = M$. Then $M$ is zero."
    assert not any("formula" in p for p in CHECK.check(r"A finite module with $JN = N$ is zero.", source).problems)


def test_the_question_restated_is_not_support() -> None:
    question = "Is every compact subset of a Hausdorff space closed?"
    check = CHECK.check("Every compact subset of a Hausdorff space is closed.", "A compact set is bounded.", question)
    assert not check.stated
    source = "A compact subset of a metric space is bounded."
    check = CHECK.check("Every compact subset of a Hausdorff space is closed.", source, question)
    assert "restates the question" in check.problems
    # the question's words saying what the source states are not a restated question
    source = "Let $X$ be a Hausdorff space. Then every compact subset of $X$ is closed."
    assert CHECK.check("Every compact subset of a Hausdorff space is closed.", source, question).stated


def test_hypotheses_are_split_from_the_conclusion() -> None:
    hypotheses, conclusion = split_hypotheses(COHEN_MACAULAY)
    assert "Cohen-Macaulay" in hypotheses and "maximal chain" in conclusion and "Cohen" not in conclusion
    hypotheses, conclusion = split_hypotheses("If a group is finite, then every element has finite order.")
    assert "group" in hypotheses and "element" in conclusion
