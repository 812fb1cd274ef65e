"""The claim readings of one answer, each made once: the question read once (:class:`AskedQuestion`), and each
statement's claim comparison with it (:func:`rag_app.answering.source_features.read_claim`), which the chooser's
features read."""

from __future__ import annotations

from ingestion.records import StatementRecord
from rag_app.answering.claims.asked_question import AskedQuestion
from rag_app.answering.claims.claim_comparison import ClaimComparison
from rag_app.answering.source_features import read_claim


class ClaimReadings:
    """A cache of readings for one answer (an answerer serves one question, so it stays small)."""

    def __init__(self) -> None:
        self._asked: dict[str, AskedQuestion] = {}
        self._readings: dict[tuple[str, str], ClaimComparison] = {}

    def asked(self, question: str | AskedQuestion) -> AskedQuestion:
        """``question`` read once: whether it asks yes or no, its LaTeX, its claim's terms, its topic."""
        if isinstance(question, AskedQuestion):
            return question
        if question not in self._asked:
            self._asked[question] = AskedQuestion.read(question)
        return self._asked[question]

    def reading(self, question: str | AskedQuestion, record: StatementRecord) -> ClaimComparison:
        """The claim reading of ``record`` on ``question``, read once per answer."""
        asked = self.asked(question)
        key = (asked.text, record.id)
        if key not in self._readings:
            self._readings[key] = read_claim(asked, record)
        return self._readings[key]
