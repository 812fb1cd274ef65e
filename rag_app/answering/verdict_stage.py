"""The verdict stage of an answer: the question and the chosen sources in, what the first quote settles out
(:class:`VerdictRead`).

One per :class:`rag_app.MathRAG` (the cross-encoder is loaded once, by the first answer that needs it, and serves
every answer after); each answer calls :meth:`VerdictStage.read` once, over the sources the chooser ordered.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

from rag_app.answering.question import Question
from rag_app.answering.source_chooser import SourceChoice
from rag_app.answering.verdict import VerdictPolicy, VerdictRead, decide
from rag_app.answering.verdict_cross_encoder import PACKAGED_DIR, VerdictCrossEncoder
from rag_app.settings.answering import VerdictSettings
from retriever.types import SearchHit

OFF = ("off", "none", "")


class VerdictStage:
    """The reader and the policy ``answers.verdict`` names; both are checked when the stage is made."""

    def __init__(self, settings: VerdictSettings, device: str = "cpu") -> None:
        directory = PACKAGED_DIR if settings.reader == "packaged" else Path(settings.reader).expanduser()
        self.reader = VerdictCrossEncoder(directory, settings.device or device, settings.batch_size)
        self.policy = VerdictPolicy.load(settings.policy)

    @classmethod
    def of(cls, settings: VerdictSettings, device: str = "cpu") -> VerdictStage | None:
        """The stage, or None where ``answers.verdict.reader`` is off."""
        return None if settings.reader.strip().lower() in OFF else cls(settings, device)

    @property
    def identity(self) -> str:
        return self.reader.identity

    def read(
        self, question: Question, sources: Sequence[SearchHit], choice: SourceChoice, relevance: float | None
    ) -> tuple[VerdictRead, float]:
        """The verdict on ``sources`` (numbered from 1, the chooser's ``choice`` of them) and the milliseconds the
        reading took."""
        started = time.perf_counter()
        yes_no = question.yes_no
        readings = self.reader.readings(question.for_model, [hit.record for hit in sources])
        kinds = [hit.record.kind for hit in sources]
        rules = rules_of(choice)
        read = decide(self.policy, readings, choice.order, choice.probabilities, relevance, yes_no, kinds, rules)
        return read, (time.perf_counter() - started) * 1000


def rules_of(choice: SourceChoice) -> list[str | None]:
    """The claim rules' reading of each source, as the chooser read it (None: not a yes/no question)."""
    verdicts = choice.features.verdicts if choice.features is not None else ()
    return [verdict.value if verdict is not None else None for verdict in verdicts]
