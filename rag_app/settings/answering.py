"""Settings of the answer: which sources the model reads, how it answers, and the checks around it."""

from __future__ import annotations

import warnings
from typing import Literal

from pydantic import BaseModel, Field, field_validator, model_validator

REMOVED_QUOTE_SETTINGS = ("yes_no_lead", "yes_no_method", "counterexample_search", "yes_no_prompt",
                          "yes_no_min_overlap", "yes_no_max_statement_tokens")  # fmt: skip


class QuoteSettings(BaseModel):
    """``answers.style = "quote"``: what the model reads to pick the sources that answer. It only chooses,
    so each source is shown short (its heading and beginning) and more of them fit the same time."""

    # v2 lays the sources out one line each (a deeper reading): opt-in until it wins, measured
    # in docs/retrieval-and-evaluation.md ("A deeper reading").
    prompt: str = Field("answer_select@v1", description="prompt name (its latest version) or NAME@vN")
    max_sources: int = Field(4, ge=1, description="sources the model chooses among")
    source_margin: float | None = Field(
        None, ge=0, description="only sources within this cosine of the best one; unset: the top max_sources"
    )
    max_source_tokens: int = Field(110, ge=24, description="tokens of one source the model reads (cut at a word)")
    sources_budget_tokens: int = Field(420, ge=48, description="tokens all sources may take together")
    max_quotes: int = Field(2, ge=1, description="statements quoted at most")
    unsure_quotes: int = Field(
        3, ge=1, description="when the model picks none, the closest this many are quoted under a notice"
    )
    max_tokens: int = Field(12, ge=4, description="tokens the model may answer with (a few source numbers)")
    # Which source the answer leads with: the learned chooser (rag_app/answering/source_chooser.py)
    # weighs the ranker's scores and margins, the question's cosine, the statement's text, name, section and the
    # definitions in its scope, its kind and the claim reading, and its calibrated probability decides the notice
    # that none answers. On research questions written apart, the model's own pick was worse than the search's
    # first result and its "none" wrong half the time, so with a chooser the model never replaces the first
    # quote: it may add one (model_adds). "none": the model chooses (where the ranker is not
    # sure). Applied where the scores are the learned ranker's (the features were fitted on them).
    chooser: str = Field(
        "packaged",
        description='the statement the answer leads with: "packaged" (the learned chooser shipped), a chooser JSON '
        'that `train chooser` wrote, or "none" (the model chooses)',
    )
    model_adds: bool = Field(
        True,
        description="with a chooser: the model reads the sources after the first quote and may add a statement",
    )
    # The learned ranker's clear first result is quoted without asking the model (bench/choice_quality.py:
    # where its score leads the second by this much, the first result answered more often than the model's
    # pick, and the answer comes at search speed). Calibrated on two sets with the ranker trained without the
    # generated questions: there 1.5 showed an answering statement once more in 155 questions and presented 3
    # fewer wrong quotes as the answer than 1.0, but asked the model on 16 more of the 103 user-shaped questions
    # (first token p50 from search speed to about 13 s on 2 CPUs; docs/answers.md). The ranker trained with the
    # generated questions (2026-11-27) spreads its scores wider: at 1.5 it quotes alone as often as that ranker
    # did at 1.0 (52 % of the user-shaped set against 58 %), wrong 13 times on the two question sets against 22.
    # Unset: the model always chooses.
    ranker_sure_margin: float | None = Field(
        1.5,
        ge=0,
        description='learned-ranker score lead of the first result over the second that skips the model; "none": '
        "the model always chooses",
    )
    # Fewer statements to read where the ranker's order already decides: of the learned ranker's results, the
    # model reads only those within this score of the first (over 342 questions of the three dev
    # sets, a gap of 2.5 left out an answering statement the model would have read once). Unset: all of them.
    reading_gap: float | None = Field(
        None, ge=0, description="the model reads only results within this learned-ranker score of the first"
    )
    # Where the model chooses, the search's first result is quoted at once (with its yes/no lead-in, which
    # needs no model) and the model's choice follows as an update that says what changed (on 2 CPUs
    # the model reads its prompt for 6-9 s before it can choose; bench/ask_latency.py).
    show_first: bool = Field(
        True, description="quote the search's first result at once while the model chooses; its choice follows"
    )
    @model_validator(mode="before")
    @classmethod
    def _removed_settings(cls, values: object) -> object:
        """Settings of the yes/no rules that the verdict (``answers.verdict``) stands in for: read from a file that
        still sets them with a warning that says what decides, never an error."""
        if isinstance(values, dict):
            found = sorted(name for name in REMOVED_QUOTE_SETTINGS if name in values)
            if found:
                warnings.warn(
                    f"answers.quote.{', answers.quote.'.join(found)}: no longer read; the lead-in above the quote is "
                    "the verdict's (answers.verdict)", UserWarning, stacklevel=2,
                )  # fmt: skip
                values = {key: value for key, value in values.items() if key not in REMOVED_QUOTE_SETTINGS}
        return values

    @field_validator("ranker_sure_margin", "reading_gap", mode="before")
    @classmethod
    def _none_turns_it_off(cls, value: object) -> object:
        """TOML has no null: ``ranker_sure_margin = "none"`` (or the same in the environment) turns it off."""
        return None if isinstance(value, str) and value.strip().lower() in ("none", "off", "") else value


