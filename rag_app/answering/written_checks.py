"""The checks of a written answer (``answers.style = "synthesis"``): citations to sources not given
dropped, each sentence attributed to the sources that support it, and (``answers.check_statements``)
repeats, a cut-off end and each claim its cited source does not state removed."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from rag_app.answering.attribution import Attributor, SentenceSupport, attach_citations
from rag_app.answering.citations import check_citations, citation_numbers
from rag_app.answering.stages import AnswerStatus, Checks
from rag_app.answering.statement_check import StatementChecker, source_context
from rag_app.answering.text_repair import repair
from rag_app.settings import AnswerSettings
from retriever import Embedder, SearchHit

CUT_OFF = "The model's answer stopped before its first sentence was complete, so none is shown: read the sources below."


class WrittenAnswerChecks:
    """Checks a written answer against the sources it was given (``answers`` settings)."""

    def __init__(self, settings: AnswerSettings, embedder: Embedder) -> None:
        self.settings = settings
        self.embedder = embedder
        self.checker = StatementChecker()

    def check(self, raw_text: str, sources: list[SearchHit], source_vectors: np.ndarray, question: str) -> Checks:
        """``raw_text`` checked; ``source_vectors``: the sources' stored vectors, in order."""
        checks = self.settings
        text, repeated, truncated = raw_text.strip(), 0, False
        if checks.check_statements:
            text, repeated, truncated = repair(text)
            if not text.strip():  # say why, rather than show an empty answer
                return Checks(CUT_OFF, AnswerStatus.UNSUPPORTED, raw_text, repeated_sentences=repeated,
                              truncated=truncated)  # fmt: skip
        checked = check_citations(text, len(sources))
        found = Checks(
            checked.text, AnswerStatus.UNSUPPORTED, raw_text, checked.cited, checked.invalid,
            repeated_sentences=repeated, truncated=truncated,
        )  # fmt: skip
        if not checks.attribute or not sources:
            return replace(found, status=AnswerStatus.ANSWERED if checked.cited else AnswerStatus.UNSUPPORTED)
        attributor = Attributor(self.embedder.embed_documents, checks.min_support)
        attribution = attributor.attribute(checked.text, [h.record.text for h in sources], source_vectors)
        text, sentences, removed = attribution.text, attribution.sentences, []
        if checks.check_statements:
            texts = [s.text for s in sentences]
            sentences = [
                self._checked(s, sources, question, texts[i - 1] if i else "") for i, s in enumerate(sentences)
            ]
            kept = [s for s in sentences if not s.claim or s.stated]
            if not any(s.claim for s in kept):
                kept = []  # no claim left: fragments and bare citations would read as an answer
            removed = [s.text for s in sentences if s.claim and not s.stated]
            if removed or repeated or truncated:
                text = " ".join(attach_citations(s.text, s.attributed) for s in kept)
            if removed:
                count = len(removed)
                text = (text + "\n\n" if text else "") + (
                    f"({count} sentence{'s' if count > 1 else ''} that the cited sources do not state "
                    f"{'were' if count > 1 else 'was'} removed: read the sources below.)"
                )
        supported = any(s.claim and s.supported for s in sentences)
        return replace(
            found,
            text=text,
            status=AnswerStatus.ANSWERED if supported else AnswerStatus.UNSUPPORTED,
            cited=list(dict.fromkeys(citation_numbers(text))),
            attributed=sorted({n for s in sentences if s.stated is not False for n in s.attributed}),
            sentences=sentences,
            removed_sentences=removed,
        )

    def _checked(
        self, sentence: SentenceSupport, sources: list[SearchHit], question: str, previous: str
    ) -> SentenceSupport:
        """``sentence`` checked against the sources it cites (or was attributed to); ``previous``: the
        sentence before it, which "This is stated in [2]." stands for."""
        if not sentence.claim:
            return sentence
        numbers = sentence.cited or sentence.attributed
        if not numbers:
            return replace(sentence, supported=False, stated=False, problems=["cites no source"])
        cited_text = "\n".join(source_context(sources[n - 1].record) for n in numbers)
        check = self.checker.check(sentence.text, cited_text, question, previous)
        return replace(
            sentence, supported=sentence.supported and check.stated, stated=check.stated, problems=list(check.problems)
        )
