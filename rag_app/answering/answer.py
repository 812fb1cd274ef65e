"""What ``ask`` returns: the answer, the sources it was given, and how it was checked."""

from __future__ import annotations

import time
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

import retriever.deadline as deadline
from rag_app.answering.answer_record import AnswerRecord, ContextRecord, RelevanceRecord
from rag_app.answering.attribution import SentenceSupport
from rag_app.answering.stages import (
    AnswerStatus,
    Checks,
    ContextReport,
    Generation,
    ModelCall,
    Relevance,
    Retrieval,
)
from retriever.deadline import DeadlinePassedError
from retriever.types import SearchHit

# AnswerStatus and ContextReport live in stages; exported here as well, so imports from this module work.
__all__ = ["Answer", "AnswerStatus", "AnswerStream", "AnswerUpdate", "ContextReport"]

T = TypeVar("T")


class _Reported(Generic[T]):
    """A field of :class:`Answer` that one of its stages holds, read by a function the type checker sees
    (``lambda answer: answer.checks.text``: a renamed stage field fails the check, not a user's call)."""

    def __init__(self, read: Callable[[Answer], T]) -> None:
        self.read = read

    def __get__(self, answer: Answer | None, owner: type | None = None) -> T:
        if answer is None:  # read on the class (documentation tools): the descriptor itself
            return self  # type: ignore[return-value]
        return self.read(answer)


