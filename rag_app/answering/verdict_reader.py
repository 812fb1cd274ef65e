"""What one statement settles of a question, as calibrated probabilities of five readings.

``yes`` (it proves what is asked), ``no`` (it refutes it: the opposite, or a counterexample), ``answers`` (it
answers an open question), ``related`` (same objects, does not settle: a hypothesis dropped, the converse, a
stronger conclusion) and ``unrelated``. The reader that gives them is the verdict cross-encoder
(:mod:`rag_app.answering.verdict_cross_encoder`); here are the readings, the softmax, the temperature that
calibrates them and the calibration error they are measured by.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

LABELS: tuple[str, ...] = ("yes", "no", "answers", "related", "unrelated")
SETTLING = ("yes", "no", "answers")  # the readings in which the statement settles the question


@dataclass(frozen=True, slots=True)
class VerdictReading:
    """The probabilities of the five readings (they sum to one)."""

    probabilities: dict[str, float]

    @property
    def verdict(self) -> str:
        return max(self.probabilities, key=self.probabilities.__getitem__)

    @property
    def settles(self) -> float:
        """The probability that the statement settles the question (yes, no, or answers it)."""
        return sum(self.probabilities[label] for label in SETTLING)


def softmax(logits: np.ndarray) -> np.ndarray:
    shifted = logits - logits.max(axis=1, keepdims=True)
    exp = np.exp(shifted)
    return exp / exp.sum(axis=1, keepdims=True)


def fit_temperature(logits: np.ndarray, labels: np.ndarray) -> float:
    """The temperature that minimises the negative log-likelihood of ``labels`` (indices) under ``logits``: one
    number, fitted on pairs the weights were not fitted on, so the probabilities mean what they say."""
    grid = np.exp(np.linspace(np.log(0.2), np.log(10.0), 200))
    losses = [-np.mean(np.log(softmax(logits / t)[np.arange(len(labels)), labels] + 1e-12)) for t in grid]
    return float(grid[int(np.argmin(losses))])


def expected_calibration_error(confidence: np.ndarray, correct: np.ndarray, bins: int = 10) -> float:
    """The mean gap between stated confidence and accuracy over equal-width bins, weighted by their size."""
    edges = np.linspace(0.0, 1.0, bins + 1)
    error = 0.0
    for low, high in itertools.pairwise(edges):
        inside = (confidence > low) & (confidence <= high) if low > 0 else (confidence >= low) & (confidence <= high)
        if inside.any():
            error += inside.mean() * abs(float(confidence[inside].mean()) - float(correct[inside].mean()))
    return float(error)
