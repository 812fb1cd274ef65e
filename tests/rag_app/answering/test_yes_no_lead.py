"""The yes/no lead-in above a quote: only a checkable one word and a pointer, else none (units)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from rag_app.answering.answer import Answer
from rag_app.answering.answerer import Answerer
from rag_app.answering.claims import is_yes_no_question, negates, topic_overlap
from rag_app.answering.conversation import RewriteMethod, RewrittenQuery
from rag_app.answering.stages import Retrieval
from rag_app.answering.yes_no_lead import Verdict, checkable_lead_in, parse_claim, verdict_of_claims
from rag_app.serving.llm_server import LLMServerError
from retriever.types import Query, ScoredBy, SearchResult
from tests.conftest import make_settings
from tests.rag_app.answering.test_quoted_answer import hit

PID = "Every principal ideal domain is a unique factorization domain."


@pytest.mark.parametrize(
    "question",
    ["Is every PID a UFD?", "does sum 1/p converge", "Can a group of order p^2 be non-abelian?", "So, are they equal?"],
)
def test_questions_that_ask_yes_or_no_are_recognised(question: str) -> None:
    assert is_yes_no_question(question)


@pytest.mark.parametrize("question", ["PID implies UFD", "When is a module flat?", "Island of stability", "Dose"])
def test_other_questions_are_not(question: str) -> None:
    assert not is_yes_no_question(question)


def test_the_verdict_needs_exactly_one_of_the_two_claims() -> None:
    assert parse_claim("TRUE") is True and parse_claim(" false.") is False and parse_claim("[1]") is None
    assert verdict_of_claims(True, False) is Verdict.YES and verdict_of_claims(False, True) is Verdict.NO
    # the model's bias: "yes" and "no" both TRUE settles nothing
    assert verdict_of_claims(True, True) is verdict_of_claims(False, False) is Verdict.NONE
    assert verdict_of_claims(True, None) is Verdict.NONE


def test_the_lead_in_needs_a_yes_a_plain_question_and_a_statement_about_it() -> None:
    question = "Is every principal ideal domain a unique factorization domain?"
    assert topic_overlap(question, PID) == 1.0
    assert checkable_lead_in(question, PID, Verdict.YES, 2, 0.5) == "Yes, as [2] states:"
    assert checkable_lead_in(question, PID, Verdict.NO, 1, 0.5) is None, "the model never judged a no rightly"
    assert checkable_lead_in(question, PID, Verdict.NONE, 2, 0.5) is None
    negated = "Can a principal ideal domain fail to be a unique factorization domain?"
    assert negates(negated) and negates("Is there a nonconstant bounded entire function?")
    assert not negates(question) and not negates("Is R[x] noetherian when R is?")
    assert checkable_lead_in(negated, PID, Verdict.YES, 2, 0.5) is None
    # a verdict on a statement about something else is never shown
    other = "A compact subset of a Hausdorff space is closed."
    assert topic_overlap(question, other) == 0.0
    assert checkable_lead_in(question, other, Verdict.YES, 2, 0.5) is None


class VerdictClient:
    """A scripted chat client: the source choice, then the verdict."""

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
    **quote: object,
):
    """The answer's stream for ``question`` over two sources, and the scripted client; with ``scores``, they are
    the learned ranker's; with ``down``, no model can be had (asking for the client raises that reason)."""
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

    answerer = Answerer(settings, FlatEmbedder(), lambda ids: {i: vectors[i] for i in ids}, chat_client)
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
    **quote: object,
):
    """The answer to ``question`` (see :func:`answer_stream`), and the scripted client."""
    stream, client = answer_stream(tmp_path, question, choice, verdict, scores, down, **quote)
    return stream.result(), client


def after_notice(result: Answer) -> str:
    """The answer's text below the notice that the model chose another statement than the one shown first (read
    whole, as ``ask --json`` reads it, the answer has no such notice: issue 84)."""
    shown = result.generation.shown_first
    noticed = shown is not None and shown.kept is False and result.text.startswith("The model read")
    return result.text.split("\n\n", 1)[1] if noticed else result.text


