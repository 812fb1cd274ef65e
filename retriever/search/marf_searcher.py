"""Searchers over the formula-fusion index: fused vectors (pooled, optionally MaxSim-reranked), and
formula vectors for formula-only queries."""

from __future__ import annotations

from typing import TYPE_CHECKING

from retriever.store.marf_index import MarfIndex
from retriever.text.query_formulas import query_formulas
from retriever.types import ScoredId

if TYPE_CHECKING:  # torch loads with it: the index builds the encoder when a search first needs it
    from retriever.models.marf_encoder import MarfEncoder


class MarfSearcher:
    """The query fused with its formulas; nearest pooled vectors, then MaxSim over the top when asked."""

    def __init__(self, encoder: MarfEncoder, index: MarfIndex, maxsim_candidates: int = 0) -> None:
        self.encoder = encoder
        self.index = index
        self.maxsim_candidates = maxsim_candidates
        self.name = "fusion"

    def search(self, query: str, k: int) -> list[ScoredId]:
        fused = self.encoder.encode([query], [query_formulas(query)])[0]
        first_stage = self.index.search_pooled(fused.vector, max(k, self.maxsim_candidates))
        if not self.maxsim_candidates:
            return first_stage[:k]
        head = first_stage[: self.maxsim_candidates]
        reranked = self.index.maxsim(fused.tokens, [hit.id for hit in head])
        return (reranked + first_stage[self.maxsim_candidates :])[:k]


class FormulaEncoderSearcher:
    """Statements whose formulas the formula encoder places nearest the query's formulas."""

    name = "formula-encoder"

    def __init__(self, encoder: MarfEncoder, index: MarfIndex) -> None:
        self.encoder = encoder
        self.index = index

    def search_formulas(self, formulas: list[str], k: int) -> list[ScoredId]:
        if not formulas:
            return []
        return self.index.search_formula_vectors(self.encoder.models.encoder.embed(formulas), k)
