"""Rank fusion of several searchers' result lists."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal

from retriever.types import ScoredId

RankFusionMethod = Literal["rrf", "linear"]


def reciprocal_rank_fusion(
    runs: Mapping[str, Sequence[ScoredId]],
    k: float = 60.0,
    weights: Mapping[str, float] | None = None,
) -> list[ScoredId]:
    """Fuse ranked lists by weighted reciprocal rank (Cormack et al., 2009).

    Each document scores ``sum(weight / (k + rank))`` over the lists it appears in, with ranks
    starting at 1. Ties are broken by the id so the order is deterministic.
    """
    scores: dict[str, float] = {}
    for name, run in runs.items():
        weight = 1.0 if weights is None else weights.get(name, 1.0)
        for rank, hit in enumerate(run, start=1):
            scores[hit.id] = scores.get(hit.id, 0.0) + weight / (k + rank)
    return [ScoredId(doc_id, score) for doc_id, score in sorted(scores.items(), key=lambda item: (-item[1], item[0]))]


def linear_fusion(runs: Mapping[str, Sequence[ScoredId]], weights: Mapping[str, float] | None = None) -> list[ScoredId]:
    """Fuse by a weighted sum of min-max normalized scores (a document missing from a list gets 0 there).

    Scores of different channels (cosine, BM25) live on different scales; min-max puts each list on
    [0, 1] first. Ties are broken by the id.
    """
    scores: dict[str, float] = {}
    for name, run in runs.items():
        if not run:
            continue
        weight = 1.0 if weights is None else weights.get(name, 1.0)
        high = max(hit.score for hit in run)
        low = min(hit.score for hit in run)
        spread = high - low
        for hit in run:
            normalized = (hit.score - low) / spread if spread > 0 else 1.0
            scores[hit.id] = scores.get(hit.id, 0.0) + weight * normalized
    return [ScoredId(doc_id, score) for doc_id, score in sorted(scores.items(), key=lambda item: (-item[1], item[0]))]


def fuse(
    runs: Mapping[str, Sequence[ScoredId]],
    method: RankFusionMethod = "rrf",
    rrf_k: float = 60.0,
    weights: Mapping[str, float] | None = None,
) -> list[ScoredId]:
    if method == "linear":
        return linear_fusion(runs, weights)
    return reciprocal_rank_fusion(runs, k=rrf_k, weights=weights)
