"""The index against a real Chroma store on disk and a real BM25 index."""

from __future__ import annotations

from pathlib import Path

import pytest

from ingestion.records import Source, StatementKind, StatementRecord, statement_id
from retriever import Embedder, IndexMismatchError, SearchMode, StatementIndex
from retriever.bm25_index import BM25Index

PACKAGED = "packaged:all-MiniLM-L6-v2"


def record(paper: str, text: str, kind: StatementKind = StatementKind.THEOREM, name: str = "") -> StatementRecord:
    return StatementRecord(
        id=statement_id("local", paper, kind.value, text),
        source=Source.LOCAL,
        kind=kind,
        text=text,
        paper_id=paper,
        name=name,
        formulas=("x",),
        metadata={"authors": "A. Author"},
    )


RECORDS = [
    record("alg", "A finitely generated module $M$ with $IM = M$ over a local ring is zero.", name="Nakayama"),
    record("top", "A compact subset of a Hausdorff space is closed.", StatementKind.PROPOSITION),
    record("ana", "A bounded entire function is constant.", name="Liouville"),
]


@pytest.fixture(scope="module")
def embedder() -> Embedder:
    return Embedder(PACKAGED)


def test_add_search_and_round_trip(tmp_path: Path, embedder: Embedder) -> None:
    index = StatementIndex(tmp_path / "index", embedder)
    assert index.add(RECORDS).added == 3
    index.rebuild_lexical()
    for mode in SearchMode:
        hits = index.search("bounded entire functions are constant", 2, mode)
        assert hits[0].record == RECORDS[2], mode
        channels = {"dense", "bm25"} if mode is SearchMode.HYBRID else {mode.value}
        assert hits[0].rank == 1 and set(hits[0].channel_ranks) == channels
    hybrid = index.search("Hausdorff compact closed", 3)
    assert hybrid[0].record.id == RECORDS[1].id
    assert set(hybrid[0].channel_ranks) == {"dense", "bm25"}


def test_reopened_index_keeps_records_and_lexical_index(tmp_path: Path, embedder: Embedder) -> None:
    StatementIndex(tmp_path / "index", embedder).add(RECORDS)
    reopened = StatementIndex(tmp_path / "index", embedder)
    assert reopened.count() == 3
    # No BM25 files were written yet: the first lexical search rebuilds from the store.
    assert reopened.search("Liouville entire", 1, SearchMode.BM25)[0].record.name == "Liouville"
    assert len(BM25Index.load(tmp_path / "index" / "bm25")) == 3


def test_adding_again_is_idempotent_and_stale_statements_are_removed(tmp_path: Path, embedder: Embedder) -> None:
    index = StatementIndex(tmp_path / "index", embedder)
    index.add(RECORDS)
    again = index.add(RECORDS)
    assert (again.added, again.unchanged, index.count()) == (0, 3, 3)
    revised = record("alg", "Nakayama, revised statement.", name="Nakayama")
    index.add([revised])
    assert index.remove_stale({"alg": {revised.id}}) == 1
    assert index.count() == 3
    assert index.get([RECORDS[0].id]) == []


def test_index_refuses_another_embedder(tmp_path: Path, embedder: Embedder) -> None:
    StatementIndex(tmp_path / "index", embedder).add(RECORDS[:1])
    with pytest.raises(IndexMismatchError, match="all-MiniLM"):
        StatementIndex(tmp_path / "index", Embedder("some/other-model"))


def test_empty_index_and_blank_query(tmp_path: Path, embedder: Embedder) -> None:
    index = StatementIndex(tmp_path / "index", embedder)
    assert index.search("anything", 5) == []
    index.add(RECORDS)
    assert index.search("   ", 5) == []
    assert index.search("zzzz qqqq", 5, SearchMode.BM25) == []
