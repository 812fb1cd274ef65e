"""Retrieval: ``store/`` (Chroma, the derived stores, the statement index), ``search/`` (the searchers,
fusion and rankers), ``models/`` (embedders, adapters, rankers), ``text/`` (tokenizing, notation),
``formulas/`` (the formula channel, from normalizing to its vectors)."""

from retriever.moved_modules import keep_old_paths

# Modules that moved in issue 49: their old paths are aliases of the new modules until 2027-03-01.
MOVED_MODULES = {
    "retriever.atomic_files": "retriever.store.atomic_files",
    "retriever.bm25_index": "retriever.store.bm25_index",
    "retriever.bm25_segment": "retriever.store.bm25_segment",
    "retriever.chroma_connection": "retriever.store.chroma_connection",
    "retriever.chroma_store": "retriever.store.chroma_store",
    "retriever.companion_index": "retriever.store.companion_index",
    "retriever.duplicate_groups": "retriever.store.duplicate_groups",
    "retriever.hnsw_files": "retriever.store.hnsw_files",
    "retriever.index_health": "retriever.store.index_health",
    "retriever.index_lock": "retriever.store.index_lock",
    "retriever.paper_manifest": "retriever.store.paper_manifest",
    "retriever.reindex": "retriever.store.reindex",
    "retriever.statement_index": "retriever.store.statement_index",
    "retriever.bm25_searcher": "retriever.search.bm25_searcher",
    "retriever.dense_searcher": "retriever.search.dense_searcher",
    "retriever.hybrid_searcher": "retriever.search.hybrid_searcher",
    "retriever.first_stage_searcher": "retriever.search.first_stage_searcher",
    "retriever.rank_fusion": "retriever.search.rank_fusion",
    "retriever.reranking_searcher": "retriever.search.reranking_searcher",
    "retriever.learned_ranking_searcher": "retriever.search.learned_ranking_searcher",
    "retriever.duplicate_collapsing_searcher": "retriever.search.duplicate_collapsing_searcher",
    "retriever.paper_searcher": "retriever.search.paper_searcher",
    "retriever.rewrite_fusing_searcher": "retriever.search.rewrite_fusing_searcher",
    "retriever.typed_notation_searcher": "retriever.search.typed_notation_searcher",
    "retriever.search_filter": "retriever.search.search_filter",
    "retriever.search_mode": "retriever.search.search_mode",
    "retriever.channel_ranker": "retriever.search.channel_ranker",
    "retriever.ensemble_ranker": "retriever.search.ensemble_ranker",
    "retriever.ranking_features": "retriever.search.ranking_features",
    "retriever.embedder": "retriever.models.embedder",
    "retriever.embedding_registry": "retriever.models.embedding_registry",
    "retriever.embedder_artifact": "retriever.models.embedder_artifact",
    "retriever.split_model_archive": "retriever.models.split_model_archive",
    "retriever.query_adapter": "retriever.models.query_adapter",
    "retriever.learned_ranker": "retriever.models.learned_ranker",
    "retriever.cross_encoder_reranker": "retriever.models.cross_encoder_reranker",
    "retriever.math_tokenizer": "retriever.text.math_tokenizer",
    "retriever.unicode_math_text": "retriever.text.unicode_math_text",
    "retriever.query_notation": "retriever.text.query_notation",
}
keep_old_paths(MOVED_MODULES)

# ruff: noqa: E402 - the old paths must work before any submodule is imported

from retriever.models.cross_encoder_reranker import CrossEncoderReranker, RerankerModelError
from retriever.models.embedder import Embedder
from retriever.search.paper_searcher import PaperHit, PaperSearcher
from retriever.search.reranking_searcher import RerankingSearcher
from retriever.search.search_filter import SearchFilter
from retriever.search.search_mode import SearchMode
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
