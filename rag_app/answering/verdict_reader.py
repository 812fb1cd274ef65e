"""The verdict reader: what one statement settles of a question, as calibrated probabilities of five readings.

``yes`` (it proves what is asked), ``no`` (it refutes it: the opposite, or a counterexample), ``answers`` (it
answers an open question), ``related`` (same objects, does not settle: a hypothesis dropped, the converse, a
stronger conclusion) and ``unrelated``. The model is a multinomial logistic regression over
:mod:`rag_app.answering.verdict_features` (named text features and the embedding interaction), fitted on pairs
made from the corpus (:mod:`rag_app.training.verdict_pairs`) by ``rag_app.training.train_verdict``, and calibrated
by one temperature fitted on pairs it was not fitted on. It is applied here with numpy alone (scikit-learn trains,
never answers), from a JSON file that names every feature and holds the figures it was measured with.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from rag_app.answering.verdict_features import EMBEDDING_BLOCKS, TEXT_FEATURES, VerdictFeatures

LABELS: tuple[str, ...] = ("yes", "no", "answers", "related", "unrelated")
SETTLING = ("yes", "no", "answers")  # the readings in which the statement settles the question
FORMAT = "rag-app-verdict-reader"
PACKAGED = Path(__file__).resolve().parent / "verdict_weights" / "verdict-reader.json"


class VerdictWeightsError(ValueError):
    """A weights file the reader cannot apply: the file and why."""


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


@dataclass(frozen=True, slots=True)
class VerdictReader:
    """Stored weights applied to features: ``(x - mean) / scale``, then ``softmax((x W + b) / temperature)``."""

    text_features: tuple[str, ...]
    embedding_dimension: int
    mean: np.ndarray
    scale: np.ndarray
    weights: np.ndarray  # (features, labels)
    bias: np.ndarray  # (labels,)
    temperature: float = 1.0
    provenance: dict[str, Any] = field(default_factory=dict)

    def read(self, features: Sequence[VerdictFeatures]) -> list[VerdictReading]:
        if not features:
            return []
        rows = np.stack([item.vector(self.text_features) for item in features])
        if rows.shape[1] != len(self.mean):
            raise VerdictWeightsError(
                f"the features are {rows.shape[1]} wide, the weights {len(self.mean)}: another embedder's width "
                f"({self.embedding_dimension} fitted); train the reader again for this embedder"
            )
        probabilities = softmax(self.logits(rows) / self.temperature)
        return [VerdictReading(dict(zip(LABELS, map(float, row), strict=True))) for row in probabilities]

    def logits(self, rows: np.ndarray) -> np.ndarray:
        return ((rows - self.mean) / self.scale) @ self.weights + self.bias

    # ----------------------------------------------------------------- the file
    def save(self, path: Path) -> None:
        data = {
            "format": FORMAT,
            "version": 1,
            "labels": list(LABELS),
            "text_features": list(self.text_features),
            "embedding_blocks": list(EMBEDDING_BLOCKS),
            "embedding_dimension": self.embedding_dimension,
            "mean": _rounded(self.mean),
            "scale": _rounded(self.scale),
            "weights": _rounded(self.weights),
            "bias": _rounded(self.bias),
            "temperature": self.temperature,
            "provenance": self.provenance,
        }
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(data) + "\n", encoding="utf-8")

    @classmethod
    def load(cls, path: Path = PACKAGED) -> VerdictReader:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as error:
            raise VerdictWeightsError(f"{path}: cannot be read ({error})") from error
        if data.get("format") != FORMAT or tuple(data.get("labels", ())) != LABELS:
            raise VerdictWeightsError(f"{path}: not verdict reader weights for the labels {LABELS}")
        names = tuple(data.get("text_features", ()))
        unknown = [name for name in names if name not in TEXT_FEATURES]
        if unknown:
            raise VerdictWeightsError(f"{path}: fitted on the feature {unknown[0]!r}, which this version lacks")
        if tuple(data.get("embedding_blocks", ())) != EMBEDDING_BLOCKS:
            raise VerdictWeightsError(f"{path}: fitted on the embedding blocks {data.get('embedding_blocks')}")
        width = len(names) + len(EMBEDDING_BLOCKS) * int(data["embedding_dimension"])
        arrays = {key: np.asarray(data[key], dtype=np.float64) for key in ("mean", "scale", "weights", "bias")}
        if arrays["mean"].shape != (width,) or arrays["weights"].shape != (width, len(LABELS)):
            raise VerdictWeightsError(f"{path}: the weights are not {width} features by {len(LABELS)} labels")
        return cls(names, int(data["embedding_dimension"]), arrays["mean"], arrays["scale"], arrays["weights"],
                   arrays["bias"], float(data.get("temperature", 1.0)), dict(data.get("provenance", {})))  # fmt: skip


def _rounded(values: np.ndarray) -> list[Any]:
    """Six significant digits: the file stays small, and no reading changes by more than a millionth."""
    return np.vectorize(lambda value: float(f"{value:.6g}"))(values).tolist()


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
