"""Retrieval: embedding, the Chroma store, BM25, fusion and the searchers built on them."""

from retriever.cross_encoder_reranker import CrossEncoderReranker, RerankerModelError
from retriever.embedder import Embedder
from retriever.paper_searcher import PaperHit, PaperSearcher
from retriever.reranking_searcher import RerankingSearcher
from retriever.search_filter import SearchFilter
from retriever.search_mode import SearchMode
from retriever.statement_index import AddResult, IndexMismatchError, StatementIndex
from retriever.types import ScoredId, SearchHit

__all__ = [
    "AddResult",
    "CrossEncoderReranker",
    "Embedder",
    "IndexMismatchError",
    "PaperHit",
    "PaperSearcher",
    "RerankerModelError",
    "RerankingSearcher",
    "ScoredId",
    "SearchFilter",
    "SearchHit",
    "SearchMode",
    "StatementIndex",
]
