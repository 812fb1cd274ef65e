"""The learned chooser's answer (issue 92): the likeliest statement leads at search speed, the model may add one
but never takes the first back, the notice only where the chooser doubts every source."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from rag_app.answering.answer import AnswerStatus, AnswerUpdate
from rag_app.answering.quoted_answer import NONE_STATED
from rag_app.answering.source_chooser import SourceChooser
from rag_app.answering.source_features import FEATURE_NAMES
from tests.rag_app.answering.answer_helpers import PID, ScriptedVerdict, answer, answer_stream


def chooser_file(tmp_path: Path, prefer_second: bool = False, intercept: float = 3.0, check: float = 0.5) -> str:
    """A chooser whose probabilities follow the rank (the first source, or with ``prefer_second`` the second)."""
    coef = np.zeros(len(FEATURE_NAMES))
    coef[FEATURE_NAMES.index("rank")] = 4.0 if prefer_second else -4.0
    zeros, ones = np.zeros(len(FEATURE_NAMES)), np.ones(len(FEATURE_NAMES))
    chooser = SourceChooser(FEATURE_NAMES, zeros, ones, coef, intercept, 0.5, check, {})
    return str(chooser.save(tmp_path / f"chooser-{prefer_second}-{intercept}-{check}.json"))


def test_the_likeliest_source_is_quoted_first_and_the_models_other_pick_is_added_below(tmp_path: Path) -> None:
    chooser = chooser_file(tmp_path, prefer_second=True)
    stream, client = answer_stream(tmp_path, "PID implies UFD", "[1]", "", (3.0, 2.5), chooser=chooser)
    events = list(stream.events())
    first = events[0]
    assert isinstance(first, str) and first.startswith("[2] ") and PID in first, "the chooser's pick, at once"
    update = events[-1]
    assert isinstance(update, AnswerUpdate) and not update.changed
    assert update.appended.startswith("\n\nThe model read the 2 statements found and points to [1] as well:")
    result = stream.result()
    assert result.chosen_by == "chooser" and result.cited == [2, 1] and result.status is AnswerStatus.ANSWERED
    assert result.text.startswith("[2] ") and client.choices_asked == 1
    record = result.to_dict()
    assert record["source_choice"]["order"] == [2, 1] and record["source_choice"]["answers"] is True
    assert record["shown_first"]["kept"] is True


def test_the_model_agreeing_or_saying_none_changes_nothing(tmp_path: Path) -> None:
    chooser = chooser_file(tmp_path)
    for reply in ("[1]", "NONE"):
        result, client = answer(tmp_path / reply, "PID implies UFD", reply, "", (3.0, 2.5), chooser=chooser)
        assert result.text.startswith("[1] ") and result.cited == [1] and NONE_STATED not in result.text
        assert client.choices_asked == 1 and result.status is AnswerStatus.ANSWERED


def test_where_no_source_is_likely_the_notice_quotes_the_likeliest_and_asks_no_model(tmp_path: Path) -> None:
    chooser = chooser_file(tmp_path, prefer_second=True, intercept=-8.0)
    result, client = answer(tmp_path, "PID implies UFD", "[1]", "", (3.0, 2.5), chooser=chooser)
    assert result.text.startswith(NONE_STATED) and "[2] " in result.text
    assert result.status is AnswerStatus.UNSUPPORTED and getattr(client, "choices_asked", 0) == 0
    assert result.to_dict()["source_choice"]["answers"] is False


def test_with_the_model_down_the_chosen_quote_stands(tmp_path: Path) -> None:
    down = "the llama.cpp server is still being built"
    chooser = chooser_file(tmp_path)
    result, _ = answer(tmp_path, "PID implies UFD", "[2]", "", (3.0, 2.5), down=down, chooser=chooser)
    assert result.status is AnswerStatus.ANSWERED and result.llm_error is None and result.text.startswith("[1] ")
    assert down in result.to_dict()["shown_first"]["notice"]


def test_model_adds_off_asks_no_model(tmp_path: Path) -> None:
    chooser = chooser_file(tmp_path)
    result, client = answer(tmp_path, "PID implies UFD", "[2]", "", (3.0, 2.5), chooser=chooser, model_adds=False)
    assert result.cited == [1] and getattr(client, "choices_asked", 0) == 0 and result.model_calls == []


def test_the_verdict_decides_the_line_above_the_chosen_quote_and_the_record_says_how_sure(tmp_path: Path) -> None:
    chooser = chooser_file(tmp_path, prefer_second=True)  # [2] (PID) at about 0.95
    question = "Is every principal ideal domain a unique factorization domain?"
    proves = ScriptedVerdict({"principal ideal": {"yes": 0.9}})
    result, client = answer(tmp_path, question, "[1]", "", (3.0, 2.5), verdict_stage=proves, chooser=chooser)
    assert result.lead_in == "Yes, as [2] states:" and result.text.startswith("Yes, as [2] states:\n\n[2] ")
    record = result.to_dict()
    assert record["verdict"] == "yes" and record["yes_no_verdict"] == "yes" and 0.5 < record["confidence"] < 1
    assert record["verdict_reading"]["order"] == [2, 1] and len(record["verdict_reading"]["readings"]) == 2
    assert proves.read_questions == [question], "read once, before the model is asked"
    assert result.timings_ms["verdict"] == 1.0 and client.choices_asked == 1
    # the same statement read as not settling: the doubt is said above it, and no "Yes"
    doubting = chooser_file(tmp_path, prefer_second=True, intercept=-3.8)  # [2] at about 0.55: under unsure_below
    unsure, _ = answer(tmp_path / "u", question, "[1]", "", (3.0, 2.5), verdict_stage=ScriptedVerdict({}),
                       chooser=doubting, model_adds=False)  # fmt: skip
    assert unsure.verdict == "unsure" and unsure.yes_no_verdict == "unsure"
    assert unsure.text.startswith("[2] is the closest statement found; it may not answer the question:\n\n[2] ")


def test_where_nothing_answers_the_closest_are_quoted_under_that_and_a_refutation_leads(tmp_path: Path) -> None:
    nowhere = chooser_file(tmp_path, prefer_second=True, intercept=-8.0)
    result, _ = answer(tmp_path, "Is every principal ideal domain a field?", "[1]", "", (3.0, 2.5),
                       verdict_stage=ScriptedVerdict({}), chooser=nowhere)  # fmt: skip
    assert result.verdict == "not_found" and result.status is AnswerStatus.UNSUPPORTED
    assert result.text.startswith("Nothing in the index answers this; the closest statements:\n\n[2] ")
    assert result.text.index("[2] ") < result.text.index("[1] ") and result.cited == [2, 1]
    refuted = ScriptedVerdict({"flat module": {"no": 0.9}})
    chooser = chooser_file(tmp_path, prefer_second=True)
    result, _ = answer(tmp_path / "no", "Is every module over a field projective and not free?", "[1]", "",
                       (3.0, 2.5), verdict_stage=refuted, chooser=chooser, model_adds=False)  # fmt: skip
    assert result.verdict == "no" and result.text.startswith("No: [1] states the opposite:\n\n[1] ")
    assert result.cited == [1]


def test_chooser_none_lets_the_model_choose_as_before(tmp_path: Path) -> None:
    result, client = answer(tmp_path, "PID implies UFD", "[2]", "", (3.0, 2.5), chooser="none")
    assert result.chosen_by == "model" and result.cited == [2] and client.choices_asked == 1


def test_where_the_rankers_first_result_leads_clearly_the_model_is_not_asked(tmp_path: Path) -> None:
    """The model is asked where it was asked before issue 92 (the learned ranker's first result not clearly ahead)."""
    chooser = chooser_file(tmp_path)
    result, client = answer(tmp_path, "PID implies UFD", "[2]", "", (3.0, 1.0), chooser=chooser)
    assert result.cited == [1] and getattr(client, "choices_asked", 0) == 0 and result.model_calls == []
    result, client = answer(tmp_path / "u", "PID implies UFD", "[2]", "", (3.0, 2.5), chooser=chooser)
    assert result.cited == [1, 2] and client.choices_asked == 1
