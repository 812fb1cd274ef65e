"""Retrieval: embedding, the Chroma store, BM25, fusion and the searchers built on them."""

from retriever.embedder import Embedder
from retriever.search_filter import SearchFilter
from retriever.statement_index import AddResult, IndexMismatchError, SearchMode, StatementIndex
from retriever.types import ScoredId, SearchHit

__all__ = [
    "AddResult",
    "Embedder",
    "IndexMismatchError",
    "ScoredId",
    "SearchFilter",
    "SearchHit",
    "SearchMode",
    "StatementIndex",
]
