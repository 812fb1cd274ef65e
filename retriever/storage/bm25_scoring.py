"""BM25 scoring over the segments of an index, with MaxScore pruning (Turtle and Flood).

The scores are bm25s' Lucene variant (see :mod:`retriever.storage.bm25_index`). The rare query terms are
scored over all their postings; that gives a k-th score. The commonest terms whose upper bounds (a term
adds less than its weighted idf) sum below it cannot lift a document the others did not reach into the
top k, so they only update the documents that can still get there. The result is the exhaustive one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from retriever.storage.bm25_segment import BM25Segment

# Query terms in more than this share of the documents are "common" for MaxScore.
COMMON_SHARE = 0.01


@dataclass(frozen=True, slots=True)
class LiveSegment:
    segment: BM25Segment
    deleted: np.ndarray  # rows deleted since the segment was written (int64)


@dataclass(frozen=True, slots=True)
class BM25Parameters:
    k1: float
    b: float
    documents: int  # N: documents including the deleted ones not yet merged away
    average_length: float


def top_rows(
    segments: Sequence[LiveSegment], query: np.ndarray, weights: np.ndarray, k: int, bm25: BM25Parameters
) -> list[tuple[float, int, int]]:
    """The ``k`` best (score, segment number, row) for the query's term ids, each weighted by ``weights``
    (how often the query holds it), best first."""
    located = [live.segment.locate(query) for live in segments]
    frequencies = sum(live.segment.document_frequencies(p) for live, p in zip(segments, located, strict=True))
    idf = np.log1p((bm25.documents - frequencies + 0.5) / (frequencies + 0.5)).astype(np.float32) * weights
    order = np.argsort(frequencies, kind="stable")
    rare = order[frequencies[order] <= COMMON_SHARE * bm25.documents]
    scores = [score_all(live, p[rare], idf[rare], bm25) for live, p in zip(segments, located, strict=True)]
    commonest_first = order[len(rare) :][::-1]
    if len(commonest_first):
        threshold = kth_score(scores, k) if len(rare) else 0.0
        bounds = np.cumsum(idf[commonest_first], dtype=np.float64)
        lazy_count = int(np.searchsorted(bounds, threshold, side="left"))  # bounds summing below it
        lazy, eager = commonest_first[:lazy_count], commonest_first[lazy_count:]
        for number, (live, positions) in enumerate(zip(segments, located, strict=True)):
            if len(eager):
                scores[number] += score_all(live, positions[eager], idf[eager], bm25)
        if len(lazy):
            floor = max(threshold, kth_score(scores, k)) - float(bounds[lazy_count - 1])
            for number, (live, positions) in enumerate(zip(segments, located, strict=True)):
                score_candidates(live, scores[number], positions[lazy], idf[lazy], bm25, floor)
    candidates: list[tuple[float, int, int]] = []
    for number, segment_scores in enumerate(scores):
        best = _top(segment_scores, k)
        candidates += [(float(segment_scores[row]), number, int(row)) for row in best]
    candidates.sort(key=lambda c: (-c[0], c[1], c[2]))
    return candidates[:k]


def score_all(live: LiveSegment, positions: np.ndarray, idf: np.ndarray, bm25: BM25Parameters) -> np.ndarray:
    """Scores of every document of the segment for these terms (deleted documents: 0)."""
    segment = live.segment
    scores = np.zeros(segment.size, dtype=np.float32)
    for position, term_idf in zip(positions, idf, strict=True):
        if position < 0:
            continue
        rows, tf = segment.postings(int(position))
        norm = bm25.k1 * ((1 - bm25.b) + bm25.b * segment.lengths[rows] / bm25.average_length)
        scores[rows] += term_idf * tf / (tf + norm)  # rows are unique within one term's postings
    if len(live.deleted):
        scores[live.deleted] = 0.0
    return scores


def score_candidates(
    live: LiveSegment, scores: np.ndarray, positions: np.ndarray, idf: np.ndarray, bm25: BM25Parameters, floor: float
) -> None:
    """Add these terms' scores, in place, to the documents scoring at least ``floor`` so far: only
    they can still reach the top k. Each one is looked up in the postings (sorted by row)."""
    segment = live.segment
    rows_wanted = np.flatnonzero(scores >= floor * (1 - 1e-5))  # float32 sums: err towards looking
    if len(rows_wanted) == 0:
        return
    for position, term_idf in zip(positions, idf, strict=True):
        if position < 0:
            continue
        rows, tf = segment.postings(int(position))
        at = np.searchsorted(rows, rows_wanted)
        found = at < len(rows)
        found[found] = rows[at[found]] == rows_wanted[found]
        hit_rows, hit_tf = rows_wanted[found], tf[at[found]]
        norm = bm25.k1 * ((1 - bm25.b) + bm25.b * segment.lengths[hit_rows] / bm25.average_length)
        scores[hit_rows] += term_idf * hit_tf / (hit_tf + norm)


def kth_score(scores: Sequence[np.ndarray], k: int) -> float:
    """The k-th highest score over all segments (0 when fewer than k documents score)."""
    positive = np.concatenate([s[s > 0] for s in scores] or [np.zeros(0, np.float32)])
    if len(positive) < k:
        return 0.0
    return float(np.partition(positive, len(positive) - k)[len(positive) - k])


def _top(scores: np.ndarray, k: int) -> np.ndarray:
    """Rows of the ``k`` highest positive scores (unordered)."""
    positive = np.flatnonzero(scores > 0)
    if len(positive) <= k:
        return positive
    return positive[np.argpartition(-scores[positive], k - 1)[:k]]
