"""Each statement's claim comparison with the question (:func:`rag_app.answering.source_features.read_claim`), made
once per answer: the chooser's features read it, and the verdict reads the chooser's."""

from __future__ import annotations

from ingestion.records import StatementRecord
from rag_app.answering.claims.asked_question import AskedQuestion
from rag_app.answering.claims.claim_comparison import ClaimComparison
from rag_app.answering.source_features import read_claim


class ClaimReadings:
    """A cache of readings for one answer (a choose stage serves one question, so it stays small)."""

    def __init__(self) -> None:
        self._readings: dict[tuple[str, str], ClaimComparison] = {}

    def reading(self, question: str | AskedQuestion, record: StatementRecord) -> ClaimComparison:
        """The claim reading of ``record`` on ``question``, read once per answer."""
        asked = AskedQuestion.read(question)
        key = (asked.text, record.id)
        if key not in self._readings:
            self._readings[key] = read_claim(asked, record)
        return self._readings[key]
