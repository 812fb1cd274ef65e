"""The first stage of an answer: the question read once, into the record every later stage reads.

No stage after this one parses the question's text: the claim reading (yes or no, negation, its LaTeX, its claim's
terms, its topic), whether it asks for a proof, and the text the model and the verdict's reader are given are all
here.
"""

from __future__ import annotations

from dataclasses import dataclass

from rag_app.answering.claims.asked_question import AskedQuestion
from rag_app.answering.context import asks_for_proof
from rag_app.answering.conversation import RewriteMethod, RewrittenQuery


@dataclass(frozen=True, slots=True)
class Question:
    """A question as asked, what was searched for it, and its readings.

    ``for_model``: the text the model and the readers are given (in a conversation, the question and what it means
    there); ``asked``: its claim reading, made from ``for_model``; ``asks_for_proof``: the sources' proofs are
    worth the model's tokens (``answers.proofs = "auto"``)."""

    text: str
    search: RewrittenQuery
    for_model: str
    asked: AskedQuestion
    asks_for_proof: bool

    @classmethod
    def read(cls, text: str, search: RewrittenQuery | None = None) -> Question:
        """``text`` read once; ``search``: what was searched for it (unset: the text as asked)."""
        search = search or RewrittenQuery(text, RewriteMethod.AS_ASKED)
        for_model = f"{text}\n(In this conversation: {search.query})" if search.rewritten else text
        return cls(text, search, for_model, AskedQuestion.read(for_model), asks_for_proof(for_model))

    @property
    def yes_no(self) -> bool:
        return self.asked.yes_no
