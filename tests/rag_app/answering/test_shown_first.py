"""The search's first result shown at once while the model chooses, and the update its choice brings."""

from __future__ import annotations

from pathlib import Path

from rag_app.answering.answer import AnswerStatus, AnswerStream, AnswerUpdate
from rag_app.answering.quoted_answer import NONE_STATED
from tests.rag_app.answering.answer_helpers import PID, VerdictClient, answer_stream

FLAT = "A flat module over a field is free."


def stream(tmp_path: Path, question: str, choice: str, down: str | None = None, **quote: object):
    """The answer's stream over two sources (the flat module first, then PID), scored by the fused search
    (so the model chooses), and the scripted client (it replies ``choice``)."""
    return answer_stream(tmp_path, question, choice, "NO", None, down, **quote)


def first_then_rest(answer_stream: AnswerStream, client: VerdictClient) -> tuple[str, int, list[str | AnswerUpdate]]:
    """The first event, how many choices the model had been asked for when it came, and the rest."""
    events = answer_stream.events()
    first = next(events)
    asked_before_first = getattr(client, "choices_asked", 0)
    assert isinstance(first, str)
    return first, asked_before_first, list(events)


def test_the_first_result_is_quoted_before_the_model_is_asked(tmp_path: Path) -> None:
    answer_stream, client = stream(tmp_path, "flat modules over a field", "[1]")
    first, asked, rest = first_then_rest(answer_stream, client)
    assert asked == 0, "shown before the model read anything"
    assert first.startswith("The search's first result, shown while the model reads the 2 statements found:\n\n[1] ")
    assert FLAT in first and PID not in first
    # the model chose it too: the update keeps the quote and says so
    [update] = rest
    assert isinstance(update, AnswerUpdate) and not update.changed
    assert update.notice == "The model read the 2 statements found and chose [1] as well."
    answer = answer_stream.result()
    assert update.text == answer.text and answer.text.startswith("[1] ") and "first result" not in answer.text
    assert answer.chosen_by == "model" and answer.cited == [1] and answer.status is AnswerStatus.ANSWERED
    shown = answer.to_dict()["shown_first"]
    assert shown["picked"] == [1] and shown["kept"] is True and shown["notice"] == update.notice
    assert 0 < answer.timings_ms["first_token"] <= answer.timings_ms["full_answer"]


def test_another_choice_replaces_the_first_quote_and_says_so(tmp_path: Path) -> None:
    answer_stream, client = stream(tmp_path, "Is every principal ideal domain a UFD?", "[2]")
    first, _, [update] = first_then_rest(answer_stream, client)
    assert FLAT in first and isinstance(update, AnswerUpdate) and update.changed
    assert update.notice == (
        "The model read the 2 statements found and chose [2] instead of [1], the search's first result shown first."
    )
    answer = answer_stream.result()
    # redrawn: the notice, then the model's pick; the first quote is gone
    assert answer.text == update.text and answer.text.startswith(update.notice + "\n\n[2] ")
    assert FLAT not in answer.text and answer.cited == [2]
    # appended (a terminal, a client that only appends): the first quote stays, the notice below it says what changed
    appended = first + update.appended
    assert appended.index(FLAT) < appended.index(update.notice) < appended.index(PID)
    assert "".join(stream(tmp_path / "again", "Is every principal ideal domain a UFD?", "[2]")[0]) == appended
    assert answer.to_dict()["shown_first"]["kept"] is False


def test_a_second_pick_is_added_below_the_first_quote(tmp_path: Path) -> None:
    answer_stream, client = stream(tmp_path, "modules", "[1] [2]")
    _, _, [update] = first_then_rest(answer_stream, client)
    assert isinstance(update, AnswerUpdate) and not update.changed and "[2] added" in update.notice
    answer = answer_stream.result()
    assert answer.text.startswith("[1] ") and PID in answer.text and answer.cited == [1, 2]
    assert update.appended.startswith(f"\n\n{update.notice}\n\n[2] ") and FLAT not in update.appended


def test_none_judged_to_answer_is_a_change_said_above_the_closest_quotes(tmp_path: Path) -> None:
    answer_stream, client = stream(tmp_path, "modules", "NONE")
    _, _, [update] = first_then_rest(answer_stream, client)
    assert isinstance(update, AnswerUpdate) and update.changed
    assert "judged that none of them answers the question; [1] was the search's first result" in update.notice
    answer = answer_stream.result()
    assert answer.status is AnswerStatus.UNSUPPORTED and answer.text.startswith(update.notice)


def test_with_the_model_down_the_first_quote_is_withdrawn_under_the_plain_notice(tmp_path: Path) -> None:
    down = "the llama.cpp server could not be started"
    answer_stream, client = stream(tmp_path, "modules", "[1]", down=down)
    first, _, [update] = first_then_rest(answer_stream, client)
    assert FLAT in first and isinstance(update, AnswerUpdate) and update.changed
    assert "not checked by it" in update.appended
    answer = answer_stream.result()
    assert answer.status is AnswerStatus.LLM_UNAVAILABLE and answer.llm_error == down
    assert answer.text == update.text and answer.text.startswith(f"The language model is not available ({down})")
    assert answer.to_dict()["shown_first"]["kept"] is None


def test_turned_off_the_answer_waits_for_the_models_choice(tmp_path: Path) -> None:
    answer_stream, _ = stream(tmp_path, "Is every principal ideal domain a UFD?", "[2]", show_first=False)
    events = list(answer_stream.events())
    assert len(events) == 1 and isinstance(events[0], str) and events[0].startswith("[2] ")
    assert answer_stream.result().to_dict()["shown_first"] is None


def test_read_without_being_shown_anything_the_answer_carries_no_update_sentence(tmp_path: Path) -> None:
    """``ask --json``, ``POST /v1/ask`` and MCP read the answer whole: no sentence about a first quote they never
    saw, and the record still says what was shown first to readers who streamed it (issue 84)."""
    for n, (question, choice) in enumerate(
        [("Is every principal ideal domain a UFD?", "[2]"), ("modules", "NONE"), ("flat modules over a field", "[1]")]
    ):
        answer = stream(tmp_path / str(n), question, choice)[0].result()
        assert "The model read" not in answer.text and "first result" not in answer.text, answer.text
        assert answer.to_dict()["shown_first"]["picked"] == [1]
        streamed = stream(tmp_path / f"streamed-{n}", question, choice)[0]
        list(streamed.events())
        if choice != "[1]":  # a change: a reader who saw the first quote is told what became of it
            assert streamed.result().text.startswith("The model read")
    assert answer.text.startswith("[1] ")
    none_answer = stream(tmp_path / "none", "modules", "NONE")[0].result()
    assert none_answer.status is AnswerStatus.UNSUPPORTED and none_answer.text.startswith(NONE_STATED)
