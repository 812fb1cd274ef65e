"""Helpers of the answer's unit tests: a scripted chat client, a flat embedder and an answer over two sources."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np

from rag_app.answering.answer import Answer
from rag_app.answering.answerer import Answerer
from rag_app.answering.conversation import RewriteMethod, RewrittenQuery
from rag_app.answering.stages import Retrieval
from rag_app.answering.verdict import INPUT_NAMES, VerdictPolicy, decide
from rag_app.answering.verdict_reader import LABELS, VerdictReading
from rag_app.answering.verdict_stage import rules_of
from rag_app.serving.llm_server import LLMServerError
from retriever.types import Query, ScoredBy, SearchResult
from tests.conftest import make_settings
from tests.rag_app.answering.test_quoted_answer import hit

PID = "Every principal ideal domain is a unique factorization domain."


class VerdictClient:
    """A scripted chat client: the source choice (and, asked for a claim, ``verdict``'s TRUE or FALSE)."""

    model, base_url = "scripted", "http://scripted"

    def __init__(self, choice: str, verdict: str) -> None:
        self.choice, self.verdict = choice, verdict
        self.verdict_prompts: list[str] = []

    def chat_with_alternatives(self, messages, max_tokens=None, alternatives=10):
        self.choices_asked = getattr(self, "choices_asked", 0) + 1
        return self.choice, []

    def chat(self, messages, extra_body=None, max_tokens=None, temperature=None) -> str:
        """The two claims, "the answer is yes" then "... no", judged as ``verdict`` says."""
        self.verdict_prompts.append(messages[-1]["content"])
        claim_is_yes = "answer to this question is yes" in messages[-1]["content"]
        judged = {"YES": (True, False), "NO": (False, True)}.get(self.verdict, (True, True))
        return "TRUE" if judged[0 if claim_is_yes else 1] else "FALSE"

    def context_window(self) -> None:
        return None

    def count_tokens(self, text: str) -> None:
        return None


class FlatEmbedder:
    identity = "flat"

    def embed_query(self, text: str) -> np.ndarray:
        return np.ones(4, np.float32) / 2

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return np.ones((len(texts), 4), np.float32) / 2


def answer_stream(
    tmp_path: Path,
    question: str,
    choice: str,
    verdict: str,
    scores: tuple[float, float] | None = None,
    down: str | None = None,
    verdict_stage: object | None = None,
    **quote: object,
):
    """The answer's stream for ``question`` over two sources, and the scripted client; with ``scores``, they are
    the learned ranker's; with ``down``, no model can be had (asking for the client raises that reason);
    ``verdict_stage``: the verdict stage (None: no verdict is read)."""
    hits = [hit("A flat module over a field is free."), hit(PID)]
    if scores is not None:
        hits = [replace(h, score=score) for h, score in zip(hits, scores, strict=True)]
    settings = make_settings(tmp_path, answers={"style": "quote", "quote": quote})
    client = VerdictClient(choice, verdict)
    vectors = {h.record.id: np.ones(4, np.float32) / 2 for h in hits}

    def chat_client() -> VerdictClient:
        if down is not None:
            raise LLMServerError(down)
        return client

    answerer = Answerer(settings, FlatEmbedder(), lambda ids: {i: vectors[i] for i in ids}, chat_client,
                        verdict=verdict_stage)  # fmt: skip
    scored_by = ScoredBy.LEARNED_RANKER if scores is not None else ScoredBy.FUSION
    result = SearchResult(hits, Query(question), vectors, scored_by=scored_by)
    retrieval = Retrieval(RewrittenQuery(question, RewriteMethod.AS_ASKED), result, "everything", "hybrid")
    return answerer.stream(question, retrieval, time.perf_counter()), client


def answer(
    tmp_path: Path,
    question: str,
    choice: str,
    verdict: str,
    scores: tuple[float, float] | None = None,
    down: str | None = None,
    verdict_stage: object | None = None,
    **quote: object,
):
    """The answer to ``question`` (see :func:`answer_stream`), and the scripted client."""
    stream, client = answer_stream(tmp_path, question, choice, verdict, scores, down, verdict_stage, **quote)
    return stream.result(), client


def after_notice(result: Answer) -> str:
    """The answer's text below the notice that the model chose another statement than the one shown first (read
    whole, as ``ask --json`` reads it, the answer has no such notice: issue 84)."""
    shown = result.generation.shown_first
    noticed = shown is not None and shown.kept is False and result.text.startswith("The model read")
    return result.text.split("\n\n", 1)[1] if noticed else result.text


def verdict_policy(**thresholds: float) -> VerdictPolicy:
    """A policy whose confidence is sigmoid(4 (chooser_first - 0.5)): the chooser's probability alone."""
    weights = tuple(4.0 if name == "chooser_first" else 0.0 for name in INPUT_NAMES)
    limits = {"not_found_below": 0.2, "unsure_below": 0.6, "yes_at": 0.8, "no_at": 0.8, "yes_with_rules_at": 0.5,
              "no_with_rules_at": 0.5, **thresholds}  # fmt: skip
    width = len(INPUT_NAMES)
    return VerdictPolicy(INPUT_NAMES, (0.5,) * width, (1.0,) * width, weights, 0.0, limits["not_found_below"],
                         limits["unsure_below"], limits["yes_at"], limits["no_at"], limits["yes_with_rules_at"],
                         limits["no_with_rules_at"], {})  # fmt: skip


class ScriptedVerdict:
    """A verdict stage whose reader reads each source as ``readings`` says (by a word of its text; the rest
    "related"): the real stage's decision over scripted probabilities, without the cross-encoder."""

    def __init__(self, readings: dict[str, dict[str, float]], policy: VerdictPolicy | None = None) -> None:
        self.readings, self.policy = readings, policy or verdict_policy()
        self.read_questions: list[str] = []

    def reading(self, text: str) -> VerdictReading:
        found = next((probabilities for word, probabilities in self.readings.items() if word in text), {"related": 1})
        rest = (1.0 - sum(found.values())) / max(1, len(LABELS) - len(found))
        return VerdictReading({label: float(found.get(label, rest)) for label in LABELS})

    def read(self, question, sources, choice, relevance):
        self.read_questions.append(question.for_model)
        yes_no = question.yes_no
        readings = [self.reading(hit.record.text) for hit in sources]
        kinds = [hit.record.kind for hit in sources]
        rules = rules_of(choice)
        return decide(self.policy, readings, choice.order, choice.probabilities, relevance, yes_no, kinds, rules), 1.0
