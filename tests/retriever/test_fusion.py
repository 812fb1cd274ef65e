import pytest

from retriever.fusion import reciprocal_rank_fusion
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
