"""Who chooses the quoted statement with no learned chooser (`answers.quote.chooser = "none"`, the way before issue
92): the learned ranker where its first result clearly leads, else the model."""

from __future__ import annotations

from pathlib import Path

from rag_app.answering.answer import AnswerStatus
from rag_app.answering.quoted_answer import ranker_is_sure
from tests.rag_app.answering.answer_helpers import PID, ScriptedVerdict, answer
from tests.rag_app.answering.test_quoted_answer import hit


def test_the_ranker_is_sure_only_with_a_clear_lead_over_a_second_result() -> None:
    first, second = hit("A statement."), hit("Another one.")
    lead = [first.__class__(first.record, 3.0, 1), second.__class__(second.record, 1.9, 2)]
    assert ranker_is_sure(lead, 1.0) and not ranker_is_sure(lead, 1.5)
    assert not ranker_is_sure(lead, None), "unset: the model always chooses"
    assert not ranker_is_sure(lead[:1], 0.0), "one result was compared with nothing"


def test_a_clear_first_result_is_quoted_without_asking_the_model(tmp_path: Path) -> None:
    result, client = answer(tmp_path, "flat module over a field", "[2]", "", chooser="none", scores=(3.0, 1.5))
    assert result.chosen_by == "ranker" and result.cited == [1] and result.status is AnswerStatus.ANSWERED
    assert getattr(client, "choices_asked", 0) == 0 and result.choice == {} and result.raw_text == ""
    assert result.text.startswith("[1] ") and len(result.sources) == 2  # the others still listed
    assert result.to_dict()["chosen_by"] == "ranker"


def test_a_close_call_or_scores_not_the_learned_rankers_go_to_the_model(tmp_path: Path) -> None:
    close, client = answer(tmp_path, "PID implies UFD", "[2]", "", chooser="none", scores=(3.0, 2.5))
    assert close.chosen_by == "model" and close.cited == [2] and client.choices_asked == 1
    fused, client = answer(tmp_path / "fused", "PID implies UFD", "[2]", "")  # RRF scores: never compared
    assert fused.chosen_by == "model" and client.choices_asked == 1
    off, client = answer(
        tmp_path / "off", "PID implies UFD", "[2]", "", chooser="none", scores=(3.0, 0.0), ranker_sure_margin=None
    )
    assert off.chosen_by == "model" and client.choices_asked == 1


def test_without_the_learned_chooser_a_clear_first_result_is_quoted_without_a_verdict(tmp_path: Path) -> None:
    result, _ = answer(
        tmp_path,
        "Is every principal ideal domain a unique factorization domain?",
        "[1]",
        "YES",
        chooser="none",
        scores=(0.5, 3.0),
    )
    assert result.chosen_by == "model"  # the second leads: not a clear first result
    result, _ = answer(
        tmp_path / "sure", "Is a flat module over a field free?", "[2]", "YES", chooser="none", scores=(3.0, 0.5)
    )
    assert result.chosen_by == "ranker" and result.lead_in is None and result.verdict is None and PID not in result.text


def test_the_margin_is_turned_off_by_none_in_toml_or_the_environment() -> None:
    from rag_app.settings import QuoteSettings

    assert QuoteSettings(ranker_sure_margin="none").ranker_sure_margin is None
    assert QuoteSettings(ranker_sure_margin="2.5").ranker_sure_margin == 2.5
    assert QuoteSettings().ranker_sure_margin == 1.5  # docs/answers.md, "The margin again"


def test_with_no_model_to_be_had_a_clear_first_result_is_still_quoted(tmp_path: Path) -> None:
    down = "the llama.cpp server killed by SIGILL: the CPU advertised instructions it cannot run"
    sure, _ = answer(tmp_path, "flat module over a field", "[2]", "", chooser="none", scores=(3.0, 1.5), down=down)
    assert sure.chosen_by == "ranker" and sure.status is AnswerStatus.ANSWERED and sure.llm_error is None
    assert sure.text.startswith("[1] ") and "flat module" in sure.text
    # a yes/no question: the verdict is the trained reader's, so its lead-in needs no model either
    stage = ScriptedVerdict({"flat module": {"yes": 0.95}})
    yes_no, _ = answer(tmp_path / "yn", "Is a flat module over a field free?", "[2]", "YES", scores=(3.0, 0.5),
                       down=down, verdict_stage=stage)  # fmt: skip
    assert yes_no.chosen_by == "chooser" and yes_no.lead_in == "Yes, as [1] states:" and yes_no.model_calls == []


def test_with_no_model_to_be_had_a_close_call_lists_the_statements_under_a_plain_notice(tmp_path: Path) -> None:
    down = "the llama.cpp server killed by SIGILL: the CPU advertised instructions it cannot run"
    close, _ = answer(tmp_path, "PID implies UFD", "[2]", "", chooser="none", scores=(3.0, 2.5), down=down)
    assert close.status is AnswerStatus.LLM_UNAVAILABLE and close.llm_error == down
    assert close.text.startswith("The language model is not available (the llama.cpp server killed by SIGILL")
    assert "listed below" in close.text and len(close.sources) == 2
