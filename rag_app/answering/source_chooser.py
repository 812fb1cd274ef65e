"""Which source the answer leads with, and whether any of them answers: a learned, calibrated choice.

Measured on research questions written apart from the project, the packaged model's pick of a statement was worse
than the search's first result, and its "none of them answers" was wrong about half the time. The chooser reads
every signal the answer holds without a model call (:mod:`rag_app.answering.source_features`) and gives each
source the probability that it answers the question: a logistic regression fitted by ``rag-app train chooser`` on
the tuning halves of the project's question and claim sets (split by statement), its weights stored as JSON and
applied here with numpy.

Two thresholds come with the weights, set on cross-validated probabilities of the tuning halves:

- ``notice_below``: where no source reaches it, the answer says that none was judged to answer (calibrated so
  that, where the notice is shown, a source that answers was among them at most 1 time in 10);
- ``check_below``: a yes/no lead-in asks the reader to check the quote against the question only where the quoted
  source's probability is under it (calibrated so that at most 1 such "Check" in 10 stands above a statement
  that answers).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from rag_app.answering.source_features import FEATURE_NAMES, SourceFeatures

PACKAGED = Path(__file__).parent / "chooser_weights" / "source-chooser.json"


class SourceChooserError(ValueError):
    """A chooser's weights that cannot be read or do not fit the features computed here."""


@dataclass(frozen=True, slots=True)
class SourceChoice:
    """The chooser's reading of one answer's sources: each one's probability of answering (search order), the
    source numbers best first, and whether the best is taken to answer (else the notice)."""

    probabilities: tuple[float, ...]
    order: tuple[int, ...]  # source numbers from 1, most probable first (ties: the search's order)
    answers: bool
    doubtful: tuple[bool, ...]  # per source: under ``check_below`` (a yes/no lead-in asks the reader to check)
    features: SourceFeatures | None = None  # what the chooser read (benchmarks record it for training)

    @property
    def first(self) -> int:
        return self.order[0]

    def probability(self, number: int) -> float:
        return self.probabilities[number - 1]

    def to_dict(self) -> dict[str, Any]:
        return {
            "probabilities": [round(p, 4) for p in self.probabilities],
            "order": list(self.order),
            "answers": self.answers,
        }


@dataclass(frozen=True, slots=True)
class SourceChooser:
    """A fitted logistic regression over :data:`FEATURE_NAMES` (standardized), with its two thresholds."""

    names: tuple[str, ...]
    mean: np.ndarray
    scale: np.ndarray
    coef: np.ndarray
    intercept: float
    notice_below: float
    check_below: float
    provenance: dict[str, Any]

    def probabilities(self, features: SourceFeatures) -> np.ndarray:
        return self.of_matrix(features.matrix)

    def of_matrix(self, matrix: np.ndarray) -> np.ndarray:
        """The probabilities of rows of :data:`FEATURE_NAMES` (all of them, in that order)."""
        if len(matrix) == 0:
            return np.zeros(0)
        columns = [FEATURE_NAMES.index(name) for name in self.names]
        x = (np.asarray(matrix, np.float64)[:, columns] - self.mean) / self.scale
        return 1.0 / (1.0 + np.exp(-(x @ self.coef + self.intercept)))

    def choose(self, features: SourceFeatures) -> SourceChoice:
        """The sources best first; "answers" where the best reaches ``notice_below``."""
        p = self.probabilities(features)
        order = tuple(int(i) + 1 for i in sorted(range(len(p)), key=lambda i: (-p[i], i)))
        best = float(p.max()) if len(p) else 0.0
        doubtful = tuple(bool(v < self.check_below) for v in p)
        return SourceChoice(tuple(float(v) for v in p), order, best >= self.notice_below, doubtful, features)

    # ---- stored as JSON (no pickle: the weights are data anyone can read)

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": "rag-app-source-chooser",
            "version": 1,
            "features": list(self.names),
            "mean": self.mean.tolist(),
            "scale": self.scale.tolist(),
            "coef": self.coef.tolist(),
            "intercept": self.intercept,
            "notice_below": self.notice_below,
            "check_below": self.check_below,
            "provenance": self.provenance,
        }

    def save(self, path: Path) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.to_dict(), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        return path

    @classmethod
    def from_dict(cls, data: dict[str, Any], where: str = "the chooser") -> SourceChooser:
        if data.get("format") != "rag-app-source-chooser":
            raise SourceChooserError(f"{where}: not a source chooser (format {data.get('format')!r})")
        names = tuple(data.get("features") or ())
        unknown = [name for name in names if name not in FEATURE_NAMES]
        if unknown:
            raise SourceChooserError(f"{where}: features this version does not compute: {', '.join(unknown)}")
        lacking = [name for name in FEATURE_NAMES if name not in names]
        if lacking:
            raise SourceChooserError(f"{where}: lacks the features {', '.join(lacking)}; train it again "
                                     "(rag-app train chooser)")  # fmt: skip
        try:
            arrays = [np.asarray(data[key], np.float64) for key in ("mean", "scale", "coef")]
            numbers = [float(data[key]) for key in ("intercept", "notice_below", "check_below")]
        except (KeyError, TypeError, ValueError) as error:
            raise SourceChooserError(f"{where}: a missing or malformed field ({error})") from error
        if any(array.shape != (len(names),) for array in arrays):
            raise SourceChooserError(f"{where}: mean, scale and coef must each hold {len(names)} numbers")
        mean, scale, coef = arrays
        intercept, notice_below, check_below = numbers
        return cls(
            names, mean, np.where(scale > 0, scale, 1.0), coef, intercept, notice_below, check_below,
            dict(data.get("provenance", {})),
        )  # fmt: skip

    @classmethod
    def load(cls, spec: str | Path = "packaged") -> SourceChooser:
        """``"packaged"`` (the weights shipped with the app) or the path of a JSON file ``train chooser`` wrote."""
        path = PACKAGED if str(spec) == "packaged" else Path(spec).expanduser()
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as error:
            raise SourceChooserError(f"cannot read the source chooser {path}: {error}") from error
        return cls.from_dict(data, str(path))
