"""Issue 93: one lexicon for every reader of claims. The words that open a "Let ..." setup were listed three
times, differently, and the written-answer check kept its own negations, object nouns and symbol words."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

from rag_app.answering import statement_check
from rag_app.answering.claims import claim_terms, lexicon

# the module, not the function of the same name the package exports
claims_reader = importlib.import_module("rag_app.answering.claims.statement_claims")
ANSWERING = Path(statement_check.__file__).resolve().parent
# a word list or pattern that opens with a setup word, a negation set, the equivalence phrases, number words
OWN_LISTS = re.compile(
    r"\(\?:let\||\(let\||\"let\", \"|'cannot'|\"cannot\"|if and only if\|iff|\"zero\": |\"isomorph\w*\": "
)


def test_no_reader_keeps_its_own_list_of_the_lexicons_words() -> None:
    own = {
        str(file.relative_to(ANSWERING)): OWN_LISTS.findall(file.read_text())
        for file in ANSWERING.rglob("*.py")
        if file.name != "lexicon.py"
    }
    assert {name: found for name, found in own.items() if found} == {}


def test_the_claims_and_the_written_check_read_the_same_setup_and_negations() -> None:
    sentence = "Consider a Noetherian ring $R$."  # "consider" opened a setup for the claims, not for the check
    assert lexicon.SETUP_SENTENCE.match(sentence)
    hypotheses, _ = statement_check.split_hypotheses(sentence + " Then $R$ is coherent.")
    assert "Noetherian" in hypotheses
    # "a ring without zero divisors": the claims deny what follows "without", as the check always did
    terms = claim_terms.terms_of("a ring without zero divisors", [])
    assert any(word.negative for word in terms.words)
    assert claim_terms.GENERIC_NOUNS is lexicon.GENERIC_NOUNS <= lexicon.OBJECT_NOUNS
    assert claims_reader.SETUP_SENTENCE is lexicon.SETUP_SENTENCE
    # one word-to-sign map: "isomorphic" is \cong in the LaTeX the check reads, ≅ in the claims' Unicode
    from rag_app.answering.claims import term_matching

    assert term_matching._WORD_SIGNS["isomorph"] == lexicon.SYMBOL_WORDS["isomorphic"].unicode
    assert statement_check._symbol_stems()["isomorph"] == lexicon.SYMBOL_WORDS["isomorphic"].latex
