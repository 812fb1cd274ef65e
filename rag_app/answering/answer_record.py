"""The answer as JSON: the shape of one record, defined here, for every front end.

``ask --json``, ``POST /v1/ask``, the ``answer`` event of ``/v1/ask/stream`` and the MCP ``ask`` tool all
return it, made in one place (:meth:`rag_app.answering.answer.Answer.to_dict`; the serving backend adds the
LLM's health as ``llm``): one place makes the record, so every front end gets the same shape.
MCP shortens what a model reads (its hits are :func:`~rag_app.api.mcp_tools.compact_hit`'s) but renames
nothing. The keys are a contract: they are only ever added.
"""

from __future__ import annotations

from typing import Any

from typing_extensions import TypedDict  # pydantic reads it into the OpenAPI document on Python 3.11


class RelevanceRecord(TypedDict):
    score: float | None  # the question's cosine with its closest source
    threshold: float


class ContextRecord(TypedDict):
    """How the sources were packed into the model's window."""

    tokens: int
    tokens_counted: bool
    window: int
    sources_given: int
    trimmed: list[int]
    dropped: int
    instruction_tokens: int
    question_tokens: int
    source_tokens: list[int]
    proofs: bool


class AnswerRecord(TypedDict):
    """The answer's JSON (the OpenAPI document of ``POST /v1/ask`` is generated from it)."""

    question: str
    answer: str  # the answer's text (no sentence about a first quote the reader never saw)
    cited: list[int]  # the source numbers [n] the answer cites
    invalid_citations: list[int]
    llm_error: str | None  # why the model could not answer (the sources are still given)
    model: str | None
    sources: list[dict[str, Any]]  # the numbered sources: `search --json`'s hits
    status: str  # answered, unsupported, not_found, llm_unavailable
    not_found: bool
    supported: bool
    citations_valid: bool
    attributed: list[int]
    unsupported_sentences: list[str]
    sentences: list[dict[str, Any]]
    raw_answer: str
    prompt: str
    server: str | None
    relevance: RelevanceRecord
    support_threshold: float | None
    context: ContextRecord
    timings_ms: dict[str, float]
    search_query: str
    rewrite: str
    filter: str
    retriever: str
    reranker: str
    second_embedding: str
    style: str  # "quote" or "synthesis"
    choice: dict[str, float]
    choice_confidence: float | None
    chosen_by: str
    yes_no_verdict: str | None
    lead_in: str | None  # "Yes, as [n] states:", "No: [n] gives a counterexample:", ... or None
    removed_sentences: list[str]
    repeated_sentences: int
    truncated: bool
    yes_no: dict[str, Any] | None
    model_calls: list[dict[str, Any]]
    shown_first: dict[str, Any] | None
    next_results: list[dict[str, Any]]  # the same search's results after the sources, best first
    llm: dict[str, Any] | None  # the LLM's health when the answer was written (state, description, failure)
    # the learned chooser's reading: each source's probability of answering, the order, and whether
    # the first is presented as the answer (else the notice); None where the model chose
    source_choice: dict[str, Any] | None
    # what the first quote settles: yes, no, only_under, answers, unsure or not_found (None: no verdict
    # was read), and the calibrated probability that the first quoted statement settles the question (None: nothing
    # quoted); the reading behind them (each source's five probabilities, the calibration's inputs)
    verdict: str | None
    confidence: float | None
    verdict_reading: dict[str, Any] | None
