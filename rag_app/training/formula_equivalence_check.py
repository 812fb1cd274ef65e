"""The formula encoder's own check: does it find the true rewrite among many formulas?

Every held-out anchor is a query; the candidates are all held-out positives. A method is right
at rank 1 when its top candidate is a rewrite of that anchor. BM25 over the normalized formula
terms (the lexical formula channel) is the baseline the encoder must beat.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import torch

from rag_app.training.formula_rewrites import EquivalencePair
from retriever.models.formula_encoder import FormulaEncoder, maxsim_scores
from retriever.storage.bm25_index import BM25Index
from retriever.text.formula_normalizer import normalize_formula


def check_equivalence(
    pairs: Sequence[EquivalencePair], encoders: Mapping[str, FormulaEncoder]
) -> dict[str, dict[str, float]]:
    """Hit@1, Hit@10 and MRR@10 per method (``bm25`` and each encoder under its scoring)."""
    candidates = sorted({pair.positive for pair in pairs})
    position = {formula: i for i, formula in enumerate(candidates)}
    gold: dict[str, set[int]] = {}
    for pair in pairs:
        gold.setdefault(pair.anchor, set()).add(position[pair.positive])
    anchors = sorted(gold)
    rankings: dict[str, list[list[int]]] = {"bm25 (formula terms)": _bm25_rankings(anchors, candidates)}
    for name, encoder in encoders.items():
        rankings[name] = _encoder_rankings(encoder, anchors, candidates)
    results = {}
    for name, ranked in rankings.items():
        hits1 = hits10 = reciprocal = 0.0
        for anchor, ranking in zip(anchors, ranked, strict=True):
            ranks = [rank for rank, candidate in enumerate(ranking[:10], start=1) if candidate in gold[anchor]]
            hits1 += bool(ranks and ranks[0] == 1)
            hits10 += bool(ranks)
            reciprocal += 1 / ranks[0] if ranks else 0.0
        count = len(anchors)
        results[name] = {"Hit@1": hits1 / count, "Hit@10": hits10 / count, "MRR@10": reciprocal / count}
    results["_size"] = {"anchors": float(len(anchors)), "candidates": float(len(candidates))}
    return results


def _bm25_rankings(anchors: Sequence[str], candidates: Sequence[str]) -> list[list[int]]:
    index = BM25Index.build_from_tokens(
        [str(i) for i in range(len(candidates))], [normalize_formula(c).terms() for c in candidates], k1=0.9, b=0.6
    )
    return [[int(hit.id) for hit in index.search_terms(normalize_formula(a).terms(), 10)] for a in anchors]


def _encoder_rankings(encoder: FormulaEncoder, anchors: Sequence[str], candidates: Sequence[str]) -> list[list[int]]:
    if encoder.config.scoring == "mean":
        scores = encoder.embed(list(anchors)) @ encoder.embed(list(candidates)).T
        return [list(np.argsort(-row, kind="stable")[:10]) for row in scores]
    doc_states, doc_mask = encoder.token_states(list(candidates))
    rankings = []
    for start in range(0, len(anchors), 32):
        query_states, query_mask = encoder.token_states(list(anchors[start : start + 32]))
        with torch.inference_mode():
            scores = maxsim_scores(query_states, query_mask, doc_states, doc_mask)
        rankings.extend(torch.topk(scores, min(10, len(candidates)), dim=1).indices.tolist())
    return rankings
