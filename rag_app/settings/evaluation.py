"""Settings of `rag-app eval`: where the corpora and sets are, and where reports go."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, Field


def default_shared_dir() -> Path:
    """``../shared`` beside the checkout: third-party corpora for tests and development sets."""
    return Path(__file__).resolve().parents[3] / "shared"


class EvaluationSettings(BaseModel):
    shared_dir: Path = Field(default_factory=default_shared_dir, description="root of corpora named by query sets")
    index_dir: Path | None = Field(
        None, description="index of the development corpus; unset: DATA_DIR/eval/index/EMBEDDER, one per embedder"
    )
    out_dir: Path = Field(Path("eval/runs/latest"), description="where eval writes its reports and runs")
    sets_dir: Path = Field(Path("eval/sets"), description="where eval --dev builds the development sets")
    k: int | None = Field(None, ge=1, le=1000, description="results per query; unset: 1000 for ARQMath, else 100")
    resamples: int = Field(10_000, ge=100, description="sign flips in the paired randomization test")
