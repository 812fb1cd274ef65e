"""Fitting the learned chooser: only the tuning halves, thresholds from out-of-fold probabilities."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from rag_app.answering.source_chooser import SourceChooser
from rag_app.answering.source_features import FEATURE_NAMES
from rag_app.cli import app
from rag_app.training.train_source_chooser import ChooserRowsError, read_rows, train

COSINE = FEATURE_NAMES.index("cosine")
FIRST = FEATURE_NAMES.index("first")


def write_rows(path: Path, questions: int = 120, seed: int = 0) -> Path:
    """Questions whose answering source is the one of highest cosine (at rank 1 or 2), or none at all."""
    rng = np.random.default_rng(seed)
    lines = [json.dumps({"features": list(FEATURE_NAMES)})]
    for n in range(questions):
        features = np.zeros((4, len(FEATURE_NAMES)))
        features[0, FIRST] = 1.0
        features[:, COSINE] = rng.uniform(0.1, 0.4, 4)
        labels = [False] * 4
        if n % 4:  # three questions in four have an answer among the sources: clearly the closest one
            answer = int(rng.integers(0, 2))
            features[answer, COSINE] = 0.9
            labels[answer] = True
        side = "tune" if n % 3 else "untouched"
        row = {"set": "s", "qid": f"q{n}", "side": side, "group": f"g{n}", "features": features.tolist(),
               "labels": labels, "check": [True] * 4}  # fmt: skip
        lines.append(json.dumps(row))
    path.write_text("\n".join(lines) + "\n")
    return path


def test_the_chooser_learns_the_signal_and_sets_calibrated_thresholds(tmp_path: Path) -> None:
    chooser, provenance = train(write_rows(tmp_path / "rows.jsonl"), tmp_path / "chooser.json")
    assert isinstance(SourceChooser.load(tmp_path / "chooser.json"), SourceChooser)
    figures = provenance["cross-validated (5 folds by statement)"]
    assert figures["questions"] == 80, "only the tuning half is fitted on"
    assert figures["chooser's first answers (no notice)"] > figures["first result answers"]
    assert figures["notices"] > 0 and figures["notices wrong"] <= 0.1 * figures["notices"]
    assert 0.0 < chooser.notice_below < 1.0 and 0.0 < chooser.check_below < 1.0
    ranked = np.zeros((2, len(FEATURE_NAMES)))
    ranked[:, COSINE] = (0.2, 0.9)
    p = chooser.of_matrix(ranked)
    assert p[1] > p[0]


def test_rows_of_another_feature_list_or_broken_lines_are_refused_with_where(tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl"
    path.write_text(json.dumps({"features": ["first"]}) + "\n")
    with pytest.raises(ChooserRowsError, match=r"rows\.jsonl:1"):
        read_rows(path)
    write_rows(path, questions=3)
    path.write_text(path.read_text() + '{"set": "s"}\n')
    with pytest.raises(ChooserRowsError, match=r"rows\.jsonl:5"):
        read_rows(path)


def test_cli_train_chooser_writes_the_weights_and_exits_2_on_bad_rows(tmp_path: Path) -> None:
    runner = CliRunner()
    out = tmp_path / "chooser.json"
    rows = write_rows(tmp_path / "r.jsonl")
    result = runner.invoke(app, ["train", "chooser", "--rows", str(rows), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert out.exists() and "notice" in result.output
    bad = tmp_path / "bad.jsonl"
    bad.write_text("")
    result = runner.invoke(app, ["train", "chooser", "--rows", str(bad), "--out", str(out)])
    assert result.exit_code == 2 and "empty" in result.output