def test_a_yes_no_question_gets_the_rules_lead_in_above_the_quote_without_a_model_call(tmp_path: Path) -> None:
    result, client = answer(tmp_path, "Is every principal ideal domain a UFD?", "[2]", "NO")
    assert after_notice(result).startswith("Yes, as [2] states:\n\n[2] Lemma (Nakayama)")
    assert (result.lead_in, result.yes_no_verdict) == ("Yes, as [2] states:", "yes")
    assert client.verdict_prompts == [], "the rules read the quote: the model's verdict (NO here) is not asked"
    assert [call.purpose for call in result.model_calls] == ["choice"]
    data = result.to_dict()
    assert data["yes_no"]["method"] == "rules" and data["yes_no_verdict"] == "yes" and "verdict" not in data["yes_no"]
    assert [call["purpose"] for call in data["model_calls"]] == ["choice"]
    assert result.model_calls_text.startswith("scripted: choice ")


def test_a_dropped_hypothesis_gets_only_if_and_a_changed_object_a_notice(tmp_path: Path) -> None:
    dropped, _ = answer(tmp_path, "Is every domain a unique factorization domain?", "[2]", "YES")
    assert dropped.yes_no_verdict == "only-if" and dropped.lead_in is not None
    assert dropped.lead_in.startswith("Only under a hypothesis the question does not state (principal")
    assert after_notice(dropped).startswith(dropped.lead_in + "\n\n[2] ")
    other, _ = answer(tmp_path / "other", "Is every principal ideal domain a field?", "[2]", "YES")
    assert other.yes_no_verdict == "none" and other.lead_in is not None and "Yes" not in other.lead_in
    assert (
        other.lead_in
        == "Check against the question: what [2] concludes differs from what the question asks. Quoted as it stands:"
    )
    moved, _ = answer(tmp_path / "moved", "Is every principal ideal domain over the rationals a UFD?", "[2]", "YES")
    assert moved.lead_in == "Check against the question: [2] does not speak of rationals. Quoted as it stands:"


def test_the_model_way_asks_two_claims_and_reports_both_calls(tmp_path: Path) -> None:
    result, client = answer(tmp_path, "Is every principal ideal domain a UFD?", "[2]", "YES", yes_no_method="model")
    assert (result.lead_in, result.yes_no_verdict) == ("Yes, as [2] states:", "yes")
    assert PID in client.verdict_prompts[0] and "<source 2 key=" in client.verdict_prompts[0]
    assert "yes_no" in result.timings_ms and result.to_dict()["lead_in"] == "Yes, as [2] states:"
    assert [call.purpose for call in result.model_calls] == ["choice", "verdict"]
    assert result.timings_ms["model_calls"] == pytest.approx(sum(c.ms for c in result.model_calls), abs=0.2)
    both, _ = answer(
        tmp_path / "both", "Is every principal ideal domain a UFD?", "[2]", "NO", yes_no_method="rules+model"
    )
    assert both.lead_in is None and both.yes_no_verdict == "none", "the rules' yes needs the model's too"


def test_no_lead_in_when_unclear_off_or_not_a_yes_no_question(tmp_path: Path) -> None:
    unclear, _ = answer(tmp_path, "Is every principal ideal domain a UFD?", "[2]", "UNCLEAR", yes_no_method="model")
    assert after_notice(unclear).startswith("[2] ") and unclear.lead_in is None and unclear.yes_no_verdict == "none"
    off, client = answer(tmp_path / "off", "Is every principal ideal domain a UFD?", "[2]", "YES", yes_no_lead=False)
    assert off.lead_in is None and client.verdict_prompts == []
    plain, client = answer(tmp_path / "plain", "PID implies UFD", "[2]", "YES")
    assert plain.lead_in is None and client.verdict_prompts == [], "not a yes/no question: no extra call"
    abstained, client = answer(tmp_path / "none", "Is every principal ideal domain a UFD?", "NONE", "YES")
    assert abstained.lead_in is None and client.verdict_prompts == [], "nothing picked: nothing to lead into"


