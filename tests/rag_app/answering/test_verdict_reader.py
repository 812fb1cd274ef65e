"""The verdict reader's features, weights file and calibration (issue 100); units, no model."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from rag_app.answering.verdict_features import TEXT_FEATURES, pair_features, text_features
from rag_app.answering.verdict_reader import (
    LABELS,
    VerdictReader,
    VerdictWeightsError,
    expected_calibration_error,
    fit_temperature,
    softmax,
)

STATEMENT = "Let $R$ be a Noetherian ring. Then every ideal of $R$ is finitely generated."


def test_the_text_features_read_the_two_texts_by_name() -> None:
    asked = text_features("Is every ideal of a Noetherian ring $R$ finitely generated?", STATEMENT, "lemma", 0.8)
    assert set(asked) == set(TEXT_FEATURES)
    assert asked["question_is_yes_no"] == 1.0 and asked["question_is_open"] == 0.0
    assert asked["question_topic_in_statement"] > 0.7 and asked["question_latex_in_statement"] == 1.0
    denied = text_features("Can an ideal of a Noetherian ring fail to be finitely generated?", STATEMENT, "lemma", 0.8)
    assert denied["question_negates"] == 1.0 and denied["negation_differs"] == 1.0
    opened = text_features("Which ideals of a Noetherian ring are finitely generated?", STATEMENT, "definition", 0.5)
    assert opened["question_is_open"] == 1.0 and opened["statement_is_definition"] == 1.0


def reader(width: int = 4, text: tuple[str, ...] = TEXT_FEATURES) -> VerdictReader:
    size = len(text) + 2 * width
    rng = np.random.default_rng(0)
    return VerdictReader(text, width, np.zeros(size), np.ones(size), rng.normal(size=(size, len(LABELS))),
                         np.zeros(len(LABELS)), 1.5, {"note": "test"})  # fmt: skip


def test_a_reading_is_five_probabilities_and_the_file_round_trips(tmp_path: Path) -> None:
    features = pair_features("Is every ideal finitely generated?", np.ones(4), STATEMENT, "lemma", np.arange(4.0))
    original = reader()
    [reading] = original.read([features])
    assert set(reading.probabilities) == set(LABELS) and sum(reading.probabilities.values()) == pytest.approx(1.0)
    assert reading.verdict in LABELS and 0.0 <= reading.settles <= 1.0
    original.save(tmp_path / "reader.json")
    again = VerdictReader.load(tmp_path / "reader.json")
    [read_again] = again.read([features])
    assert read_again.probabilities == pytest.approx(reading.probabilities, abs=1e-5)  # six digits are kept
    assert again.provenance == {"note": "test"}


def test_a_weights_file_that_names_a_feature_this_version_lacks_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "reader.json"
    reader().save(path)
    data = json.loads(path.read_text())
    data["text_features"][0] = "share_of_green_words"
    path.write_text(json.dumps(data))
    with pytest.raises(VerdictWeightsError, match="share_of_green_words"):
        VerdictReader.load(path)
    data["text_features"][0] = TEXT_FEATURES[0]
    data["weights"] = data["weights"][:-1]
    path.write_text(json.dumps(data))
    with pytest.raises(VerdictWeightsError, match="features by 5 labels"):
        VerdictReader.load(path)


def test_features_of_another_embedders_width_are_refused() -> None:
    features = pair_features("Is it?", np.ones(8), STATEMENT, "lemma", np.ones(8))
    with pytest.raises(VerdictWeightsError, match="another embedder"):
        reader(width=4).read([features])


def test_the_temperature_fitted_undoes_overconfident_logits_and_calibration_error_shows_it() -> None:
    rng = np.random.default_rng(1)
    true_logits = rng.normal(size=(4000, len(LABELS))) * 1.5
    labels = np.array([rng.choice(len(LABELS), p=row) for row in softmax(true_logits)])
    temperature = fit_temperature(true_logits * 3.0, labels)  # three times too sure
    assert temperature == pytest.approx(3.0, rel=0.15)
    confident = softmax(true_logits * 3.0).max(axis=1)
    calibrated = softmax(true_logits * 3.0 / temperature).max(axis=1)
    correct = (softmax(true_logits * 3.0).argmax(axis=1) == labels).astype(float)
    assert expected_calibration_error(calibrated, correct) < 0.03 < expected_calibration_error(confident, correct)
