"""What each stage of answering hands the next, as immutable records (the stages themselves and the one place that
orders them: :mod:`rag_app.answering.answerer`).

    Retrieval   the sources found and how (the search's own provenance)       built by ``MathRAG.ask``
    Relevance   how close the best source is to the question: generate or not  the gate (``relevance_gate``)
    Generation  what was chosen, read and quoted (the verdict among it)        the choose to model stages
    Checks      the answer's text after the checks, and what they found       after the last chunk (``answer_checks``)

:class:`rag_app.answering.answer.Answer` is assembled from the four once the stream ends (``record_stage``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum

import numpy as np

from rag_app.answering.attribution import SentenceSupport
from rag_app.answering.conversation import RewriteMethod, RewrittenQuery
from rag_app.answering.source_chooser import SourceChoice
from rag_app.answering.verdict import VerdictRead
from retriever.types import Query, ScoredBy, SearchHit, SearchResult


class AnswerStatus(StrEnum):
    ANSWERED = "answered"  # generated, and at least one claim is supported by a source
    UNSUPPORTED = "unsupported"  # generated, but no sentence is supported by any source (quote: none picked)
    NOT_FOUND = "not_found"  # retrieval found nothing close enough: nothing was generated
    LLM_UNAVAILABLE = "llm_unavailable"  # the server could not be reached: sources only


@dataclass(frozen=True, slots=True)
class Retrieval:
    """The sources found for a question, and how they were found (the answer reports it)."""

    search: RewrittenQuery
    result: SearchResult
    filter: str = "everything"  # the filter's description
    retriever: str = ""  # the retriever mode
    model_calls: tuple[ModelCall, ...] = ()  # calls to the model the search made (the conversation's rewrite)
    # The same search's results after ``result``'s (retrieval.next_results): the list under an answer
    next_hits: tuple[SearchHit, ...] = ()

    @classmethod
    def of_hits(cls, hits: list[SearchHit], query: str, **fields: object) -> Retrieval:
        """A retrieval of ``hits`` found for ``query`` as asked (tests and benchmarks that hold hits)."""
        result = SearchResult(hits, Query(query))
        return cls(RewrittenQuery(query, RewriteMethod.AS_ASKED), result, **fields)  # type: ignore[arg-type]

    @property
    def hits(self) -> list[SearchHit]:
        return self.result.hits

    @property
    def learned_ranker(self) -> bool:
        """The hits' scores are the learned ranker's (comparable across questions)."""
        return self.result.scored_by == ScoredBy.LEARNED_RANKER


@dataclass(frozen=True, slots=True)
class Relevance:
    """The cosine of the question with each source; nothing is generated when the best is under ``threshold``."""

    similarities: np.ndarray  # one per hit, in rank order
    threshold: float

    @property
    def score(self) -> float | None:
        """The best similarity (None: no source found)."""
        return float(self.similarities.max()) if len(self.similarities) else None

    @property
    def passed(self) -> bool:
        return self.score is not None and self.score >= self.threshold


@dataclass(frozen=True, slots=True)
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


@dataclass(frozen=True, slots=True)
class ModelCall:
    """One call to the language model made for an answer: what it was for ("query rewrite", "choice",
    "verdict") and how long it took."""

    purpose: str
    ms: float

    def to_dict(self) -> dict[str, object]:
        return {"purpose": self.purpose, "ms": round(self.ms, 1)}


@dataclass(frozen=True, slots=True)
class ShownFirst:
    """What a quoting answer showed before the model had read its sources: the search's first result,
    quoted at once (with its yes/no lead-in), and what became of it when the model's choice came.
    ``kept``: the model's first pick is the statement shown first (None: the model's choice did not come);
    ``notice``: what the reader was told of it."""

    picked: tuple[int, ...]
    ms: float  # when it was shown, from the question
    kept: bool | None = None
    notice: str = ""

    def to_dict(self) -> dict[str, object]:
        return {"picked": list(self.picked), "ms": round(self.ms, 1), "kept": self.kept, "notice": self.notice}


@dataclass(frozen=True, slots=True)
class Generation:
    """What the model was given and what came back. A quoting answer adds its picks: ``chosen_by``
    ("model", or "ranker" when the learned ranker's first result led clearly), the probabilities of
    its first pick (``choice``), and the quote's sentences. ``chosen_by`` is "chooser" where the learned chooser
    decided the first quote (``choice_of``: its probabilities)."""

    prompt: str  # NAME@vN of the prompt template
    style: str  # "quote" or "synthesis"
    model: str | None = None
    server: str | None = None
    sources: tuple[SearchHit, ...] = ()  # given to the model, numbered from 1
    context: ContextReport = field(default_factory=ContextReport)
    llm_error: str | None = None  # the server could not answer: the answer lists the sources
    reply: str = ""  # a quoting answer: the model's choice as it wrote it
    choice: Mapping[str, float] = field(default_factory=dict)
    chosen_by: str = ""
    picked: tuple[int, ...] = ()  # a quoting answer: the source numbers picked, best first (none: none answers)
    quoted: tuple[SentenceSupport, ...] = ()  # a quoting answer's sentences (each quotes a source whole)
    model_calls: tuple[ModelCall, ...] = ()  # every call made to the model for this answer, in order
    shown_first: ShownFirst | None = None  # a quote shown before the model's choice came (answers.quote.show_first)
    choice_of: SourceChoice | None = None  # the learned chooser's reading of the sources (answers.quote.chooser)
    verdict: VerdictRead | None = None  # what the first quote settles, and how sure (answers.verdict)
    verdict_ms: float = 0.0


@dataclass(frozen=True, slots=True)
class Checks:
    """The answer's text after the checks, and what they found. For a written answer: citations to
    sources not given dropped, each sentence attributed, unstated claims removed; for a quoting one the
    quote is its own check (it states what its sources state, word for word)."""

    text: str
    status: AnswerStatus
    raw_text: str = ""  # the model's text before the checks
    cited: list[int] = field(default_factory=list)
    invalid_citations: list[int] = field(default_factory=list)
    attributed: list[int] = field(default_factory=list)  # citations added after generation
    sentences: list[SentenceSupport] = field(default_factory=list)
    # What the checks took out of a written answer: sentences the cited sources do not state, repeats,
    # and a last sentence cut off.
    removed_sentences: list[str] = field(default_factory=list)
    repeated_sentences: int = 0
    truncated: bool = False
