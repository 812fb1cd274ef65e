"""One vocabulary for every reader of mathematical English and formulas: one stopword list, one negation list, one
formula comparer, one table of signs, antonyms and spellings (``rag_app.answering.claims.vocabulary``)."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

from rag_app.answering import conversation, source_features, statement_check
from rag_app.answering.claims import claim_terms, vocabulary, yes_no_questions

# the module, not the function of the same name the package exports
claims_reader = importlib.import_module("rag_app.answering.claims.statement_claims")
RAG_APP = Path(statement_check.__file__).resolve().parents[1]
# a word list or pattern that opens with a setup word, a negation set, the equivalence phrases, number words
OWN_LISTS = re.compile(
    r"\(\?:let\||\(let\||\"let\", \"|'cannot'|\"cannot\"|if and only if\|iff|\"zero\": |\"isomorph\w*\": "
)
# a list of words defined outside the vocabulary: stopwords, function words, scaffolding, negations
OWN_WORD_LISTS = re.compile(
    r"^_?\w*(?:STOP_?WORDS?|FUNCTION_WORDS|SCAFFOLDING|NEGATIONS?)\w*\s*=\s*(?!.*\bSTOPWORDS\b)", re.M
)


def test_no_reader_keeps_its_own_list_of_the_vocabularys_words() -> None:
    own = {
        str(file.relative_to(RAG_APP)): OWN_LISTS.findall(file.read_text()) + OWN_WORD_LISTS.findall(file.read_text())
        for file in (RAG_APP / "answering").rglob("*.py")
        if file.name != "vocabulary.py"
    }
    assert {name: found for name, found in own.items() if found} == {}


def test_every_reader_drops_the_same_stopwords() -> None:
    words = "Is it true that every one of these holds here?"
    # the claims, the chooser's topic words, the conversation's check and the written check all drop these
    assert {"true", "every", "these", "holds", "here"} <= vocabulary.STOPWORDS
    assert not {word.stem for word in claim_terms.terms_of(words, []).words}
    assert not yes_no_questions.topic_words(words)
    assert not conversation._words(words)
    assert statement_check.content_terms(words) == {"everi"}  # the written check keeps the quantifier
    assert not source_features._phrases(words)


def test_one_negation_list_reads_denial_and_failure() -> None:
    assert "nothing" in vocabulary.NEGATIONS
    for question in ("Is there a counterexample to Fermat?", "Is it false that 2 is prime?", "Is a non-abelian group"):
        assert vocabulary.negates(question)
    assert not vocabulary.negates("Is every PID a UFD?")
    # the claims deny what follows a negation: "a ring without zero divisors"
    assert any(word.negative for word in claim_terms.terms_of("a ring without zero divisors", []).words)


def test_one_formula_comparer_for_the_claims_and_the_written_check() -> None:
    assert vocabulary.formula_key(r"\mathbb{R}^n") == vocabulary.formula_key("ℝ^n")
    assert vocabulary.formula_shape("IM = M") == vocabulary.formula_shape("J N=N") != vocabulary.formula_shape("IM = N")
    # a name is not renamed: Spec and Proj are different formulas of the same letters' count
    assert vocabulary.formula_shape(r"\mathrm{Spec}(A)") != vocabulary.formula_shape(r"\mathrm{Proj}(A)")
    assert statement_check._formula_in("x^2", [r"y = x^2 + 1"])
    assert not statement_check._formula_in("x^3", [r"y = x^2 + 1"])


def test_the_claims_and_the_written_check_read_the_same_setup_and_negations() -> None:
    sentence = "Consider a Noetherian ring $R$."  # "consider" opened a setup for the claims, not for the check
    assert vocabulary.SETUP_SENTENCE.match(sentence)
    hypotheses, _ = statement_check.split_hypotheses(sentence + " Then $R$ is coherent.")
    assert "Noetherian" in hypotheses
    assert claim_terms.GENERIC_NOUNS is vocabulary.GENERIC_NOUNS <= vocabulary.OBJECT_NOUNS
    assert claims_reader.SETUP_SENTENCE is vocabulary.SETUP_SENTENCE
    # one word-to-sign map: "isomorphic" is \cong in the LaTeX the check reads, ≅ in the claims' Unicode
    from rag_app.answering.claims import term_matching

    assert term_matching._WORD_SIGNS["isomorph"] == vocabulary.SYMBOL_WORDS["isomorphic"].unicode
    assert statement_check._symbol_stems()["isomorph"] == vocabulary.SYMBOL_WORDS["isomorphic"].latex
