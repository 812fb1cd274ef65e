"""The next results (issue 76): found by the answer's own search, listed one line each, grouped by place."""

from __future__ import annotations

from pathlib import Path

import pytest

from ingestion.records import Source, StatementKind, StatementRecord
from rag_app import MathRAG
from rag_app.search.result_list import first_words, grouped_by_place
from retriever import SearchFilter, SearchHit
from tests.conftest import make_settings

DOWN = "http://127.0.0.1:9/v1"  # nothing listens: the sources and the list come from the search alone
QUESTIONS = [
    "Is a bounded entire function constant?",
    "Sylow subgroups are conjugate",
    "What does Nakayama's lemma say about a finitely generated module $M$ with $IM = M$?",
    "When does a contraction on a complete metric space have a fixed point?",
    "$\\sum_{k=0}^n \\binom{n}{k} = 2^n$",
]


def test_first_words_cut_between_words_and_never_inside_a_formula() -> None:
    text = "Let $R$ be a ring and $M$ a finitely generated $R$-module with $IM = M$ where $I \\subset J(R)$. Then $M$."
    cut = first_words(text, 60)
    assert cut.endswith(" …") and len(cut) <= 62 and cut.count("$") % 2 == 0
    assert first_words("Short.", 60) == "Short."
    long_formula = "$$" + " + ".join(f"x_{i}" for i in range(40)) + "$$ holds for every choice of the terms."
    kept = first_words(long_formula, 30)
    assert kept.startswith(long_formula[: long_formula.index("$$", 2) + 2]), "a formula past the limit is kept whole"
    assert first_words("\\begin{align} a &= b \\\\ c &= d \\end{align} and so on and on and on", 12).count("\\end") == 1


def _hit(rank: int, paper: str, section: str) -> SearchHit:
    record = StatementRecord(
        id=f"{paper}-{rank}", paper_id=paper, kind=StatementKind.LEMMA, text="A statement.", source=Source.LOCAL,
        title=paper.title(), section=section,
    )  # fmt: skip
    return SearchHit(record, 1.0 / rank, rank)


def test_results_are_grouped_by_paper_and_section_where_the_best_of_them_ranks() -> None:
    hits = [_hit(6, "a", "One"), _hit(7, "b", "Two"), _hit(8, "a", "One"), _hit(9, "a", "Three"), _hit(10, "b", "Two")]
    groups = grouped_by_place(hits)
    assert [[hit.rank for hit in group.hits] for group in groups] == [[6, 8], [7, 10], [9]]
    assert groups[0].place == "A · One" and groups[2].place == "A · Three"


@pytest.fixture(scope="module")
def demo_searches(demo_index_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> MathRAG:
    tmp = tmp_path_factory.mktemp("next-results")
    rag = MathRAG(make_settings(tmp, index_dir=demo_index_dir, llm={"base_url": DOWN, "retries": 0}))
    yield rag
    rag.close()


@pytest.mark.parametrize("where", [None, SearchFilter(kinds=frozenset({"theorem", "lemma"}))], ids=["all", "filtered"])
def test_a_deeper_search_within_the_stable_depth_ranks_the_first_places_the_same(
    demo_searches: MathRAG, where: SearchFilter | None
) -> None:
    rag, k = demo_searches, 5
    mode = rag.settings.retrieval.mode
    depth = rag.search_stack.stable_depth(mode, where=where)
    assert depth >= k + 20, "room for twenty after the sources with the default stack"
    for question in QUESTIONS:
        shallow = rag.search(question, k, mode, where)
        deep = rag.search(question, depth, mode, where)
        assert [h.record.id for h in deep[:k]] == [h.record.id for h in shallow], question
        assert [h.score for h in deep[:k]] == [h.score for h in shallow], question


def test_an_answer_keeps_its_sources_and_lists_the_same_searchs_next_results(demo_searches: MathRAG) -> None:
    rag = demo_searches
    for question in QUESTIONS[:3]:
        answer = rag.ask(question)
        sources = [hit.record.id for hit in answer.retrieval.hits]
        assert sources == [hit.record.id for hit in rag.search(question, rag.settings.retrieval.top_k)]
        listed = answer.next_results
        assert len(listed) >= 20 and not {h.record.id for h in listed} & {h.record.id for h in answer.sources}
        ranks = [hit.rank for hit in listed]
        assert ranks == sorted(ranks) and len(set(ranks)) == len(ranks)
        assert all(hit.used_by_count is not None for hit in listed), "each shows what uses it, as a source does"
        assert answer.to_dict()["next_results"][0]["id"] == listed[0].record.id


def test_no_next_results_when_turned_off(demo_searches: MathRAG) -> None:
    settings = demo_searches.settings.model_copy(deep=True)
    settings.retrieval.next_results = 0
    with MathRAG(settings) as rag:
        answer = rag.ask(QUESTIONS[0])
    assert not answer.retrieval.next_hits
    assert len(answer.next_results) == len(answer.retrieval.hits) - len(answer.sources)
