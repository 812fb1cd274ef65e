"""The first stage over an index, as tests search it (what ``rag_app.search.search_stack`` composes from settings)."""

from __future__ import annotations

from typing import Any

from retriever.search.channel_ranker import ChannelRanker
from retriever.search.ensemble_ranker import EnsembleRanker
from retriever.search.first_stage_searcher import FirstStageSearcher
from retriever.store.statement_index import StatementIndex


def first_stage(index: StatementIndex, **ranker_settings: Any) -> FirstStageSearcher:
    """The index's channels fused by rank, as hits (``ranker_settings``: ChannelRanker's)."""
    return FirstStageSearcher(ChannelRanker(index, **ranker_settings), index)


def ensemble(
    index: StatementIndex, second: Any, weight: float = 1.0, candidates: int = 50, **ranker_settings: Any
) -> FirstStageSearcher:
    """The index's channels fused with a second model's list (``second``: its searcher), as hits."""
    ranker = EnsembleRanker(ChannelRanker(index, **ranker_settings), second, weight, candidates, index.directory)
    return FirstStageSearcher(ranker, index)
