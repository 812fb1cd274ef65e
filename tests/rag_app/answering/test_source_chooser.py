"""The learned chooser: its stored weights, its probabilities, the notice and the Check thresholds."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from ingestion.records import Source, StatementKind, StatementRecord
from rag_app.answering.source_chooser import PACKAGED, SourceChooser, SourceChooserError
from rag_app.answering.source_features import FEATURE_NAMES, SourceFeatures
from retriever.types import SearchHit


def chooser(weights: dict[str, float], intercept: float = 0.0, notice: float = 0.2, check: float = 0.5):
    coef = np.array([weights.get(name, 0.0) for name in FEATURE_NAMES])
    zeros, ones = np.zeros(len(FEATURE_NAMES)), np.ones(len(FEATURE_NAMES))
    return SourceChooser(FEATURE_NAMES, zeros, ones, coef, intercept, notice, check, {})


def features(cosines: list[float]) -> SourceFeatures:
    hits = [
        SearchHit(StatementRecord(f"s{n}", Source.ARXIV, StatementKind.LEMMA, f"Statement {n}.", "p"), 1.0, n)
        for n in range(1, len(cosines) + 1)
    ]
    return SourceFeatures.of("a question", hits, cosines, learned_scores=True)


def test_the_most_probable_source_leads_and_ties_keep_the_search_order() -> None:
    by_cosine = chooser({"cosine": 10.0})
    choice = by_cosine.choose(features([0.2, 0.9, 0.5]))
    assert choice.order == (2, 3, 1) and choice.first == 2 and choice.answers
    assert choice.probability(2) == max(choice.probabilities)
    tie = chooser({}).choose(features([0.5, 0.5]))
    assert tie.order == (1, 2), "equal probabilities: the search's order"


def test_the_notice_where_no_source_is_likely_enough_and_doubt_under_the_check_threshold() -> None:
    unlikely = chooser({}, intercept=-5.0, notice=0.2, check=0.5).choose(features([0.3, 0.3]))
    assert not unlikely.answers and unlikely.doubtful == (True, True)
    likely = chooser({}, intercept=5.0, notice=0.2, check=0.5).choose(features([0.3]))
    assert likely.answers and likely.doubtful == (False,)
    assert likely.to_dict()["answers"] is True


def test_weights_round_trip_through_json_and_bad_files_say_why(tmp_path: Path) -> None:
    original = chooser({"cosine": 2.0, "first": 1.0}, intercept=-1.0)
    path = original.save(tmp_path / "chooser.json")
    loaded = SourceChooser.load(path)
    assert np.allclose(loaded.of_matrix(features([0.4, 0.8]).matrix), original.of_matrix(features([0.4, 0.8]).matrix))
    data = json.loads(path.read_text())
    data["features"] = ["first", "telepathy"]
    path.write_text(json.dumps(data))
    with pytest.raises(SourceChooserError, match="telepathy"):
        SourceChooser.load(path)
    with pytest.raises(SourceChooserError, match="cannot read"):
        SourceChooser.load(tmp_path / "missing.json")
    data = original.to_dict()
    for key in ("features", "mean", "scale", "coef"):  # fitted before "verdict_only_if" was read: refused by name
        data[key] = data[key][:-1]
    path.write_text(json.dumps(data))
    with pytest.raises(SourceChooserError, match="lacks the features verdict_only_if; train it again"):
        SourceChooser.load(path)
    data = original.to_dict()
    del data["intercept"]
    path.write_text(json.dumps(data))
    with pytest.raises(SourceChooserError, match="missing or malformed"):
        SourceChooser.load(path)


def test_the_packaged_chooser_loads_and_its_thresholds_are_probabilities() -> None:
    packaged = SourceChooser.load("packaged")
    assert PACKAGED.exists() and set(packaged.names) <= set(FEATURE_NAMES)
    assert 0.0 <= packaged.notice_below <= 1.0 and 0.0 <= packaged.check_below <= 1.0
    assert "cross-validated (5 folds by statement)" in packaged.provenance
