"""Paper search: statements grouped into papers (MSE: threads), ranked by an aggregate of their scores."""

from __future__ import annotations

import pytest

from ingestion.records import Source, StatementKind, StatementRecord
from retriever.search.paper_searcher import PaperAggregation, PaperSearcher, aggregate, group_papers
from retriever.search_filter import SearchFilter
from retriever.types import SearchHit


def record(paper: str, n: int, source: Source = Source.ARXIV, **metadata: object) -> StatementRecord:
    return StatementRecord(
        id=f"{paper}-{n}",
        source=source,
        kind=StatementKind.ANSWER if source is Source.MSE else StatementKind.LEMMA,
        text=f"statement {n} of {paper}",
        paper_id=paper,
        title=f"Title of {paper}",
        url=f"https://example.org/{paper}#{n}",
        metadata=metadata,  # type: ignore[arg-type]
    )


def hits(*items: tuple[StatementRecord, float]) -> list[SearchHit]:
    return [SearchHit(rec, score, rank) for rank, (rec, score) in enumerate(items, start=1)]


class FakeStatements:
    """A statement searcher that records what it was asked."""

    def __init__(self, results: list[SearchHit]) -> None:
        self.results = results
        self.asked: list[tuple[str, int, str, SearchFilter | None]] = []

    def search(self, query: str, k: int, mode: str = "hybrid", where: SearchFilter | None = None) -> list[SearchHit]:
        self.asked.append((query, k, mode, where))
        return self.results[:k]


def test_papers_rank_by_their_best_statement_with_their_best_statements_under_them() -> None:
    a, b, c = "2501.00001", "2501.00002", "local-notes"
    found = hits(
        (record(a, 1, authors="A. Author", categories="math.AG math.NT", published="2025-01-02"), 0.9),
        (record(b, 1), 0.8),
        (record(a, 2), 0.7),
        (record(b, 2), 0.6),
        (record(b, 3), 0.5),
        (record(b, 4), 0.4),
        (record(c, 1, source=Source.LOCAL), 0.3),
    )
    papers = group_papers(found, k=10, hits_per_paper=3)
    assert [p.paper_id for p in papers] == [a, b, c] and [p.rank for p in papers] == [1, 2, 3]
    first = papers[0]
    assert first.score == 0.9 and [h.record.id for h in first.hits] == [f"{a}-1", f"{a}-2"]
    assert first.url == f"https://arxiv.org/abs/{a}" and first.authors == "A. Author" and first.title == f"Title of {a}"
    assert first.categories == ("math.AG", "math.NT") and first.date == "2025-01-02" and first.source == "arxiv"
    assert len(papers[1].hits) == 3  # hits_per_paper
    assert papers[2].url == "https://example.org/local-notes"  # not arXiv: the page of its best statement
    data = first.to_dict()
    assert set(data) >= {"paper_id", "title", "authors", "url", "score", "categories", "date", "hits"}
    assert data["hits"][0]["id"] == f"{a}-1" and data["hits"][0]["text"] == f"statement 1 of {a}"
    assert group_papers(found, k=1)[0].paper_id == a and group_papers([], k=5) == []


def test_aggregations_differ_where_many_weaker_statements_meet_one_strong_one() -> None:
    strong, many = "strong", "many"
    found = hits((record(strong, 1), 1.0), (record(many, 1), 0.8), (record(many, 2), 0.7), (record(many, 3), 0.6))
    assert [p.paper_id for p in group_papers(found, 5, PaperAggregation.MAX)] == [strong, many]
    assert [p.paper_id for p in group_papers(found, 5, PaperAggregation.TOP_M, top_m=3)] == [many, strong]
    assert aggregate([0.8, 0.7, 0.6], PaperAggregation.MAX_PLUS, 3) == pytest.approx(0.8 + 0.13)
    # Equal aggregates keep the order of the papers' best statements.
    tied = hits((record("x", 1), 0.5), (record("y", 1), 0.5))
    assert [p.paper_id for p in group_papers(tied, 5)] == ["x", "y"]


def test_an_mse_thread_is_one_paper_the_question_with_its_answers() -> None:
    question = record("mse-10", 0, source=Source.MSE, question_id=10, created="2014-02-01T10:00:00")
    answer = record("mse-12", 1, source=Source.MSE, question_id=10)
    other = record("mse-20", 2, source=Source.MSE, question_id=20)
    papers = group_papers(hits((answer, 0.9), (other, 0.8), (question, 0.7)), k=5)
    assert [p.paper_id for p in papers] == ["mse-10", "mse-20"]
    assert [h.record.id for h in papers[0].hits] == ["mse-12-1", "mse-10-0"]
    assert papers[0].url == "https://math.stackexchange.com/q/10" and papers[0].date == ""
    assert papers[1].source == "mse"


def test_searcher_asks_deep_enough_and_passes_mode_and_filter() -> None:
    statements = FakeStatements(hits(*[(record(f"p{n % 7}", n), 1 - n / 100) for n in range(60)]))
    searcher = PaperSearcher(statements, depth=40, aggregation="max")
    where = SearchFilter(sources=frozenset({"arxiv"}))
    papers = searcher.search("query", 5, "bm25", where)
    assert statements.asked == [("query", 40, "bm25", where)] and len(papers) == 5
    searcher.search("query", 50, "bm25")
    assert statements.asked[-1][1] == 50  # never shallower than k
    assert PaperSearcher(FakeStatements([])).search("nothing matches", 5, "hybrid") == []