def test_a_counterexample_the_search_found_is_quoted_first_under_no_and_the_models_pick_beside_it(
    tmp_path: Path,
) -> None:
    """Issue 84: the statement that refutes the claim as asked opens the answer, "No: [n] gives a counterexample:",
    though the model picked another and the counterexample stood below the sources it read."""
    from ingestion.records import Source, StatementKind, StatementRecord
    from retriever.types import SearchHit

    question = "Is every formally smooth ring map flat?"
    lemma = hit("Let $R \\to S$ be a smooth ring map. Then $R \\to S$ is flat.")
    other = hit("A polynomial ring over $R$ is formally smooth over $R$.")
    counter = SearchHit(
        StatementRecord("counter", Source.LOCAL, StatementKind.LEMMA,
                        "There exists a formally smooth ring map which is not flat.", "examples"), 0.5, 7,
    )  # fmt: skip
    settings = make_settings(tmp_path, answers={"style": "quote", "quote": {"ranker_sure_margin": None}})
    client = VerdictClient("[1]", "NO")
    vectors = {h.record.id: np.ones(4, np.float32) / 2 for h in (lemma, other, counter)}
    answerer = Answerer(settings, FlatEmbedder(), lambda ids: {i: vectors[i] for i in ids}, lambda: client)
    result = SearchResult([lemma, other], Query(question), vectors, scored_by=ScoredBy.FUSION)
    retrieval = Retrieval(
        RewrittenQuery(question, RewriteMethod.AS_ASKED), result, "everything", "hybrid", next_hits=(counter,)
    )
    answer = answerer.stream(question, retrieval, time.perf_counter()).result()
    assert answer.text.startswith("No: [3] gives a counterexample:\n\n[3] ")
    assert answer.cited == [3, 1] and answer.sources[2].record.id == "counter"
    assert answer.yes_no_verdict == "no" and answer.to_dict()["yes_no"]["reason"].endswith("counterexample")
    # found by the second search, worded as a counterexample (retrieval.counter_hits), it opens the answer the same
    second = replace(retrieval, next_hits=(), counter_hits=(counter,))
    assert answerer.stream(question, second, time.perf_counter()).result().text.startswith("No: [3] gives a")
    # the same claim asked true-side up is not refuted by it
    true_side = answerer.stream("Is a smooth ring map flat?", replace(retrieval, search=RewrittenQuery(
        "Is a smooth ring map flat?", RewriteMethod.AS_ASKED)), time.perf_counter()).result()  # fmt: skip
    assert not true_side.text.startswith("No")


def test_a_refutation_and_the_opposite_print_different_words() -> None:
    """Issue 93: ``Verdict.NO`` (a refutation) and ``Verdict.OPPOSITE`` (the other polarity, no "No") said the same
    "states the opposite"; a reader could not tell a refutation from a reversed claim."""
    from rag_app.answering.claims.claim_comparison import ClaimComparison
    from rag_app.answering.yes_no_lead import rules_lead_in

    refuted = rules_lead_in(ClaimComparison(Verdict.NO, "the statement refutes the claim: opposite"), 1)
    opposite = rules_lead_in(ClaimComparison(Verdict.OPPOSITE, "the statement asserts the opposite"), 1)
    assert refuted is not None and opposite is not None
    assert refuted.startswith("No:") and not opposite.startswith("No")
    assert refuted.removeprefix("No: ") != opposite


def test_no_verdict_has_one_value() -> None:
    """Issue 93: "no verdict" was ``NONE``, ``UNCLEAR`` and ``None``; it is ``Verdict.NONE`` alone."""
    assert [verdict.value for verdict in Verdict] == ["yes", "no", "opposite", "only-if", "none"]
    assert verdict_of_claims(None, None) is Verdict.NONE


def test_an_answer_reads_its_question_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 93: the chooser's features, the refutation scan, the comparison and the lead-in each asked again
    whether the question asks yes or no (about three times per statement read) and parsed its claim again; one
    :class:`AskedQuestion` now serves them all."""
    import sys

    from rag_app.answering.claims import yes_no_questions

    asked: list[str] = []
    real = yes_no_questions.is_yes_no_question

    def counted(question: str) -> bool:
        asked.append(question)
        return real(question)

    for name, module in list(sys.modules.items()):
        if name.startswith("rag_app.answering") and getattr(module, "is_yes_no_question", None) is real:
            monkeypatch.setattr(module, "is_yes_no_question", counted)
    question = "Is every principal ideal domain a unique factorization domain?"
    answered, _ = answer(tmp_path, question, "[2]", "YES")
    assert answered.text and answered.yes_no_verdict is not None
    assert asked == [question]
