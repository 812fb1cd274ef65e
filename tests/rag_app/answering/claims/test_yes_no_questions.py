"""Yes/no questions, their negations, and the topic a statement shares with them (the claims' one stemmer)."""

from __future__ import annotations

import pytest

from rag_app.answering.claims import is_yes_no_question, negates, topic_overlap
from rag_app.answering.claims.claim_terms import stem_of
from rag_app.answering.claims.yes_no_questions import topic_words


def test_topic_words_are_stemmed_as_the_claims_are_so_a_word_family_is_one_topic() -> None:
    assert topic_words("Is every compact set closed?") == {stem_of("compact"), "set", stem_of("closed")}
    assert topic_words("Are integrals of compactly supported functions finite?") >= {stem_of("integral")}
    assert topic_words("converges") == topic_words("convergence") == {stem_of("converges")}


def test_topic_overlap_is_the_share_of_the_question_topic_the_statement_uses() -> None:
    statement = "A compact subset of a Hausdorff space is closed."
    assert topic_overlap("Is every compact subset of a Hausdorff space closed?", statement) == 1.0
    assert topic_overlap("Is every compact subset of a metric space closed?", statement) == 0.8  # of 5
    assert topic_overlap("Is it true?", statement) == 1.0  # nothing asked: nothing to miss


def test_negations_and_yes_no_openings() -> None:
    assert negates("Is a non-abelian group of order 6 cyclic?") and negates("Does the series fail to converge?")
    assert not negates("Is every PID a UFD?")
    assert is_yes_no_question("If p is prime, is Z/pZ a field?") and not is_yes_no_question("What is a PID?")


@pytest.mark.parametrize(
    "question",
    ["Is every PID a UFD?", "does sum 1/p converge", "Can a group of order p^2 be non-abelian?", "So, are they equal?"],
)
def test_questions_that_ask_yes_or_no_are_recognised(question: str) -> None:
    assert is_yes_no_question(question)


@pytest.mark.parametrize("question", ["PID implies UFD", "When is a module flat?", "Island of stability", "Dose"])
def test_other_questions_are_not(question: str) -> None:
    assert not is_yes_no_question(question)


def test_a_negated_question_is_read_as_one() -> None:
    negated = "Can a principal ideal domain fail to be a unique factorization domain?"
    assert negates(negated) and negates("Is there a nonconstant bounded entire function?")
    assert not negates("Is every principal ideal domain a unique factorization domain?")
    assert not negates("Is R[x] noetherian when R is?")
