"""Retrieval, in one order from bottom to top; a module imports only its own folder and those below:

1. ``types``, ``search_filter``, ``search_mode``, ``deadline``: the values passed between stages;
2. ``text/``: pure text (tokenizing, notation, formulas normalized and their terms);
3. ``storage/``: the files and connections stores are made of (atomic files, SQLite, Chroma, BM25 files, the
   statement graph, the citing text);
4. ``models/``: trained models (embedders, the formula encoder and MaRF fusion, the query adapter, the learned
   ranker and its features, the cross-encoder);
5. ``store/``: the indexes built from them (Chroma records, derived stores, MaRF vectors, the statement index);
6. ``search/``: the searchers, their fusion and the rankers over them.
"""

from retriever.models.cross_encoder_reranker import CrossEncoderReranker, RerankerModelError
from retriever.models.embedder import Embedder
from retriever.search.paper_searcher import PaperHit, PaperSearcher
from retriever.search.reranking_searcher import RerankingSearcher
from retriever.search_filter import SearchFilter
from retriever.search_mode import SearchMode
from retriever.store.statement_index import AddResult, IndexMismatchError, StatementIndex
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
