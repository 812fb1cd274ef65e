"""The verdict's readings and their calibration: the temperature and the calibration error (units, no model)."""

from __future__ import annotations

import numpy as np
import pytest

from rag_app.answering.verdict_reader import (
    LABELS,
    VerdictReading,
    expected_calibration_error,
    fit_temperature,
    softmax,
)


def test_a_reading_is_five_probabilities_its_verdict_and_how_much_it_settles() -> None:
    reading = VerdictReading({"yes": 0.5, "no": 0.1, "answers": 0.1, "related": 0.2, "unrelated": 0.1})
    assert tuple(reading.probabilities) == LABELS and reading.verdict == "yes"
    assert reading.settles == pytest.approx(0.7)


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
