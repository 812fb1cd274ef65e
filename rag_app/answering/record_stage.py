"""The last stage of an answer: the text streamed and the :class:`Generation` checked and assembled into the
:class:`Answer` every front end reports (the CLI, HTTP, MCP and the chat read this same record).

:class:`AnswerStream` calls a :class:`RecordStage` when its stream ends.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from rag_app.answering.answer import Answer, AnswerStream
from rag_app.answering.answer_checks import checked_answer
from rag_app.answering.stages import Generation, Relevance, Retrieval
from rag_app.settings.answering import AnswerSettings
from retriever import Embedder


@dataclass(frozen=True, slots=True)
class RecordStage:
    """What the record is made of besides the stream: the question as asked, its retrieval and relevance, the
    sources' vectors (a written answer's checks read them), and when the retrieval ended (ms from the question)."""

    question: str
    retrieval: Retrieval
    relevance: Relevance
    vectors: Mapping[str, np.ndarray]
    retrieval_ms: float
    settings: AnswerSettings
    embedder: Embedder

    def __call__(self, text: str, generation: Generation, stream: AnswerStream) -> Answer:
        validation_started = time.perf_counter()
        checks = checked_answer(
            text, generation, self.relevance, self.vectors, self.question, self.settings, self.embedder
        )
        timings = self.timings(generation, stream, validation_started)
        settings = self.settings
        return Answer(self.question, self.retrieval, self.relevance, generation, checks, settings.min_support, timings)

    def timings(self, generation: Generation, stream: AnswerStream, validation_started: float) -> dict[str, float]:
        """Milliseconds from the question: retrieval (the cross-encoder's share of it: rerank), the verdict, the
        calls made to the model before the answer's text (``model_calls``: the rewrite, the choice; ``model_calls``
        in the answer lists each), first text, whole answer, validation, total."""
        now = time.perf_counter()
        retrieval = self.retrieval
        timings = {"retrieval": self.retrieval_ms}
        if generation.verdict_ms:
            timings["verdict"] = generation.verdict_ms
        calls = [*retrieval.model_calls, *generation.model_calls]
        if calls:
            timings["model_calls"] = sum(call.ms for call in calls)
        if retrieval.result.reranker:
            timings["rerank"] = retrieval.result.rerank_ms
        if stream.first_chunk_s is not None:
            timings["first_token"] = stream.first_chunk_s * 1000
        if stream.generated_s is not None:
            timings["full_answer"] = stream.generated_s * 1000
        timings["validation"] = (now - validation_started) * 1000
        timings["total"] = (now - stream.started) * 1000
        return {name: round(value, 1) for name, value in timings.items()}
