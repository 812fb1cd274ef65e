"""The answer is assembled from its stages' immutable records; ``ask --json`` keeps its shape."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from rag_app.answering.answer import Answer
from rag_app.answering.stages import AnswerStatus
from tests.rag_app.answering.answer_helpers import answer

ASK_JSON_FIELDS = [
    "question", "answer", "cited", "invalid_citations", "llm_error", "model", "sources", "status", "not_found",
    "supported", "citations_valid", "attributed", "unsupported_sentences", "sentences", "raw_answer", "prompt",
    "server", "relevance", "support_threshold", "context", "timings_ms", "search_query", "rewrite", "filter",
    "retriever", "reranker", "second_embedding", "style", "choice", "choice_confidence", "chosen_by",
    "yes_no_verdict", "lead_in", "removed_sentences", "repeated_sentences", "truncated", "yes_no", "model_calls",
    "shown_first", "next_results", "llm", "source_choice", "verdict", "confidence", "verdict_reading",
]  # fmt: skip
CONTEXT_FIELDS = [
    "tokens", "tokens_counted", "window", "sources_given", "trimmed", "dropped", "instruction_tokens",
    "question_tokens", "source_tokens", "proofs",
]  # fmt: skip


def test_ask_json_keeps_every_field_in_order(tmp_path: Path) -> None:
    result, _ = answer(tmp_path, "Is every principal ideal domain a UFD?", "[2]", "YES")
    fields = result.to_dict()
    assert list(fields) == ASK_JSON_FIELDS and list(fields["context"]) == CONTEXT_FIELDS
    assert json.loads(json.dumps(fields)) == fields  # plain JSON: lists, not tuples
    assert fields["status"] == "answered" and fields["cited"] == [2] and fields["chosen_by"] == "model"
    # the model chose (no learned chooser ordered the sources): no verdict is read, no line stands above the quote
    assert len(fields["sources"]) == 2 and fields["lead_in"] is None and fields["verdict"] is None


def test_the_answer_and_its_stages_are_immutable(tmp_path: Path) -> None:
    result, _ = answer(tmp_path, "Is every principal ideal domain a UFD?", "[2]", "YES")
    assert isinstance(result, Answer) and result.status is AnswerStatus.ANSWERED
    for record in (result, result.retrieval, result.relevance_check, result.generation, result.checks):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(record, dataclasses.fields(record)[0].name, "changed")
    # each reported field reads the stage that holds it
    assert result.text == result.checks.text and result.model == result.generation.model
    assert result.relevance == result.relevance_check.score and result.search_query == result.retrieval.search.query
    # read on the class: the descriptor, for documentation tools; its reader is a function the type checker sees
    assert Answer.text.read(result) == result.checks.text


def test_the_result_of_a_closed_stream_is_a_named_error_not_an_assertion() -> None:
    """Issue 93: ``result()`` after ``close()`` failed an ``assert`` (and under ``python -O`` built an answer from
    nothing); it says what happened."""
    from rag_app.answering.answer import AnswerClosedError, AnswerStream

    def chunks():  # type: ignore[no-untyped-def]
        yield "The first words"
        yield " and more"

    finished: list[object] = []
    stream = AnswerStream([], chunks(), lambda text, generation, s: finished.append(text))  # type: ignore[arg-type]
    assert next(iter(stream)) == "The first words"
    stream.close()
    with pytest.raises(AnswerClosedError, match="closed before the answer ended"):
        stream.result()
    assert finished == []
