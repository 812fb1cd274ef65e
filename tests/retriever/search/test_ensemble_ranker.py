"""The index's fused list and the second model's list, fused (real Chroma and BM25 on disk)."""

from __future__ import annotations

import logging

import pytest

from retriever import Embedder, SearchFilter, SearchMode, StatementIndex
from retriever.search.first_stage_searcher import FirstStageSearcher
from retriever.store.companion_index import CompanionIndex
from retriever.types import ScoredId
from tests.embedders import HashingEmbedder
from tests.retriever.store.test_companion_index import SECOND
from tests.retriever.store.test_statement_index import PACKAGED, RECORDS, record
from tests.searchers import ensemble, first_stage

MORE = [
    *RECORDS,
    record("ana2", "An entire function of polynomial growth is a polynomial."),
    record("top2", "A closed subset of a compact space is compact."),
]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[StatementIndex, CompanionIndex]:
    directory = tmp_path_factory.mktemp("ensemble") / "index"
    second = CompanionIndex(directory, Embedder(**SECOND))  # type: ignore[arg-type]
    index = StatementIndex(directory, Embedder(PACKAGED), companion=second)
    index.add(MORE)
    return index, second


def ensemble_of(index: StatementIndex, second: object, weight: float = 1.0, candidates: int = 50) -> FirstStageSearcher:
    """The index's channels (fused linearly) and ``second``'s list, fused."""
    return ensemble(index, second, weight, candidates, method="linear")


class FixedList:
    """A second channel that always answers the same list (to see what fusion does with it)."""

    name = "dense2"

    def __init__(self, ids: list[str], built: bool = True) -> None:
        self.ids = ids
        self.built = built
        self.embedder = HashingEmbedder("fixed-list")  # its identity names the model fused in

    def search(self, query: str, k: int) -> list[ScoredId]:
        return [ScoredId(i, 1.0 - 0.1 * rank) for rank, i in enumerate(self.ids[:k])]

    def built_by_configured_model(self) -> bool:
        return self.built

    def manifest(self) -> dict[str, object]:
        return {"embedder": "another-model"} if self.built else {}


def test_hits_carry_both_lists_and_non_fused_modes_are_untouched(
    built: tuple[StatementIndex, CompanionIndex],
) -> None:
    index, second = built
    ensemble = ensemble_of(index, second, weight=1.0, candidates=10)
    hits = ensemble.search("bounded entire functions are constant", 3, SearchMode.HYBRID_FORMULA)
    assert hits[0].record.id == RECORDS[2].id and [h.rank for h in hits] == [1, 2, 3]
    assert {"dense", "bm25", "dense2"} <= set(hits[0].channel_ranks)
    assert hits[0].score >= hits[1].score >= hits[2].score
    for mode in (SearchMode.BM25, SearchMode.DENSE, SearchMode.FORMULA):
        plain = first_stage(index, method="linear").search("compact closed", 3, mode)
        assert [h.record.id for h in ensemble.search("compact closed", 3, mode)] == [h.record.id for h in plain]
    assert ensemble.search("   ", 3) == []


def test_the_second_list_moves_statements_by_its_weight(built: tuple[StatementIndex, CompanionIndex]) -> None:
    index, _ = built
    query = "bounded entire functions are constant"
    first = [h.record.id for h in first_stage(index, method="linear").search(query, 5, SearchMode.HYBRID)]
    promoted = list(reversed(first))
    unweighted = ensemble_of(index, FixedList(promoted), weight=0.0)  # type: ignore[arg-type]
    assert [h.record.id for h in unweighted.search(query, 5)] == first
    assert unweighted.run(query, 5).second_embedding == ""  # weight 0: not fused, and the result says so
    heavy = ensemble_of(index, FixedList(promoted), weight=100.0)  # type: ignore[arg-type]
    assert [h.record.id for h in heavy.search(query, 5)] == promoted
    assert heavy.run(query, 5).second_embedding == "test:fixed-list"
    # A statement only the second list found still comes back whole, with its channel rank.
    outsider = next(r.id for r in MORE if r.id not in first[:2])
    only_second = ensemble_of(index, FixedList([outsider]), weight=100.0)  # type: ignore[arg-type]
    top = only_second.search(query, 2)[0]
    assert top.record.id == outsider and top.channel_ranks["dense2"] == 1


def test_filters_apply_to_the_second_list_too(built: tuple[StatementIndex, CompanionIndex]) -> None:
    index, _ = built
    only_propositions = SearchFilter(kinds=frozenset({"proposition"}))
    theorem = RECORDS[2].id  # a theorem, first in the second list
    ensemble = ensemble_of(index, FixedList([theorem, RECORDS[1].id]), weight=10.0)  # type: ignore[arg-type]
    hits = ensemble.search("compact", 5, SearchMode.HYBRID, only_propositions)
    assert [h.record.id for h in hits] == [RECORDS[1].id]


def test_unbuilt_vectors_fall_back_to_the_first_stage_and_say_so(
    built: tuple[StatementIndex, CompanionIndex], caplog: pytest.LogCaptureFixture
) -> None:
    index, _ = built
    ensemble = ensemble_of(index, FixedList([RECORDS[0].id], built=False))  # type: ignore[arg-type]
    with caplog.at_level(logging.WARNING):
        hits = ensemble.search("compact closed", 3)
        ensemble.search("compact closed", 3)
    assert [h.record.id for h in hits] == [
        h.record.id for h in first_stage(index, method="linear").search("compact closed", 3)
    ]
    assert all("dense2" not in h.channel_ranks for h in hits)
    warnings = [r.getMessage() for r in caplog.records if "build-dense2" in r.getMessage()]
    assert len(warnings) == 1 and "not built" in warnings[0]  # said once, not at every search


def test_a_formula_query_leans_on_the_first_stage(built: tuple[StatementIndex, CompanionIndex]) -> None:
    index, _ = built
    ensemble = ensemble_of(index, FixedList([r.id for r in reversed(MORE)]), weight=100.0)  # type: ignore[arg-type]
    assert ensemble.ranker.query_weight("compact Hausdorff spaces") == 100.0
    assert (
        ensemble.ranker.query_weight("$IM = M$") == ensemble.ranker.query_weight(r"\int_0^1 x^2 dx") == 0.0
    )  # bare LaTeX too
    assert 0.0 < ensemble.ranker.query_weight("when is $IM = M$ for a finitely generated module") < 100.0
    formula = [
        h.record.id for h in first_stage(index, method="linear").search("$IM = M$", 3, SearchMode.HYBRID_FORMULA)
    ]
    assert [h.record.id for h in ensemble.search("$IM = M$", 3, SearchMode.HYBRID_FORMULA)] == formula
