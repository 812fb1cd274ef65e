"""The learned ranker's model directory and the searcher stage that uses it."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import lightgbm
import numpy as np
import pytest

from ingestion import Source, StatementKind, StatementRecord
from retriever.models.learned_ranker import CARD, KIND, MODEL, LearnedRanker, LearnedRankerError, packaged_directory
from retriever.models.ranking_features import FEATURE_NAMES, FEATURES_VERSION, feature_matrix
from retriever.search.learned_ranking_searcher import LearnedRankingSearcher
from retriever.search_mode import SearchMode
from retriever.types import SearchHit

EMBEDDER = "packaged:all-MiniLM-L6-v2+unicode-math"
NAMES = ("Zorn's lemma", "Nakayama's lemma", "Yoneda lemma", "Schur's lemma", "Fatou's lemma", "Urysohn's lemma")


def records() -> list[StatementRecord]:
    return [
        StatementRecord(f"id{i}", Source.LOCAL, StatementKind.LEMMA, f"Statement number {i}.", "paper", name=name)
        for i, name in enumerate(NAMES)
    ]


def hits_for(found: list[StatementRecord]) -> list[SearchHit]:
    return [SearchHit(r, 1.0 - 0.1 * i, i + 1, {"dense": i + 1}, channel_scores={"dense": 0.9 - 0.1 * i})
            for i, r in enumerate(found)]  # fmt: skip


def trained_ranker() -> LearnedRanker:
    """A booster that learned "the statement whose name the query types is the answer" (whatever its rank)."""
    statements = records()
    features, labels, sizes = [], [], []
    for rotation in range(len(statements)):
        order = statements[rotation:] + statements[:rotation]
        for answer in order:
            query = answer.name.split("'")[0].split()[0]
            features.append(feature_matrix(query, hits_for(order)))
            labels.append([1.0 if r is answer else 0.0 for r in order])
            sizes.append(len(order))
    train = lightgbm.Dataset(np.concatenate(features), np.concatenate(labels), group=sizes,
                             feature_name=list(FEATURE_NAMES))  # fmt: skip
    params = {"objective": "lambdarank", "min_child_samples": 1, "min_data_in_bin": 1, "verbosity": -1,
              "num_threads": 1, "deterministic": True}  # fmt: skip
    booster = lightgbm.train(params, train, num_boost_round=20)
    card = {"kind": KIND, "identity": "test-ranker", "embedder": EMBEDDER, "first_stage": "hybrid-formula",
            "features_version": FEATURES_VERSION, "features": list(FEATURE_NAMES)}  # fmt: skip
    return LearnedRanker(booster, card)


@dataclass
class FixedFirstStage:
    """A stand-in first stage (a unit test of the composition): the records in a fixed order."""

    found: list[StatementRecord]
    calls: list[tuple[str, int, SearchMode]] = field(default_factory=list)

    def search(self, query: str, k: int, mode: SearchMode | str = SearchMode.HYBRID, where=None) -> list[SearchHit]:
        self.calls.append((query, k, SearchMode(mode)))
        return hits_for(self.found)[:k]


def test_the_top_candidates_are_reordered_and_the_rest_keeps_its_order() -> None:
    first = FixedFirstStage(records())
    searcher = LearnedRankingSearcher(first, trained_ranker(), candidates=4)  # type: ignore[arg-type]
    hits = searcher.search("Schur", k=6, mode=SearchMode.HYBRID_FORMULA)
    assert first.calls == [("Schur", 6, SearchMode.HYBRID_FORMULA)]
    assert hits[0].record.name == "Schur's lemma" and hits[0].channel_ranks["first-stage"] == 4
    assert {h.record.id for h in hits[:4]} == {"id0", "id1", "id2", "id3"}
    assert [h.record.id for h in hits[4:]] == ["id4", "id5"]  # past the candidates: the first stage's order
    assert [h.rank for h in hits] == list(range(1, 7))
    scores = [h.score for h in hits]
    assert scores == sorted(scores, reverse=True)  # run files are ordered by score
    result = searcher.run("Schur", 6, SearchMode.HYBRID_FORMULA)  # how the hits were found, with them
    assert result.timings_ms["learned_ranker"] > 0 and result.scored_by == "learned ranker"
    assert (
        len(searcher.search("Schur", k=2, mode="hybrid-formula")) == 2 and first.calls[-1][1] == 4
    )  # the candidates even for k=2


def test_only_the_mode_it_was_trained_on_is_reordered() -> None:
    first = FixedFirstStage(records())
    searcher = LearnedRankingSearcher(first, trained_ranker(), candidates=4)  # type: ignore[arg-type]
    for mode in (SearchMode.FORMULA, SearchMode.DENSE, SearchMode.BM25):
        result = searcher.run("Schur", 3, mode)
        assert [h.record.id for h in result.hits] == ["id0", "id1", "id2"]
        assert result.scored_by == "fusion" and "learned_ranker" not in result.timings_ms
        assert first.calls[-1] == ("Schur", 3, mode)
    assert searcher.search("Schur", k=3, mode="hybrid-formula")[0].record.id == "id3"


def test_saved_ranker_loads_and_scores_the_same(tmp_path: Path) -> None:
    ranker = trained_ranker()
    ranker.save(tmp_path / "ranker")
    loaded = LearnedRanker.load(str(tmp_path / "ranker"), EMBEDDER)
    hits = hits_for(records())
    assert np.allclose(loaded.scores("Yoneda", hits), ranker.scores("Yoneda", hits))
    assert loaded.identity == "test-ranker"


def test_a_ranker_for_another_embedder_or_feature_list_is_refused(tmp_path: Path) -> None:
    directory = trained_ranker().save(tmp_path / "ranker")
    with pytest.raises(LearnedRankerError, match=r"trained for the embedder .*train ranker"):
        LearnedRanker.load(str(directory), "packaged:all-mpnet-base-v2")
    card = json.loads((directory / CARD).read_text())
    card["features"] = card["features"][:-1]
    (directory / CARD).write_text(json.dumps(card))
    with pytest.raises(LearnedRankerError, match="another feature list"):
        LearnedRanker.load(str(directory), EMBEDDER)


def test_missing_or_damaged_rankers_name_the_directory_and_the_command(tmp_path: Path) -> None:
    with pytest.raises(LearnedRankerError, match=r"missing .*rag-app train ranker"):
        LearnedRanker.load(str(tmp_path / "nowhere"))
    directory = trained_ranker().save(tmp_path / "ranker")
    (directory / MODEL).write_text("not a model")
    with pytest.raises(LearnedRankerError, match=f"{directory}: unreadable"):
        LearnedRanker.load(str(directory))
    # `auto` gives no ranker for an embedder none was trained for; `none` gives none
    assert LearnedRanker.configured("auto", "packaged:no-such-model") is None
    assert LearnedRanker.configured("none", EMBEDDER) is None


def test_the_packaged_ranker_fits_the_default_embedder() -> None:
    assert (packaged_directory(EMBEDDER) / MODEL).is_file()
    ranker = LearnedRanker.configured("auto", EMBEDDER)
    assert ranker is not None and ranker.card["metrics"]["held_out"]["queries"] > 0


def test_hidden_features_are_read_as_missing() -> None:
    # The ranker learned the name match; hiding the name features leaves it nothing to find Schur's lemma by.
    first = FixedFirstStage(records())
    ranker = trained_ranker()
    assert LearnedRankingSearcher(first, ranker, 6).search("Schur", 6, "hybrid-formula")[0].record.id == "id3"  # type: ignore[arg-type]
    hidden = ("query_in_name", "name_covered")
    blind = LearnedRankingSearcher(first, ranker, 6, hidden_features=hidden)  # type: ignore[arg-type]
    assert blind.search("Schur", 6, "hybrid-formula")[0].record.id != "id3"
    with pytest.raises(LearnedRankerError, match="no feature 'query_in_nme'"):
        ranker.scores("Schur", hits_for(records()), hidden=("query_in_nme",))
