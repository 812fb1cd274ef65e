"""Lexical search: BM25 over words and LaTeX commands."""

from __future__ import annotations

from retriever.storage.bm25_index import BM25Index
from retriever.types import ScoredId


class BM25Searcher:
    name = "bm25"

    def __init__(self, index: BM25Index) -> None:
        self.index = index

    def search(self, query: str, k: int) -> list[ScoredId]:
        return self.index.search(query, k)
