"""`train ranker` on the demo index: LambdaMART over the first stage's candidates, a card, a cache."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from rag_app.cli import app
from rag_app.pipeline import MathRAG
from rag_app.settings import Settings
from rag_app.settings.training import RankerTrainingSettings
from rag_app.training.train_ranker import FEATURES_FILE, SOURCE_FIELD_FEATURES, QueryGroups, TrainRankerJob
from retriever.models.learned_ranker import LearnedRanker
from retriever.models.ranking_features import FEATURE_NAMES
from tests.conftest import make_settings

# Trains, starts a server or browser, or reads real corpora: out of the fast tier.
pytestmark = pytest.mark.slow


def small_settings(tmp_path: Path, index_dir: Path) -> Settings:
    settings = make_settings(tmp_path, index_dir=index_dir)
    settings.training.ranker.max_queries_per_kind = 40
    settings.training.ranker.trees = 20
    settings.training.ranker.min_child_samples = 5
    return settings


@pytest.fixture(scope="module")
def trained(demo_index_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Settings, TrainRankerJob, Any]:
    """One ranker trained on the demo index, for the tests that read it (training is most of their time)."""
    tmp_path = tmp_path_factory.mktemp("ranker")
    settings = small_settings(tmp_path, demo_index_dir)
    job = TrainRankerJob(settings, demo_index_dir, tmp_path / "ranker")
    return settings, job, job.run(log=lambda _m: None)


def test_trained_ranker_has_a_card_hides_the_source_field_and_reuses_its_features(
    trained: tuple[Settings, TrainRankerJob, Any],
) -> None:
    settings, job, report = trained
    assert not report.reused_features and sum(report.queries.values()) > 10
    assert "section" in report.queries and "label" in report.queries
    ranker = LearnedRanker.load(str(report.directory), MathRAG(settings).index.embedder.identity)
    card = ranker.card
    assert card["features"] == list(FEATURE_NAMES) and card["first_stage"] == "hybrid-formula"
    held_out = card["metrics"]["held_out"]
    assert held_out["queries"] > 0 and 0 <= held_out["ranker"]["mrr@10"] <= 1
    assert card["cost"]["trees"] >= 1 and card["cost"]["seconds_fit"] >= 0

    # the field a query was copied from is missing in its rows; other fields are not
    groups = QueryGroups.load(job.work_dir / FEATURES_FILE)
    found_kinds = [kind for kind, found in zip(groups.kinds, groups.found, strict=True) if found]
    start = 0
    for kind, size in zip(found_kinds, groups.sizes, strict=True):
        rows = groups.features[start : start + size]
        start += size
        for name in SOURCE_FIELD_FEATURES.get(kind, ()):
            assert np.isnan(rows[:, FEATURE_NAMES.index(name)]).all(), (kind, name)
        if kind == "label":
            assert not np.isnan(rows[:, FEATURE_NAMES.index("query_in_name")]).any()
    ends = np.cumsum(groups.sizes)
    assert all(groups.labels[end - size : end].any() for end, size in zip(ends, groups.sizes, strict=True))

    again = job.run(log=lambda _m: None)  # the same corpus and settings: the features are reused
    assert again.reused_features
    assert again.ranker.booster.model_to_string() == ranker.booster.model_to_string()


def test_the_trained_ranker_orders_a_search_and_an_evaluation_run(
    trained: tuple[Settings, TrainRankerJob, Any],
) -> None:
    settings = trained[0].model_copy(deep=True)
    settings.ranker.model = str(trained[2].directory)
    rag = MathRAG(settings)
    hits = rag.search("Fatou's lemma", k=5)
    assert len(hits) == 5 and all("first-stage" in hit.channel_ranks for hit in hits)
    assert [hit.rank for hit in hits] == [1, 2, 3, 4, 5]
    assert not any(math.isnan(hit.score) for hit in hits)
    searcher, _mode = rag.search_stack.for_run_name("hybrid-formula+ltr")
    assert searcher.search("Fatou's lemma", 5)[0].record.id == hits[0].record.id


def test_cli_trains_and_prints_json(
    demo_index_dir: Path, trained: tuple[Settings, TrainRankerJob, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RAG_APP_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("RAG_APP_INGESTION__ISOLATE_PAPERS", "false")
    monkeypatch.setenv("RAG_APP_TRAINING__RANKER__TREES", "10")
    monkeypatch.setenv("RAG_APP_TRAINING__RANKER__MIN_CHILD_SAMPLES", "5")
    # The features of the same queries over the same index, as a rerun finds them (the fixture's): the
    # command reuses them, so this test costs a fit, not a second extraction.
    work_dir = trained[1].work_dir
    shutil.copytree(work_dir, tmp_path / "data" / work_dir.relative_to(trained[0].data_dir))
    out = tmp_path / "cli-ranker"
    result = CliRunner().invoke(
        app, ["train", "ranker", "--index", str(demo_index_dir), "--out", str(out), "--max-queries", "40", "--json"]
    )
    assert result.exit_code == 0, result.output
    assert "reusing the features" in result.output
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert summary["directory"] == str(out) and summary["published"] is None
    assert summary["held_out"]["queries"] > 0 and summary["cost"]["trees"] >= 1
    missing = CliRunner().invoke(app, ["train", "ranker", "--index", str(tmp_path / "no-index"), "--json"])
    assert missing.exit_code == 2 and "error:" in missing.output


def test_kind_weights_refit_on_the_same_features_and_must_name_a_training_kind(
    trained: tuple[Settings, TrainRankerJob, Any], tmp_path: Path
) -> None:
    settings, job, report = trained
    weighted = settings.model_copy(deep=True)
    weighted.training.ranker.kind_weights = {"label": 0.05}
    refit = TrainRankerJob(weighted, job.index_dir, tmp_path / "weighted").run(log=lambda _m: None)
    assert refit.reused_features  # a weight changes the loss, not a query's candidates or features
    assert refit.ranker.booster.model_to_string() != report.ranker.booster.model_to_string()
    assert refit.ranker.card["training"]["kind_weights"] == {"label": 0.05}
    with pytest.raises(ValueError, match="names no training query kind: slogan"):
        RankerTrainingSettings(kind_weights={"slogan": 0.5})
    with pytest.raises(ValueError, match="must not be negative"):
        RankerTrainingSettings(kind_weights={"question": -1})


def test_a_ranker_trained_with_the_citing_sentences_reads_them_in_a_search(
    demo_index_dir: Path, tmp_path: Path
) -> None:
    from retriever.models.ranking_features import CITING_FEATURE_NAMES

    settings = small_settings(tmp_path, demo_index_dir)
    settings.training.ranker.citing_features = True
    report = TrainRankerJob(settings, demo_index_dir, tmp_path / "citing-ranker").run(log=lambda _m: None)
    assert report.ranker.card["features"] == [*FEATURE_NAMES, *CITING_FEATURE_NAMES]
    groups = QueryGroups.load(settings.data_dir / "training" / "ranker" / settings.training.ranker.name / FEATURES_FILE)
    cited = groups.features[:, len(FEATURE_NAMES)]  # citing_log: the demo's statements cite each other
    assert groups.features.shape[1] == len(FEATURE_NAMES) + len(CITING_FEATURE_NAMES) and (cited > 0).any()
    settings.ranker.model = str(report.directory)
    rag = MathRAG(settings)
    ranker = LearnedRanker.load(str(report.directory), rag.index.embedder.identity)
    assert ranker.citing_features and not ranker.graph_features
    hits = rag.search("bounded entire function is constant", k=3)
    assert len(hits) == 3 and all("first-stage" in hit.channel_ranks for hit in hits)
