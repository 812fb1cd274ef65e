"""The lexical formula channel: BM25 over normalized formula terms; no training needed.

A statement is indexed as the terms of all its formulas (tokens, token bigrams and leaf-to-root
paths, see :mod:`retriever.text.formula_normalizer`); a query by the terms of its formulas. Approach0
showed fusing such a channel with text retrieval is worth about +0.09 nDCG'.
"""

from __future__ import annotations

from collections.abc import Sequence

from retriever.storage.bm25_index import BM25Index
from retriever.text.formula_normalizer import normalize_formula
from retriever.text.query_formulas import query_formulas
from retriever.types import ScoredId


class FormulaLexicalSearcher:
    name = "formula"

    def __init__(self, index: BM25Index) -> None:
        self.index = index

    def search(self, query: str, k: int) -> list[ScoredId]:
        return self.search_formulas(query_formulas(query), k)

    def search_formulas(self, formulas: Sequence[str], k: int) -> list[ScoredId]:
        terms = [term for formula in formulas for term in normalize_formula(formula).terms()]
        return self.index.search_terms(terms, k) if terms else []
