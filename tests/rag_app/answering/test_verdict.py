"""The answer's verdict (issue 100): the policy file, the decision, the stage and the reader's model directory;
units, no model weights."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ingestion.records import StatementKind
from rag_app.answering.verdict import (
    INPUT_NAMES,
    NOTHING_ANSWERS,
    AnswerVerdict,
    VerdictPolicy,
    VerdictPolicyError,
    decide,
    inputs_of,
)
from rag_app.answering.verdict_cross_encoder import VerdictCrossEncoder, VerdictModelError
from rag_app.answering.verdict_reader import LABELS, VerdictReading
from rag_app.answering.verdict_stage import VerdictStage
from rag_app.settings.answering import VerdictSettings
from tests.rag_app.answering.answer_helpers import verdict_policy

policy = verdict_policy  # confidence = sigmoid(4 * (chooser_first - 0.5)): the chooser alone, set by a test


def reading(**probabilities: float) -> VerdictReading:
    rest = (1.0 - sum(probabilities.values())) / (len(LABELS) - len(probabilities))
    return VerdictReading({label: probabilities.get(label, rest) for label in LABELS})


def test_a_proving_statement_of_a_yes_no_question_is_said_yes_and_a_refuting_one_is_quoted_first_under_no() -> None:
    proves, refutes = reading(yes=0.9, related=0.05), reading(no=0.85, related=0.1)
    said = decide(policy(), [proves, reading(related=0.9)], (1, 2), (0.9, 0.1), 0.7, yes_no=True)
    assert said.verdict is AnswerVerdict.YES and said.lead_in == "Yes, as [1] states:" and said.order == (1, 2)
    refuted = decide(policy(), [reading(related=0.9), refutes], (1, 2), (0.9, 0.4), 0.7, yes_no=True,
                     kinds=[StatementKind.LEMMA, StatementKind.EXAMPLE])  # fmt: skip
    assert refuted.verdict is AnswerVerdict.NO and refuted.order == (2, 1)
    assert refuted.lead_in == "No: [2] gives a counterexample:"
    # the same readings for a question that does not ask yes or no: neither word is said
    assert decide(policy(), [proves], (1,), (0.9,), 0.7, yes_no=False).verdict is AnswerVerdict.ANSWERS


def test_doubt_is_said_below_the_thresholds_and_nothing_found_below_the_lowest() -> None:
    settles = reading(yes=0.95)
    unsure = decide(policy(), [settles], (1,), (0.55,), 0.7, yes_no=False)
    assert unsure.verdict is AnswerVerdict.UNSURE
    assert unsure.lead_in == "[1] is the closest statement found; it may not answer the question:"
    assert 0.2 < unsure.confidence < 0.6
    nothing = decide(policy(), [settles, settles], (2, 1), (0.1, 0.05), 0.7, yes_no=True)
    assert nothing.verdict is AnswerVerdict.NOT_FOUND and nothing.lead_in == NOTHING_ANSWERS
    assert nothing.order == (2, 1)  # the closest are quoted in the chooser's order
    assert decide(policy(), [], (), (), None, yes_no=False).confidence is None


def test_the_inputs_are_read_of_the_first_quote_and_the_best_other() -> None:
    readings = [reading(yes=0.1, unrelated=0.6), reading(answers=0.7)]
    inputs = inputs_of(1, readings, (0.3, 0.6), 0.42, yes_no=True)
    assert inputs.chooser_first == 0.3 and inputs.reader_unrelated_first == pytest.approx(0.6)
    assert inputs.reader_settles_other == pytest.approx(readings[1].settles) and inputs.asks_yes_no == 1.0


def test_a_policy_file_round_trips_and_one_naming_an_unknown_input_fails_with_the_file(tmp_path: Path) -> None:
    path = policy().save(tmp_path / "policy.json")
    assert VerdictPolicy.load(path) == policy()
    data = json.loads(path.read_text())
    data["names"] = [*data["names"][:-1], "question_mood"]
    path.write_text(json.dumps(data))
    with pytest.raises(VerdictPolicyError, match=r"policy\.json: inputs this version does not compute: question_mood"):
        VerdictPolicy.load(path)
    data["names"] = list(INPUT_NAMES[:-1])
    path.write_text(json.dumps(data))
    with pytest.raises(VerdictPolicyError, match=f"lacks the inputs {INPUT_NAMES[-1]}"):
        VerdictPolicy.load(path)
    path.write_text(json.dumps({"format": "rag-app-verdict-policy", "names": list(INPUT_NAMES)}))
    with pytest.raises(VerdictPolicyError, match="missing or malformed"):
        VerdictPolicy.load(path)


def test_a_missing_or_foreign_model_directory_says_how_to_build_one(tmp_path: Path) -> None:
    with pytest.raises(VerdictModelError, match="train_verdict"):
        VerdictCrossEncoder(tmp_path)
    (tmp_path / "card.json").write_text(json.dumps({"kind": "cross-encoder-lora", "labels": ["relevant"]}))
    with pytest.raises(VerdictModelError, match="not a verdict model"):
        VerdictCrossEncoder(tmp_path)


def test_the_stage_is_off_by_setting_and_reads_on_the_device_it_is_given(monkeypatch, tmp_path: Path) -> None:
    assert VerdictStage.of(VerdictSettings(reader="off")) is None
    card = {"kind": "verdict-cross-encoder", "labels": list(LABELS), "base_model": "packaged:all-MiniLM-L6-v2"}
    (tmp_path / "adapter").mkdir()
    (tmp_path / "adapter" / "adapter_config.json").write_text("{}")
    (tmp_path / "card.json").write_text(json.dumps({**card, "temperature": 2.0}))
    policy().save(tmp_path / "policy.json")
    settings = VerdictSettings(reader=str(tmp_path), policy=str(tmp_path / "policy.json"), device="cuda")
    stage = VerdictStage.of(settings, device="cpu")
    assert stage is not None and stage.reader.device == "cuda"  # the GPU route: answers.verdict.device

    class Predicting:  # what the loaded CrossEncoder offers: logits of the five readings
        def predict(self, pairs, **_: object):
            import numpy as np

            return np.array([[4.0, 0.0, 0.0, 0.0, 0.0]] * len(pairs))

    monkeypatch.setattr(VerdictCrossEncoder, "_load", lambda self: Predicting())
    (read,) = stage.reader.readings("Is it?", [_record()])
    assert read.verdict == "yes" and read.probabilities["yes"] < 0.9  # the temperature softens the logits


def _record():
    from ingestion.records import Source, StatementRecord

    return StatementRecord("p#l", Source.ARXIV, StatementKind.LEMMA, "Every ideal is finitely generated.", "p")


def test_the_yes_no_rules_settings_of_an_old_file_are_read_with_a_warning_and_ignored() -> None:
    from rag_app.settings import QuoteSettings

    with pytest.warns(UserWarning, match=r"answers\.quote\.counterexample_search, answers\.quote\.yes_no_method: no "):
        quote = QuoteSettings(yes_no_method="model", counterexample_search=True, max_quotes=3)
    assert quote.max_quotes == 3 and not hasattr(quote, "yes_no_method")