@dataclass(frozen=True, slots=True)
class Answer:
    """An answer, assembled from its stages' records (:mod:`rag_app.answering.stages`) when its stream
    ends; the properties below name what ``ask --json`` reports (see :meth:`to_dict`)."""

    question: str
    retrieval: Retrieval
    relevance_check: Relevance
    generation: Generation
    checks: Checks
    support_threshold: float | None = None
    timings_ms: Mapping[str, float] = field(default_factory=dict)

    # ---------------------------------------------------------------- what each stage gave, as reported
    text = _Reported[str](lambda answer: answer.checks.text)
    status = _Reported[AnswerStatus](lambda answer: answer.checks.status)
    raw_text = _Reported[str](lambda answer: answer.checks.raw_text)  # the model's text before the checks
    cited = _Reported[list[int]](lambda answer: answer.checks.cited)
    invalid_citations = _Reported[list[int]](lambda answer: answer.checks.invalid_citations)
    attributed = _Reported[list[int]](lambda answer: answer.checks.attributed)  # citations added after generation
    sentences = _Reported[list[SentenceSupport]](lambda answer: answer.checks.sentences)
    removed_sentences = _Reported[list[str]](lambda answer: answer.checks.removed_sentences)
    repeated_sentences = _Reported[int](lambda answer: answer.checks.repeated_sentences)
    truncated = _Reported[bool](lambda answer: answer.checks.truncated)
    llm_error = _Reported[str | None](lambda answer: answer.generation.llm_error)
    model = _Reported[str | None](lambda answer: answer.generation.model)
    server = _Reported[str | None](lambda answer: answer.generation.server)
    prompt = _Reported[str](lambda answer: answer.generation.prompt)  # NAME@vN of the prompt template
    # "quote": the answer quotes the picked sources; "synthesis"
    style = _Reported[str](lambda answer: answer.generation.style)
    context = _Reported[ContextReport](lambda answer: answer.generation.context)
    # a quote's first pick: source -> probability
    choice = _Reported[Mapping[str, float]](lambda answer: answer.generation.choice)
    # "chooser" (the learned chooser), "model", "ranker"; "" for a written answer
    chosen_by = _Reported[str](lambda answer: answer.generation.chosen_by)
    # the question's cosine with its closest source
    relevance = _Reported[float | None](lambda answer: answer.relevance_check.score)
    relevance_threshold = _Reported[float](lambda answer: answer.relevance_check.threshold)
    # the question, or its rewrite from the conversation
    search_query = _Reported[str](lambda answer: answer.retrieval.search.query)
    rewrite = _Reported[str](lambda answer: answer.retrieval.search.method.value)  # how search_query was made
    filter = _Reported[str](lambda answer: answer.retrieval.filter)
    retriever = _Reported[str](lambda answer: answer.retrieval.retriever)
    reranker = _Reported[str](lambda answer: answer.retrieval.result.reranker)  # "" when the cross-encoder did not run
    rerank_ms = _Reported[float](lambda answer: answer.retrieval.result.rerank_ms)
    second_embedding = _Reported[str](lambda answer: answer.retrieval.result.second_embedding)  # "" when not fused in

    @property
    def sources(self) -> list[SearchHit]:
        """The sources the answer numbers: those given to the model, else (nothing generated) those found."""
        generated = self.generation.llm_error is None and self.status is not AnswerStatus.NOT_FOUND
        return list(self.generation.sources) if generated else list(self.retrieval.hits)

    @property
    def next_results(self) -> list[SearchHit]:
        """The search's results after the answer's sources, best first: those it found but did not give the model,
        then the next ones the same search kept (``retrieval.next_results``). No second search is made."""
        shown = {hit.record.id for hit in self.sources}
        return [hit for hit in (*self.retrieval.hits, *self.retrieval.next_hits) if hit.record.id not in shown]

    @property
    def model_calls(self) -> list[ModelCall]:
        """Every call made to the language model for this answer, in order: the conversation's rewrite of
        the question, the model's choice among the sources, the yes/no verdict, a written answer."""
        calls = [*self.retrieval.model_calls, *self.generation.model_calls]
        if self.style == "synthesis" and self.model and self.llm_error is None and "full_answer" in self.timings_ms:
            calls.append(ModelCall("answer", self.timings_ms["full_answer"]))
        return calls

    @property
    def model_calls_text(self) -> str:
        """The model calls in a line a reader can take in: "no model call", or the model's name and what each
        call was for and took ("Qwen2.5-1.5B: choice 6.3 s, verdict 4.1 s")."""
        calls = self.model_calls
        if not calls:
            return "no model call"
        listed = ", ".join(f"{call.purpose} {call.ms / 1000:.1f} s" for call in calls)
        return f"{self.model or 'model'}: {listed}"

    @property
    def asks_yes_no(self) -> bool:
        read = self.generation.verdict
        return read is not None and read.inputs is not None and bool(read.inputs.asks_yes_no)

    @property
    def yes_no_verdict(self) -> str | None:
        """A yes/no question's verdict (``yes``, ``no``, ``unsure``, ``not_found``, ...); None for another question
        or where no verdict was read."""
        return self.verdict if self.asks_yes_no else None

    @property
    def lead_in(self) -> str | None:
        """The line shown above the quote: "Yes, as [n] states:", "No: [n] states the opposite:", "[n] is the closest
        statement found; it may not answer the question:", "Nothing in the index answers this; ..."; None: none."""
        return self.generation.verdict.lead_in if self.generation.verdict is not None else None

    @property
    def verdict(self) -> str | None:
        """What the answer says its first quote settles: ``yes``, ``no``, ``only_under``, ``answers``, ``unsure``
        or ``not_found`` (also where nothing similar enough was found); None where no verdict was read (a written
        answer, the model's choice, or ``answers.verdict.reader`` off)."""
        if self.status is AnswerStatus.NOT_FOUND:
            return "not_found"
        read = self.generation.verdict
        return read.verdict.value if read is not None else None

    @property
    def confidence(self) -> float | None:
        """The calibrated probability that the first quoted statement settles the question; None where nothing is
        quoted as the answer's first or no verdict was read."""
        read = self.generation.verdict
        if self.status is AnswerStatus.NOT_FOUND or read is None or read.confidence is None:
            return None
        return round(read.confidence, 4)

    # ---------------------------------------------------------------- what follows from them
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

    def to_dict(self, llm: Mapping[str, object] | None = None) -> AnswerRecord:
        """The answer's one JSON record (``ask --json``, HTTP, the stream, MCP; a contract: fields are only ever
        added); ``llm``: the LLM's health, which the serving backend reads. Its shape: :class:`AnswerRecord`."""
        context = self.context
        return AnswerRecord(
            question=self.question,
            answer=self.text,
            cited=self.cited,
            invalid_citations=self.invalid_citations,
            llm_error=self.llm_error,
            model=self.model,
            sources=[hit.to_dict() for hit in self.sources],
            status=self.status.value,
            not_found=self.not_found,
            supported=self.supported,
            citations_valid=self.citations_valid,
            attributed=self.attributed,
            unsupported_sentences=self.unsupported_sentences,
            sentences=[s.to_dict() for s in self.sentences],
            raw_answer=self.raw_text,
            prompt=self.prompt,
            server=self.server,
            relevance=RelevanceRecord(score=self.relevance, threshold=self.relevance_threshold),
            support_threshold=self.support_threshold,
            context=ContextRecord(
                tokens=context.tokens,
                tokens_counted=context.counted,
                window=context.window,
                sources_given=context.sources_given,
                trimmed=context.trimmed,
                dropped=context.dropped,
                instruction_tokens=context.instruction_tokens,
                question_tokens=context.question_tokens,
                source_tokens=context.source_tokens,
                proofs=context.proofs,
            ),
            timings_ms=dict(self.timings_ms),
            search_query=self.search_query or self.question,
            rewrite=self.rewrite,
            filter=self.filter,
            retriever=self.retriever,
            reranker=self.reranker,
            second_embedding=self.second_embedding,
            style=self.style,
            choice=dict(self.choice),
            choice_confidence=self.choice_confidence,
            chosen_by=self.chosen_by,
            yes_no_verdict=self.yes_no_verdict,
            lead_in=self.lead_in,
            removed_sentences=self.removed_sentences,
            repeated_sentences=self.repeated_sentences,
            truncated=self.truncated,
            yes_no=self.generation.verdict.to_dict() if self.asks_yes_no and self.generation.verdict else None,
            model_calls=[call.to_dict() for call in self.model_calls],
            shown_first=self.generation.shown_first.to_dict() if self.generation.shown_first else None,
            next_results=[hit.to_dict() for hit in self.next_results],
            llm=dict(llm) if llm is not None else None,
            source_choice=self.generation.choice_of.to_dict() if self.generation.choice_of else None,
            verdict=self.verdict,
            confidence=self.confidence,
            verdict_reading=self.generation.verdict.to_dict() if self.generation.verdict else None,
        )


