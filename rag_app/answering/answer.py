"""What ``ask`` returns: the answer, the sources it was given, and how it was checked."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from enum import StrEnum

from rag_app.answering.attribution import SentenceSupport
from retriever.types import SearchHit


class AnswerStatus(StrEnum):
    ANSWERED = "answered"  # generated, and at least one claim is supported by a source
    UNSUPPORTED = "unsupported"  # generated, but no sentence is supported by any source (quote: none picked)
    NOT_FOUND = "not_found"  # retrieval found nothing close enough: nothing was generated
    LLM_UNAVAILABLE = "llm_unavailable"  # the server could not be reached: sources only


@dataclass
class ContextReport:
    """How the sources were packed into the model's window."""

    tokens: int = 0
    counted: bool = False  # by the served model's tokenizer (else estimated)
    window: int = 0
    sources_given: int = 0
    trimmed: list[int] = field(default_factory=list)
    dropped: int = 0
    # Where the prompt's tokens go: the system message (the same for every question, so a server's
    # prompt cache keeps it), the rest of the frame (question and headings), and each source.
    instruction_tokens: int = 0
    question_tokens: int = 0
    source_tokens: list[int] = field(default_factory=list)
    proofs: bool = False


@dataclass
class Answer:
    question: str
    text: str
    sources: list[SearchHit]
    cited: list[int] = field(default_factory=list)
    invalid_citations: list[int] = field(default_factory=list)
    llm_error: str | None = None
    model: str | None = None
    status: AnswerStatus = AnswerStatus.ANSWERED
    prompt: str | None = None  # NAME@vN of the prompt template
    raw_text: str = ""  # the model's text before validation
    attributed: list[int] = field(default_factory=list)  # citations added after generation
    sentences: list[SentenceSupport] = field(default_factory=list)
    relevance: float | None = None  # cosine between the question and its most similar source
    relevance_threshold: float | None = None
    support_threshold: float | None = None
    context: ContextReport = field(default_factory=ContextReport)
    timings_ms: dict[str, float] = field(default_factory=dict)
    server: str | None = None
    search_query: str = ""  # what retrieval searched for: the question, or its rewrite from the conversation
    rewrite: str = "as asked"  # how search_query was made (rag_app.answering.conversation.RewriteMethod)
    # The quoting answer: the probability the model gave each source number (and "none") as its first
    # pick, from the server's log probabilities; empty when the server gave none.
    choice: dict[str, float] = field(default_factory=dict)
    # Who chose the quoted statement: "model" (it read the sources), "ranker" (the learned ranker's first
    # result led clearly, the model was not asked); "" for a written answer or none given.
    chosen_by: str = ""
    # A yes/no question's quoting answer: the model's verdict on the quoted statement ("yes", "no",
    # "unclear"; None when not asked) and the lead-in line shown above the quote (None when none).
    yes_no_verdict: str | None = None
    lead_in: str | None = None
    filter: str = "everything"  # the search filter, described
    retriever: str = ""  # the retriever mode that found the sources
    reranker: str = ""  # the cross-encoder that ordered the sources ("" when not reranked)
    rerank_ms: float = 0.0  # its share of the retrieval time
    second_embedding: str = ""  # the second embedding model fused into retrieval ("" when not used)
    style: str = "synthesis"  # "quote": the model picked sources, the answer quotes them; "synthesis": it wrote
    # What the checks took out of a written answer: sentences the cited sources do not state, repeats,
    # and a last sentence cut off.
    removed_sentences: list[str] = field(default_factory=list)
    repeated_sentences: int = 0
    truncated: bool = False

    @property
    def answered_by_llm(self) -> bool:
        return self.llm_error is None and self.status is not AnswerStatus.NOT_FOUND and bool(self.text)

    @property
    def not_found(self) -> bool:
        return self.status is AnswerStatus.NOT_FOUND

    @property
    def citations_valid(self) -> bool:
        """The model cited only sources it was given (before invalid ones were removed)."""
        return not self.invalid_citations

    @property
    def supported(self) -> bool:
        return self.status is AnswerStatus.ANSWERED

    @property
    def choice_confidence(self) -> float | None:
        """How sure the model was of the pick the answer shows (of NONE, when it picked nothing); None
        when the server gave no probabilities or the answer is not a quoting one."""
        if not self.choice:
            return None
        picked = str(self.cited[0]) if self.cited and self.status is AnswerStatus.ANSWERED else "none"
        return self.choice.get(picked, 0.0)

    def quoted_sources(self) -> list[int]:
        """The source numbers a quoting answer quotes whole (the chat does not show them twice)."""
        if self.style != "quote":
            return []
        return list(dict.fromkeys(s.best_source for s in self.sentences if s.stated and s.best_source is not None))

    @property
    def unsupported_sentences(self) -> list[str]:
        return [s.text for s in self.sentences if s.claim and not s.supported]

    def to_dict(self) -> dict[str, object]:
        """The JSON shape of ``ask --json`` (a contract: fields are only ever added)."""
        return {
            "question": self.question,
            "answer": self.text,
            "cited": self.cited,
            "invalid_citations": self.invalid_citations,
            "llm_error": self.llm_error,
            "model": self.model,
            "sources": [hit.to_dict() for hit in self.sources],
            "status": self.status.value,
            "not_found": self.not_found,
            "supported": self.supported,
            "citations_valid": self.citations_valid,
            "attributed": self.attributed,
            "unsupported_sentences": self.unsupported_sentences,
            "sentences": [s.to_dict() for s in self.sentences],
            "raw_answer": self.raw_text,
            "prompt": self.prompt,
            "server": self.server,
            "relevance": {"score": self.relevance, "threshold": self.relevance_threshold},
            "support_threshold": self.support_threshold,
            "context": {
                "tokens": self.context.tokens,
                "tokens_counted": self.context.counted,
                "window": self.context.window,
                "sources_given": self.context.sources_given,
                "trimmed": self.context.trimmed,
                "dropped": self.context.dropped,
                "instruction_tokens": self.context.instruction_tokens,
                "question_tokens": self.context.question_tokens,
                "source_tokens": self.context.source_tokens,
                "proofs": self.context.proofs,
            },
            "timings_ms": self.timings_ms,
            "search_query": self.search_query or self.question,
            "rewrite": self.rewrite,
            "filter": self.filter,
            "retriever": self.retriever,
            "reranker": self.reranker,
            "second_embedding": self.second_embedding,
            "style": self.style,
            "choice": self.choice,
            "choice_confidence": self.choice_confidence,
            "chosen_by": self.chosen_by,
            "yes_no_verdict": self.yes_no_verdict,
            "lead_in": self.lead_in,
            "removed_sentences": self.removed_sentences,
            "repeated_sentences": self.repeated_sentences,
            "truncated": self.truncated,
        }


class AnswerStream:
    """An answer being generated: iterate for text chunks, then call :meth:`result`.

    ``sources`` is known before the first chunk, so a UI can show them while the model writes.
    ``first_chunk_s`` is when the first chunk arrived, in seconds after ``started`` (a perf_counter).
    """

    def __init__(
        self,
        sources: list[SearchHit],
        chunks: Iterator[str],
        finish: Callable[[str, AnswerStream], Answer],
        started: float | None = None,
    ) -> None:
        self.sources = sources
        self.started = time.perf_counter() if started is None else started
        self.first_chunk_s: float | None = None
        self.generated_s: float | None = None
        self._chunks = chunks
        self._finish = finish
        self._parts: list[str] = []
        self._answer: Answer | None = None

    def __iter__(self) -> Iterator[str]:
        for chunk in self._chunks:
            if self.first_chunk_s is None:
                self.first_chunk_s = time.perf_counter() - self.started
            self._parts.append(chunk)
            yield chunk
        if self.generated_s is None:
            self.generated_s = time.perf_counter() - self.started

    def result(self) -> Answer:
        if self._answer is None:
            for _ in self:  # finish generation if the caller stopped early
                pass
            self._answer = self._finish("".join(self._parts), self)
        return self._answer
