"""The citing channel fused after the learned ranker: its candidates only, its scores in the ranker's units."""

from __future__ import annotations

from pathlib import Path

from ingestion import Source, StatementKind, StatementRecord
from ingestion.records import LabelReference
from retriever.search.citing_fusing_searcher import CitingFusingSearcher
from retriever.storage.statement_graph import StatementGraph
from retriever.types import ResultSearcher, SearchHit, SearchResult


def statement(id_: str, label: str = "", *references: LabelReference) -> StatementRecord:
    return StatementRecord(id_, Source.LOCAL, StatementKind.LEMMA, f"Statement {id_}.", "p", label=label,
                           labels=(label,) if label else (), references=references)  # fmt: skip


class Ranked(ResultSearcher):
    """A learned ranker's searcher stand-in: fixed hits, best first, with its scores."""

    def __init__(self, records: list[StatementRecord], scores: list[float]) -> None:
        self.hits = [SearchHit(r, score=s, rank=n) for n, (r, s) in enumerate(zip(records, scores, strict=True), 1)]
        self.asked: list[int] = []

    def run(self, query: str, k: int, mode: str, where=None) -> SearchResult:
        self.asked.append(k)
        return SearchResult(hits=self.hits[:k], query=query)


def test_a_statement_its_citers_name_moves_up_among_the_rankers_candidates(tmp_path: Path) -> None:
    named = statement("nak", "lemma-nak")
    citer = statement("c", "", LabelReference("lemma-nak", "proof", "nak", "", "Thus M = 0 by Nakayama's lemma."))
    outside = statement("far", "lemma-far")  # cited by name too, but not among the ranker's candidates
    far_citer = statement("d", "", LabelReference("lemma-far", "proof", "far", "", "By the lemma, once more."))
    graph = StatementGraph(tmp_path)
    graph.add([named, citer, outside, far_citer])
    first, second = statement("a"), statement("b")
    ranked = Ranked([first, second, named], [2.0, 1.9, 1.85])
    fused = CitingFusingSearcher(ranked, graph, "hybrid-formula", weight=2.0, depth=100)
    result = fused.run("Nakayama's lemma", 3, "hybrid-formula")
    assert [hit.record.id for hit in result.hits] == ["nak", "a", "b"] and ranked.asked == [100]
    assert result.hits[0].channel_ranks["learned-ranker"] == 3 and [h.rank for h in result.hits] == [1, 2, 3]
    # in the ranker's units: moved by weight x spread (0.15) x its normalized citing score (the best: 1)
    assert abs(result.hits[0].score - (1.85 + 2.0 * 0.15 * 1.0)) < 1e-6 and result.hits[1].score == 2.0
    assert "far" not in {hit.record.id for hit in fused.run("Nakayama's lemma", 10, "hybrid-formula").hits}
    # another mode, or a weight of 0: the ranker's order as it is
    assert [h.record.id for h in fused.run("Nakayama's lemma", 3, "dense").hits] == ["a", "b", "nak"]
    off = CitingFusingSearcher(ranked, graph, "hybrid-formula", weight=0.0)
    assert [h.record.id for h in off.run("Nakayama's lemma", 3, "hybrid-formula").hits] == ["a", "b", "nak"]


def test_a_graph_that_cannot_be_read_leaves_the_rankers_order(tmp_path: Path, monkeypatch) -> None:
    import sqlite3

    graph = StatementGraph(tmp_path)
    ranked = Ranked([statement("a"), statement("b")], [2.0, 1.0])

    def damaged(query: str, k: int) -> list[tuple[str, float]]:
        raise sqlite3.DatabaseError("file is not a database")

    monkeypatch.setattr(graph.citing_text, "best", damaged)
    fused = CitingFusingSearcher(ranked, graph, "hybrid-formula", weight=2.0)
    assert [h.record.id for h in fused.run("anything", 2, "hybrid-formula").hits] == ["a", "b"]
