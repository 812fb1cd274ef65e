import pytest

from retriever.search.rank_fusion import reciprocal_rank_fusion
from retriever.types import ScoredId


def run(*ids: str) -> list[ScoredId]:
    return [ScoredId(i, 1.0) for i in ids]


def test_rrf_rewards_agreement_between_channels() -> None:
    fused = reciprocal_rank_fusion({"dense": run("a", "b"), "bm25": run("b", "d")}, k=60)
    assert [hit.id for hit in fused] == ["b", "a", "d"]
    assert fused[0].score == pytest.approx(1 / 62 + 1 / 61)


def test_rrf_weights_and_deterministic_ties() -> None:
    fused = reciprocal_rank_fusion({"dense": run("a"), "bm25": run("b")}, k=60, weights={"bm25": 2.0})
    assert [hit.id for hit in fused] == ["b", "a"]
    tie = reciprocal_rank_fusion({"x": run("z"), "y": run("m")})
    assert [hit.id for hit in tie] == ["m", "z"]


def test_linear_fusion_normalizes_each_channel_before_weighting() -> None:
    from retriever.search.rank_fusion import fuse, linear_fusion

    dense = [ScoredId("a", 0.9), ScoredId("b", 0.8), ScoredId("c", 0.7)]
    bm25 = [ScoredId("c", 30.0), ScoredId("a", 10.0)]
    fused = linear_fusion({"dense": dense, "bm25": bm25})
    scores = {hit.id: hit.score for hit in fused}
    assert scores["a"] == pytest.approx(1.0) and scores["c"] == pytest.approx(1.0)
    assert scores["b"] == pytest.approx(0.5)
    weighted = linear_fusion({"dense": dense, "bm25": bm25}, weights={"bm25": 2.0})
    assert weighted[0].id == "c"
    assert fuse({"dense": dense}, "linear") == linear_fusion({"dense": dense})
    assert fuse({"dense": dense}, "rrf") == reciprocal_rank_fusion({"dense": dense})
