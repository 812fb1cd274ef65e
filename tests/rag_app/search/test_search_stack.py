"""The one place searchers are composed, on the demo index (real Chroma and BM25 on disk)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from rag_app import MathRAG
from rag_app.search.search_stack import RunName, SearchStack, UnknownRunNameError
from retriever.search.channel_ranker import ChannelRanker
from retriever.search.citing_fusing_searcher import CitingFusingSearcher
from retriever.search.duplicate_collapsing_searcher import DuplicateCollapsingSearcher
from retriever.search.first_stage_searcher import FirstStageSearcher
from retriever.search.learned_ranking_searcher import LearnedRankingSearcher
from retriever.search.reranking_searcher import RerankingSearcher
from retriever.search.typed_notation_searcher import TypedNotationSearcher
from retriever.search_filter import SearchFilter
from retriever.search_mode import SearchMode
from retriever.store.chroma_store import ChromaStatementStore
from tests.conftest import make_settings


@pytest.fixture
def rag(demo_index_dir: Path, tiny_reranker_dir: Path, tmp_path: Path) -> MathRAG:
    return MathRAG(make_settings(tmp_path, index_dir=demo_index_dir, rerank={"model": str(tiny_reranker_dir)}))


def test_the_stages_are_composed_in_order_once_per_index(rag: MathRAG) -> None:
    stack = rag.search_stack
    assert stack is rag.search_stack
    reading = stack.statements(rerank=True, collapse=True)  # typed notation is read first (the default)
    assert isinstance(reading, TypedNotationSearcher) and stack.statements(rerank=True, collapse=True) is reading
    searcher = reading.statements
    assert isinstance(searcher, DuplicateCollapsingSearcher)
    reranking = searcher.statements
    assert isinstance(reranking, RerankingSearcher) and reranking is stack.reranking(learned=True)
    learned = reranking.index  # the packaged learned ranker is on by default (ranker.model = auto)
    assert isinstance(learned, LearnedRankingSearcher) and learned is stack.learned()
    first = learned.first
    assert isinstance(first, FirstStageSearcher) and first is stack.first_stage()
    assert isinstance(first.ranker, ChannelRanker) and first.ranker is stack.ranker
    # built once, reused by every search: the same objects each time they are asked for
    assert stack.statements(rerank=True, collapse=True, notation=False) is searcher
    citing = stack.statements(collapse=False, notation=False)  # the citing channel follows the ranker (0.1)
    assert isinstance(citing, CitingFusingSearcher) and citing is stack.citing() and citing.learned is learned
    assert stack.statements(collapse=False, notation=False, citing=False) is learned
    assert stack.statements(collapse=False, learned=False, notation=False) is first
    # no rewriter is asked for unless a search asks for the rewrite
    assert stack.statements(collapse=False, rewrite=False).statements is citing
    assert stack.reranking() is not reranking and stack.reranking().index is first
    # the second model is off here: asking for it gives the first stage alone
    assert stack.first_stage(second_embedding=True) is first
    with pytest.raises(ValueError, match=r"second_embedding\.model"):
        stack.ensemble()


def test_one_search_reads_chroma_once_for_its_hits(rag: MathRAG, monkeypatch: pytest.MonkeyPatch) -> None:
    rag.search("warm up", k=3)
    calls: list[int] = []
    original = ChromaStatementStore.get_with_vectors

    def counting_get(store: ChromaStatementStore, ids: list[str]) -> object:
        calls.append(len(ids))
        return original(store, ids)

    monkeypatch.setattr(ChromaStatementStore, "get_with_vectors", counting_get)  # records and vectors: one read
    for other in ("get", "vectors"):
        monkeypatch.setattr(
            ChromaStatementStore, other, lambda *args, name=other: pytest.fail(f"{name}: a second read")
        )
    for mode in SearchMode:
        if mode in (SearchMode.MARF, SearchMode.MARF_MAXSIM):
            continue  # MaRF is off in these settings
        calls.clear()
        hits = rag.search_stack.statements(collapse=False, learned=False).search("bounded entire function", 5, mode)
        assert hits and len(calls) == 1 and calls[0] <= 5, (mode, calls)
        calls.clear()  # the learned ranker reads its candidates' records in the same one call
        hits = rag.search_stack.statements(collapse=False).search("bounded entire function", 5, mode)
        assert len(hits) == 5 and len(calls) == 1 and calls[0] <= rag.settings.ranker.candidates, (mode, calls)


def test_a_filter_is_applied_once_after_fusion(rag: MathRAG, monkeypatch: pytest.MonkeyPatch) -> None:
    where = SearchFilter(kinds=frozenset({"definition"}))
    checked: list[str] = []
    original = SearchFilter.matches

    def counting_matches(self: SearchFilter, record: object) -> bool:
        checked.append(record.id)  # type: ignore[attr-defined]
        return original(self, record)  # type: ignore[arg-type]

    monkeypatch.setattr(SearchFilter, "matches", counting_matches)
    hits = rag.search("group", k=3, where=where)
    assert hits and all(hit.record.kind.value == "definition" for hit in hits)
    assert len(checked) == len(set(checked))  # no statement is checked twice


def test_run_names_name_a_mode_and_its_stages(rag: MathRAG) -> None:
    assert RunName.parse("hybrid-formula+dense2+rerank") == RunName(SearchMode.HYBRID_FORMULA, True, True)
    assert RunName.parse("bm25+rerank") == RunName(SearchMode.BM25, False, True)
    assert RunName.parse("dense") == RunName(SearchMode.DENSE, False, False)
    assert RunName.parse("hybrid-formula+dense2+ltr+rerank") == RunName(SearchMode.HYBRID_FORMULA, True, True, True)
    assert RunName.parse("dense+ltr") == RunName(SearchMode.DENSE, False, False, True)
    assert RunName.parse("hybrid-formula+ltr+notation") == RunName(SearchMode.HYBRID_FORMULA, False, False, True, True)
    assert RunName.parse("hybrid-formula+ltr+notation+rewrite").rewrite
    assert RunName.parse("hybrid-formula+ltr+citing+notation").citing
    for unknown in (
        "hybrid+rerank+dense2",
        "bm26",
        "+rerank",
        "hybrid+rerank+ltr",
        "hybrid+ltr+dense2",
        "hybrid+notation+ltr",
        "hybrid+rewrite+notation",
        "hybrid+notation+citing",
    ):
        with pytest.raises(UnknownRunNameError, match="unknown retriever"):
            RunName.parse(unknown)
    searcher, mode = rag.search_stack.for_run_name("hybrid+rerank")
    assert mode is SearchMode.HYBRID and searcher is rag.search_stack.reranking()
    # a plain mode is the first stage alone, whatever the settings turn on for search
    assert rag.search_stack.for_run_name("hybrid")[0] is rag.search_stack.first_stage()
    assert rag.search_stack.for_run_name("hybrid+ltr")[0] is rag.search_stack.learned()
    reading = rag.search_stack.for_run_name("hybrid+ltr+notation")[0]
    assert isinstance(reading, TypedNotationSearcher) and reading.statements is rag.search_stack.learned()
    with pytest.raises(UnknownRunNameError, match=r"second_embedding\.model"):
        rag.search_stack.for_run_name("hybrid+dense2")
    with pytest.raises(UnknownRunNameError, match=r"follows the learned ranker"):
        RunName.parse("hybrid-formula+citing")
    assert rag.search_stack.for_run_name("hybrid-formula+ltr+citing")[0] is rag.search_stack.citing()


def test_a_query_adapter_variant_shares_the_index(rag: MathRAG) -> None:
    variant = rag.search_stack.with_query_adapter("none")
    assert isinstance(variant, SearchStack) and variant.index is rag.index
    assert variant.ranker.query_adapter is None and variant.ranker is not rag.search_stack.ranker
    retrieval = rag.settings.retrieval.model_copy(update={"query_adapter": "none"})
    without = SearchStack(rag.settings.model_copy(update={"retrieval": retrieval}), rag.index)
    query = "order of a subgroup"
    plain = [h.record.id for h in variant.first_stage().search(query, 5, SearchMode.DENSE)]
    assert plain and plain == [h.record.id for h in without.first_stage().search(query, 5, SearchMode.DENSE)]


def test_ask_embeds_the_question_once(rag: MathRAG, monkeypatch: pytest.MonkeyPatch) -> None:
    embedder = rag.index.embedder
    encoded: list[str] = []
    one, many = type(embedder).embed_query, type(embedder).embed_queries

    def counting_one(self: object, text: str) -> object:  # through ONNX Runtime or torch
        encoded.append(text)
        return one(self, text)  # type: ignore[arg-type]

    def counting_many(self: object, texts: list[str], show_progress: bool = False) -> object:
        encoded.extend(texts)
        return many(self, texts, show_progress)  # type: ignore[arg-type]

    monkeypatch.setattr(type(embedder), "embed_query", counting_one)
    monkeypatch.setattr(type(embedder), "embed_queries", counting_many)
    rag.settings.llm.base_url = "http://127.0.0.1:9/v1"  # no LLM: the answer keeps its sources
    rag.settings.llm.retries = 0
    answer = rag.ask("What is the index of a subgroup?", k=3)
    assert answer.sources
    assert len(encoded) == 1, encoded
    # typed notation is read once, before the search and the relevance check, which embed the same query
    typed = rag.ask("Is F_q^* cyclic?", k=3)
    assert typed.search_query == "Is $\\mathbb{F}_q^*$ cyclic?" and typed.question == "Is F_q^* cyclic?"
    assert encoded[1:] == ["Is $\\mathbb{F}_q^*$ cyclic?"]  # the question embedded once, as it was read


def test_two_first_searches_at_once_both_use_the_learned_ranker(
    demo_index_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server's warm-up and its first request search at once: neither may find the ranker "looked up" and
    still missing (before, the second searched without it and the chat's quoting answer lost its choice)."""
    from retriever.models.learned_ranker import LearnedRanker

    looked_up = LearnedRanker.configured

    def slow(*args: object, **kwargs: object) -> object:
        time.sleep(0.5)  # loading takes a while; the other first search arrives meanwhile
        return looked_up(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(LearnedRanker, "configured", slow)
    rag = MathRAG(make_settings(tmp_path, index_dir=demo_index_dir))
    stack = rag.search_stack
    assert rag.settings.ranker.model == "auto"
    answers: list[bool] = []
    threads = [threading.Thread(target=lambda: answers.append(stack.learned_ranker_configured())) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert answers == [True, True]


def _built_in_two_threads(build: object) -> list[object]:
    """What ``build()`` returns to two threads that ask at once."""
    results: list[object] = []
    threads = [threading.Thread(target=lambda: results.append(build())) for _ in range(2)]  # type: ignore[operator]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


def test_two_first_searches_build_one_reranker_and_one_ensemble(
    rag: MathRAG, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 93: ``reranker`` and ``ensemble()`` were built without a lock: two first searches at once built two
    rerankers (each loading its model) and two ensembles."""
    import rag_app.search.search_stack as search_stack_module

    built: list[str] = []

    def slow(name: str) -> type:
        class Slow:
            def __init__(self, *args: object, **kwargs: object) -> None:
                built.append(name)
                time.sleep(0.2)  # long enough for the second caller to arrive while the first builds

        return Slow

    monkeypatch.setattr(search_stack_module, "CrossEncoderReranker", slow("reranker"))
    monkeypatch.setattr(search_stack_module, "EnsembleRanker", slow("ensemble"))
    stack = rag.search_stack
    rerankers = _built_in_two_threads(lambda: stack.reranker)
    stack.companion = object()  # type: ignore[assignment]  # the ensemble needs one; never read by the fake
    ensembles = _built_in_two_threads(stack.ensemble)
    assert built == ["reranker", "ensemble"]
    assert rerankers[0] is rerankers[1] and ensembles[0] is ensembles[1]


def test_ask_reads_typed_notation_once(rag: MathRAG, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 93: ``ask`` read the question's typed notation to show what it searched, then the search read it
    again (the same text, the same work)."""
    import retriever.search.typed_notation_searcher as searcher_module

    read: list[str] = []
    real = searcher_module.read_typed_notation
    monkeypatch.setattr(searcher_module, "read_typed_notation", lambda text: read.append(text) or real(text))
    rag.settings.llm.base_url = "http://127.0.0.1:9/v1"  # no LLM: the answer keeps its sources
    rag.settings.llm.retries = 0
    typed = rag.ask("Is F_q^* cyclic?", k=3)
    assert typed.search_query == "Is $\\mathbb{F}_q^*$ cyclic?" and typed.sources
    assert read == []  # the search took the query as read
    rag.search("F_q^* cyclic", k=3)
    assert read == ["F_q^* cyclic"]  # a search reads it itself