class VerdictSettings(BaseModel):
    """What the answer says its first quote settles (rag_app/answering/verdict.py): "Yes, as [n] states:", "No: [n]
    states the opposite:", "[n] is the closest statement found; it may not answer the question:", "Nothing in the
    index answers this", with a calibrated ``confidence``. Read by a trained cross-encoder and a calibration fitted
    on the labelled sets' tuning halves; applied where the learned chooser chose the sources' order."""

    reader: str = Field(
        "packaged",
        description='the verdict cross-encoder: "packaged", a directory that `python -m '
        'rag_app.training.train_verdict` wrote, or "off" (no verdict: the quote stands alone)',
    )
    policy: str = Field("packaged", description='the calibration and thresholds: "packaged" or a JSON file')
    device: str | None = Field(None, description="cpu, cuda, ...; unset: embedding.device")
    batch_size: int = Field(16, ge=1, description="(question, statement) pairs the reader reads at once")


class AnswerSettings(BaseModel):
    """What is checked before and after generation. Thresholds: bench/experiments/calibrate_answer_checks.py."""

    # Read sentence by sentence, more than half of what the packaged 1.5B model wrote in its own words
    # and the support score passed was wrong (bench/answer_quality.py, docs/answers.md).
    style: Literal["quote", "synthesis"] = Field(
        "quote",
        description="quote: the model picks the sources that answer and the answer quotes them verbatim (for "
        "small local models); synthesis: the model writes the answer, each sentence checked against its source",
    )
    quote: QuoteSettings = Field(default_factory=QuoteSettings)
    verdict: VerdictSettings = Field(default_factory=VerdictSettings)
    check_statements: bool = Field(
        True,
        description="synthesis: remove each sentence its cited source does not state (terms, formulas, "
        "connectives, hypotheses, reasoning links), repeated sentences and a last sentence cut off",
    )

    # Below this cosine between the question and its most similar source, the corpus is taken not to
    # hold the answer: nothing is generated and the closest statements are shown instead.
    min_relevance: float = Field(0.35, description="question-to-best-source cosine under which nothing is generated")
    attribute: bool = Field(True, description="match answer sentences to sources after generation")
    min_support: float = Field(
        0.53, description="sentence-to-source support score under which a sentence is unsupported"
    )
    # What the model reads (bench/ask_latency.py: every prompt token costs time on a CPU).
    max_sources: int = Field(4, ge=1, description="sources given to the LLM at most (retrieval.top_k are shown)")
    source_margin: float | None = Field(
        0.15, ge=0, description="give only sources within this cosine of the best one; unset: every source"
    )
    max_source_tokens: int | None = Field(
        200, ge=48, description="tokens one source may take (a longer one is cut at a word); unset: no limit"
    )
    sources_budget_tokens: int | None = Field(
        256, ge=48, description="tokens all sources may take together (the last one is cut); unset: the window's room"
    )
    proofs: Literal["auto", "always", "never"] = Field(
        "auto", description="give each source's proof: auto when the question asks for a proof or a reason"
    )
    # Sources read with the definitions their terms rest on, for whether a source gets picked better: measured
    # paired (docs/retrieval-and-evaluation.md, "The statement graph"), off by default.
    source_definitions: int = Field(
        0,
        ge=0,
        le=4,
        description="give under each source the first N definitions it references (the statement "
        "graph; outside the sources budget); 0: none",
    )
    definition_tokens: int = Field(60, ge=16, description="tokens each definition given under a source may take")
