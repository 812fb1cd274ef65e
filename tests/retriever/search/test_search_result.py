"""A search returns how it found its hits with them: the query's one embedding, the hits' vectors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ingestion.records import StatementKind
from retriever import SearchFilter, SearchMode, StatementIndex
from retriever.search.duplicate_collapsing_searcher import DuplicateCollapsingSearcher
from retriever.search.typed_notation_searcher import TypedNotationSearcher
from retriever.store.duplicate_groups import DuplicateGroups
from retriever.types import Query, ScoredBy, SearchResult, run_search
from tests.embedders import HashingEmbedder
from tests.retriever.store.test_statement_index import record
from tests.searchers import first_stage


class CountingEmbedder(HashingEmbedder):
    """The hashing embedder, counting the queries it embeds."""

    def __init__(self) -> None:
        super().__init__()
        self.queries: list[str] = []

    def embed_query(self, text: str) -> np.ndarray:
        self.queries.append(text)
        return super().embed_query(text)


THEOREMS = [record(f"p{i}", f"A compact space number {i} is closed in a Hausdorff space.") for i in range(30)]
PROPOSITION = record("prop", "A compact metric space is complete.", StatementKind.PROPOSITION)


@pytest.fixture
def index(tmp_path: Path) -> StatementIndex:
    index = StatementIndex(tmp_path / "index", CountingEmbedder())
    index.add([*THEOREMS, PROPOSITION])
    return index


def test_a_filtered_search_that_goes_deeper_embeds_the_query_once(index: StatementIndex) -> None:
    embedder = index.embedder
    assert isinstance(embedder, CountingEmbedder)
    embedder.queries.clear()
    only = SearchFilter(kinds=frozenset({"proposition"}))
    searcher = first_stage(index, candidates=2)
    searcher.candidates = 2  # the first depth: 4 statements, then 16, then all 31
    result = searcher.run("compact Hausdorff closed", 1, SearchMode.HYBRID, only)
    assert [hit.record.id for hit in result.hits] == [PROPOSITION.id]
    assert embedder.queries == ["compact Hausdorff closed"]  # three rankings, one embedding
    assert result.query.embedded_by(embedder) and result.scored_by == ScoredBy.FUSION
    # the hits' stored vectors came back with their records
    stored = index.store.vectors([PROPOSITION.id])[PROPOSITION.id]
    assert np.allclose(result.vectors[PROPOSITION.id], stored)
    assert np.allclose(result.query.vector(embedder), embedder.embed_documents(["compact Hausdorff closed"])[0])
    assert len(embedder.queries) == 1  # reading the result's vector embedded nothing again


def test_collapsing_and_notation_pass_one_query_down(index: StatementIndex, tmp_path: Path) -> None:
    embedder = index.embedder
    assert isinstance(embedder, CountingEmbedder)
    (tmp_path / "groups").mkdir()
    groups = DuplicateGroups(tmp_path / "groups", threshold=0.0, max_word_difference=1000)
    searcher = TypedNotationSearcher(DuplicateCollapsingSearcher(first_stage(index), groups, extra=0))
    embedder.queries.clear()
    query = Query("compact closed")
    result = run_search(searcher, query, 3, SearchMode.HYBRID)
    assert result.query is query and embedder.queries == ["compact closed"]
    assert {hit.record.id for hit in result.hits} <= set(result.vectors)
    # typed notation read as LaTeX is another text: another query, embedded once
    embedder.queries.clear()
    assert run_search(searcher, "x_1 compact", 3, SearchMode.HYBRID).query == "$x_1$ compact"
    assert embedder.queries == ["$x_1$ compact"]


def test_a_searcher_with_search_alone_still_composes() -> None:
    class Outside:
        def search(self, query: str, k: int, mode: str, where: SearchFilter | None = None) -> list:
            return []

    result = run_search(Outside(), "anything", 3, SearchMode.HYBRID)
    assert isinstance(result, SearchResult) and result.hits == [] and result.vectors == {}
