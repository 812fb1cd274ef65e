"""The checks stage of an answer: its text as the reader gets it, and its status.

In: the text streamed, the :class:`Generation`, the :class:`Relevance`, the sources' vectors and the question. Out:
:class:`Checks`. A quote is its own check (it states what its sources state, word for word); a written answer's
citations are validated and each sentence attributed (:class:`WrittenAnswerChecks`).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from rag_app.answering.stages import AnswerStatus, Checks, Generation, Relevance
from rag_app.answering.written_checks import WrittenAnswerChecks
from rag_app.settings.answering import AnswerSettings
from retriever import Embedder


def checked_answer(
    text: str,
    generation: Generation,
    relevance: Relevance,
    vectors: Mapping[str, np.ndarray],
    question: str,
    settings: AnswerSettings,
    embedder: Embedder,
) -> Checks:
    """The answer's text after the checks that fit how it was made."""
    if not relevance.passed:
        return Checks(text, AnswerStatus.NOT_FOUND)
    if generation.llm_error is not None:
        # (asked only once a relevant statement was found: there are statements to list)
        return Checks(llm_unavailable_notice(generation.llm_error), AnswerStatus.LLM_UNAVAILABLE, text)
    if generation.style == "quote":
        sentences = list(generation.quoted)
        status = AnswerStatus.ANSWERED if generation.picked else AnswerStatus.UNSUPPORTED
        return Checks(text, status, generation.reply, [s.cited[0] for s in sentences], sentences=sentences)
    sources = list(generation.sources)
    source_vectors = np.stack([vectors[h.record.id] for h in sources]) if sources else np.zeros((0, 1), np.float32)
    return WrittenAnswerChecks(settings, embedder).check(text, sources, source_vectors, question)


def llm_unavailable_notice(error: str) -> str:
    return (
        f"The language model is not available ({error}). The statements retrieved for your question are listed below."
    )


def not_found_notice(relevance: float | None, threshold: float, any_hits: bool) -> str:
    if not any_hits:
        return "The index holds no statement that matches this question, so no answer was generated."
    return (
        "The indexed corpus does not seem to contain an answer to this question: its closest statement has "
        f"similarity {relevance:.2f}, under the threshold {threshold:.2f}. No answer was generated; the closest "
        "statements are listed below."
    )
