"""Rank fusion of several searchers' result lists."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from retriever.types import ScoredId


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
