"""The default quoting answer against the real local server: the model's pick, the statement quoted whole."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rag_app import MathRAG
from rag_app.answering.answer import AnswerStatus
from rag_app.answering.quoted_answer import NONE_STATED
from rag_app.cli import app
from rag_app.serving.llm_server import LLMServerProcess
from tests.conftest import make_settings
from tests.llm_servers import forced_output
from tests.rag_app.answering.answer_helpers import after_notice

pytestmark = pytest.mark.llm

QUESTION = "What does Nakayama's lemma say about a finitely generated module $M$ with $IM = M$?"


def quoting_rag(
    demo_index_dir: Path, tmp_path: Path, server: LLMServerProcess, reply: str, **quote_settings: object
) -> MathRAG:
    # the model chooses every time: these tests are about its pick (tests/rag_app/test_answer_choice.py
    # covers the learned ranker's clear first result, quoted without asking it; test_chosen_answer.py the learned
    # chooser's, issue 92)
    quote = {"ranker_sure_margin": None, "chooser": "none", **quote_settings}
    settings = make_settings(tmp_path, index_dir=demo_index_dir, answers={"style": "quote", "quote": quote})
    settings.llm.base_url = server.base_url
    settings.llm.extra_body = forced_output(reply)  # the real server generates exactly this
    return MathRAG(settings)


def test_a_deeper_reading_gives_the_model_more_openings_than_the_search_shows_in_the_lean_layout(
    demo_index_dir: Path, tmp_path: Path, llm_server: LLMServerProcess
) -> None:
    rag = quoting_rag(
        demo_index_dir, tmp_path, llm_server, "[7]", prompt="answer_select@v2", max_sources=7, max_source_tokens=60
    )
    assert rag.settings.retrieval.top_k < 7
    answer = rag.ask(QUESTION)
    assert answer.prompt == "answer_select@v2" and answer.context.sources_given == 7
    assert len(answer.sources) == 7 and max(answer.context.source_tokens) <= 60
    assert answer.cited == [7] and f"[7] {answer.sources[6].record.display_name}" in answer.text


def test_the_statement_the_model_picks_is_quoted_whole(
    demo_index_dir: Path, tmp_path: Path, llm_server: LLMServerProcess
) -> None:
    rag = quoting_rag(demo_index_dir, tmp_path, llm_server, "[2]")
    answer = rag.ask(QUESTION, k=5)
    assert answer.raw_text == "[2]" and answer.style == "quote" and answer.prompt == "answer_select@v1"
    picked = answer.sources[1].record
    quoted = after_notice(answer)
    # read whole (nothing was shown first), the answer carries no sentence about the first quote (issue 84)
    assert answer.text.startswith("[2] ") and "The model read" not in answer.text
    assert answer.generation.shown_first is not None and answer.generation.shown_first.kept is False
    assert quoted.startswith(f"[2] {picked.display_name}, in *{picked.source_title}*:")
    body = " ".join(line.removeprefix("> ") for line in quoted.splitlines()[2:])
    assert " ".join(picked.text.split()) == " ".join(body.split())  # word for word, nothing cut
    assert answer.cited == [2] and answer.status is AnswerStatus.ANSWERED
    assert [(s.cited, s.stated) for s in answer.sentences] == [([2], True)]
    # the model read short views of more sources than a written answer gets, within the quote budget
    assert 1 < answer.context.sources_given <= rag.settings.answers.quote.max_sources
    assert max(answer.context.source_tokens) <= rag.settings.answers.quote.max_source_tokens + 8
    record = answer.to_dict()
    assert record["style"] == "quote" and record["sentences"][0]["stated"] is True
    # how sure the model was: the server's log probabilities of its first pick, when it gives them
    # (llama-cpp-python refuses unless it keeps every logit: the answer is made without them)
    if answer.choice:
        assert set(answer.choice) <= {"1", "2", "3", "4", "none"} and abs(sum(answer.choice.values()) - 1) < 0.01
    assert record["choice"] == answer.choice
    assert record["choice_confidence"] == (answer.choice.get("2", 0.0) if answer.choice else None)


def test_no_pick_quotes_the_closest_statement_under_a_notice(
    demo_index_dir: Path, tmp_path: Path, llm_server: LLMServerProcess
) -> None:
    answer = quoting_rag(demo_index_dir, tmp_path, llm_server, "NONE").ask(QUESTION, k=5)
    closest = list(range(1, min(3, len(answer.sources)) + 1))  # answers.quote.unsure_quotes = 3
    assert after_notice(answer).startswith(NONE_STATED) and answer.sources and answer.cited == closest
    assert all(f"[{n}] {answer.sources[n - 1].record.display_name}" in answer.text for n in closest)
    assert answer.status is AnswerStatus.UNSUPPORTED


def test_cli_ask_prints_the_quote_and_names_sources_by_title(
    demo_index_dir: Path, tmp_path: Path, llm_server: LLMServerProcess
) -> None:
    env = {
        "RAG_APP_DATA_DIR": str(tmp_path / "data"),
        "RAG_APP_LLM__BASE_URL": llm_server.base_url,
        "RAG_APP_LLM__EXTRA_BODY": json.dumps(forced_output("[1]")),
    }
    result = CliRunner().invoke(app, ["ask", QUESTION, "--index", str(demo_index_dir), "--json"], env=env)
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["style"] == "quote" and data["cited"] == [1] and data["answer"].startswith("[1] ")
    title = data["sources"][0]["title"]
    assert title and f"in *{title}*" in data["answer"]


def test_a_written_answer_loses_what_its_source_does_not_state(
    demo_index_dir: Path, tmp_path: Path, llm_server: LLMServerProcess
) -> None:
    reply = (
        r"If $IM = M$ for a finitely generated $R$-module $M$ and an ideal $I \subseteq \operatorname{Jac}(R)$, "
        r"then $M = 0$ [1]. This extension is unique up to a scalar multiple [1]. "
        r"This extension is unique up to a scalar multiple [1]. Then"
    )
    settings = make_settings(tmp_path, index_dir=demo_index_dir)  # written answers: answers.style = synthesis
    settings.llm.base_url, settings.llm.max_tokens = llm_server.base_url, 120
    settings.llm.extra_body = forced_output(reply)
    answer = MathRAG(settings).ask(QUESTION, k=1)
    assert answer.style == "synthesis" and answer.raw_text == reply
    assert "Nakayama" in answer.sources[0].record.display_name
    assert (answer.repeated_sentences, answer.truncated) == (1, True)
    assert answer.removed_sentences == ["This extension is unique up to a scalar multiple [1]."]
    assert answer.text.startswith(r"If $IM = M$") and "scalar" not in answer.text.split("\n\n")[0]
    assert answer.text.endswith("(1 sentence that the cited sources do not state was removed: read the sources below.)")
    removed = [s for s in answer.sentences if s.text in answer.removed_sentences]
    assert removed and not removed[0].stated and any("scalar" in p for p in removed[0].problems)
    assert answer.status is AnswerStatus.ANSWERED and answer.to_dict()["removed_sentences"] == answer.removed_sentences


def test_a_yes_no_question_gets_the_trained_readers_verdict_and_asks_the_model_nothing_for_it(
    demo_index_dir: Path, tmp_path: Path, llm_server: LLMServerProcess
) -> None:
    # the learned chooser orders the sources (the default), the packaged cross-encoder reads them
    rag = quoting_rag(demo_index_dir, tmp_path, llm_server, "[1]", chooser="packaged", ranker_sure_margin=1.5)
    answer = rag.ask("Is a finitely generated module $M$ with $IM = M$ zero, by Nakayama's lemma?", k=5)
    record = answer.to_dict()
    assert record["verdict"] in ("yes", "no", "answers", "unsure", "not_found") and record["verdict"] is not None
    assert 0.0 <= record["confidence"] <= 1.0 and record["yes_no_verdict"] == record["verdict"]
    assert answer.timings_ms["verdict"] > 0 and "verdict" not in [call.purpose for call in answer.model_calls]
    readings = record["verdict_reading"]["readings"]
    assert len(readings) == len(answer.generation.sources) and all(abs(sum(r.values()) - 1) < 1e-3 for r in readings)
    if record["lead_in"]:
        assert answer.text.startswith(record["lead_in"])
