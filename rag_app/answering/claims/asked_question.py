"""A question read once per answer into the one value every reader of it takes.

The claims' comparison, the refutation scan, the chooser's features and the lead-in all read the same things of
the question: whether it asks yes or no (about three times per statement read, were each to parse it), its LaTeX
with typed notation read, its claim's terms (once per statement the refutation scan reads). An
:class:`AskedQuestion` holds what they read, parsed once.
"""

from __future__ import annotations

from dataclasses import dataclass

from rag_app.answering.claims.claim_terms import Terms, question_latex, split_math, terms_of
from rag_app.answering.claims.implied_conditions import StatedConditions
from rag_app.answering.claims.vocabulary import EQUIVALENCE, negates
from rag_app.answering.claims.yes_no_questions import is_yes_no_question, topic_words


@dataclass(frozen=True, slots=True)
class AskedQuestion:
    """The question as asked, and what its readers take from it."""

    text: str
    yes_no: bool  # it asks yes or no (is_yes_no_question)
    negated: bool  # it carries a negation ("not", "non-", "fails", ...)
    latex: str  # its LaTeX: abbreviations written out, typed notation and typed relations as formulas
    claim: Terms  # the claim's terms, compared with a statement's (an "iff" read as a comma)
    stated: StatedConditions  # the conditions it states in words or formulas ("n > 2", "positive")
    topic: frozenset[str]  # the stems of the words that carry its topic

    @classmethod
    def read(cls, question: str | AskedQuestion) -> AskedQuestion:
        """``question`` read (a question already read is returned as it is)."""
        if isinstance(question, AskedQuestion):
            return question
        latex = question_latex(question)
        # an "iff" read as a comma; the LaTeX read again only where the question says one
        claim_latex = question_latex(EQUIVALENCE.sub(",", question)) if EQUIVALENCE.search(question) else latex
        claim = terms_of(*split_math(claim_latex))
        return cls(
            text=question,
            yes_no=is_yes_no_question(question),
            negated=negates(question),
            latex=latex,
            claim=claim,
            stated=StatedConditions.of(question, " ".join(claim.formulas)),
            topic=frozenset(topic_words(question)),
        )
