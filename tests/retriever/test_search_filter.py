from __future__ import annotations

from datetime import date
from pathlib import Path

from ingestion.records import Source, StatementKind, StatementRecord
from rag_app import MathRAG
from retriever import SearchFilter
from retriever.search_filter import record_categories, record_date
from tests.conftest import make_settings


def record(
    source: Source = Source.ARXIV, kind: StatementKind = StatementKind.THEOREM, **metadata: str
) -> StatementRecord:
    return StatementRecord(id="x", source=source, kind=kind, text="t", paper_id="p", metadata=metadata)


def test_an_empty_filter_passes_everything() -> None:
    assert not SearchFilter().active and SearchFilter().matches(record())
    assert SearchFilter().describe() == "everything"


def test_sources_kinds_categories_and_dates() -> None:
    arxiv = record(categories="math.AG math.NT", published="2024-03-01")
    assert SearchFilter(sources=frozenset({"arxiv"})).matches(arxiv)
    assert not SearchFilter(sources=frozenset({"mse"})).matches(arxiv)
    assert not SearchFilter(kinds=frozenset({"lemma"})).matches(arxiv)
    assert SearchFilter(categories=frozenset({"math.NT"})).matches(arxiv)
    assert SearchFilter(categories=frozenset({"math"})).matches(arxiv), "a whole archive"
    assert not SearchFilter(categories=frozenset({"math.CO"})).matches(arxiv)
    assert SearchFilter(date_from=date(2024, 3, 1), date_to=date(2024, 3, 1)).matches(arxiv), "inclusive"
    assert not SearchFilter(date_from=date(2024, 3, 2)).matches(arxiv)
    assert not SearchFilter(date_to=date(2024, 2, 29)).matches(arxiv)
    assert not SearchFilter(date_from=date(2000, 1, 1)).matches(record()), "no date fails a date bound"


def test_metadata_formats() -> None:
    assert record_categories(record(categories="math.AG; math.NT")) == ["math.AG", "math.NT"]
    assert record_categories(record(primary_category="math.CO")) == ["math.CO"]
    assert record_date(record(Source.MSE, created="2019-05-02T10:11:12.345")) == date(2019, 5, 2)
    assert record_date(record(published="not a date")) is None


def test_a_filtered_search_searches_deeper_until_enough_pass(demo_index_dir: Path, tmp_path: Path) -> None:
    rag = MathRAG(make_settings(tmp_path, index_dir=demo_index_dir))
    unfiltered = rag.search("finite", 5, "hybrid")
    assert {hit.record.kind for hit in unfiltered} != {StatementKind.COROLLARY}
    for mode in ("hybrid", "dense", "bm25", "hybrid-formula"):
        hits = rag.search("finite", 5, mode, SearchFilter(kinds=frozenset({"corollary"})))
        assert hits and {hit.record.kind for hit in hits} == {StatementKind.COROLLARY}, mode
        assert [hit.rank for hit in hits] == list(range(1, len(hits) + 1))
    assert rag.search("compact", 5, "hybrid", SearchFilter(sources=frozenset({"mse"}))) == []
    formula_hits = rag.search_formula(r"\binom{2n}{n}", 3, SearchFilter(kinds=frozenset({"definition"})))
    assert all(hit.record.kind is StatementKind.DEFINITION for hit in formula_hits)