@dataclass(frozen=True, slots=True)
class AnswerUpdate:
    """The model's part of an answer whose first part was shown without it (a quote of the search's first
    result): the answer's whole text as it now stands, to replace what was shown, and for a reader that cannot
    take text back (a terminal, a client that appends) what to append, which says what changed."""

    text: str
    appended: str
    changed: bool  # the statement shown first is no longer the answer's first quote (or the model is not there)
    notice: str  # the sentence that says what became of what was shown first
    # The answer's text for a reader who was shown nothing first (``ask --json``, ``POST /v1/ask``, MCP): no
    # sentence about a first quote it never saw. None: ``text`` as it is.
    plain: str | None = None

    def to_dict(self) -> dict[str, object]:
        """The fields of a ``text`` event of ``/v1/ask/stream`` that carries an update (``text``: what to append)."""
        return {"text": self.appended, "replace": self.text, "changed": self.changed, "notice": self.notice}


class AnswerClosedError(RuntimeError):
    """:meth:`AnswerStream.result` of a stream closed before its answer ended: there is no answer to give."""


class AnswerStream:
    """An answer being generated: iterate for text chunks, then call :meth:`result`.

    ``sources`` (and ``next_results``, the same search's results after them) are known before the first chunk,
    so a UI can show them while the model writes.
    ``first_chunk_s`` is when the first chunk arrived, in seconds after ``started`` (a perf_counter).
    ``chunks`` returns the :class:`Generation` record when it ends; ``finish`` turns the text streamed
    and that record into the :class:`Answer`.

    Iterating gives text to append, always. :meth:`events` gives the same chunks, and an
    :class:`AnswerUpdate` where the model's part comes after a first part shown without it: a reader that
    can redraw (the chat, an HTTP client) replaces what it showed with the update's text.
    """

    def __init__(
        self,
        sources: list[SearchHit],
        chunks: Generator[str | AnswerUpdate, None, Generation],
        finish: Callable[[str, Generation, AnswerStream], Answer],
        started: float | None = None,
        next_results: Sequence[SearchHit] = (),
    ) -> None:
        self.sources = sources
        self.next_results = list(next_results)  # the same search's results after ``sources``
        self.started = time.perf_counter() if started is None else started
        self.first_chunk_s: float | None = None
        self.generated_s: float | None = None
        self._chunks = chunks
        self._finish = finish
        self._text = ""  # the answer as it stands: chunks appended, an update's text in place of all before
        self._shown = False  # a chunk went to a reader (iterated), not only read inside :meth:`result`
        self._generation: Generation | None = None
        self._answer: Answer | None = None
        self._closed = False  # closed before its end (a reader left, a deadline passed)

    def __iter__(self) -> Iterator[str]:
        for event in self.events():
            yield event if isinstance(event, str) else event.appended

    def events(self) -> Iterator[str | AnswerUpdate]:
        """Text chunks to append, and updates that replace what was shown (see the class)."""
        for event in self._events():
            self._shown = True
            yield event

    def _events(self) -> Iterator[str | AnswerUpdate]:
        while self._generation is None:
            try:
                deadline.check("the next chunk of the answer")
            except DeadlinePassedError:
                self.close()  # the LLM's stream is closed: it stops writing for a caller who left
                raise
            try:
                chunk = next(self._chunks)
            except StopIteration as end:
                self._generation = end.value
                break
            if self.first_chunk_s is None:
                self.first_chunk_s = time.perf_counter() - self.started
            if isinstance(chunk, str):
                self._text += chunk
            else:  # what replaces the text depends on whether anyone saw the text before
                self._text = chunk.text if self._shown or chunk.plain is None else chunk.plain
            yield chunk
        if self.generated_s is None:
            self.generated_s = time.perf_counter() - self.started

    def close(self) -> None:
        """Close the LLM's stream (a reader that stops early: the model stops writing, its slot is free)."""
        if self._generation is None:
            self._closed = True
            self._chunks.close()

    def result(self) -> Answer:
        """The answer, its checks run; generation is finished here if the caller stopped reading early (or never
        read). :class:`AnswerClosedError` where the stream was closed before its end: never an ``AssertionError``,
        nor (with ``python -O``) a record built from nothing."""
        if self._answer is None:
            if not self._closed:
                for _ in self._events():
                    pass
            if self._generation is None:
                raise AnswerClosedError("the answer's stream was closed before the answer ended: no answer to give")
            self._answer = self._finish(self._text, self._generation, self)
        return self._answer
