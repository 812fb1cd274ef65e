"""The statement a query looks for, written by the LLM and searched beside the query (units: a scripted client)."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from ingestion.records import Source, StatementKind, StatementRecord
from prompts import load_prompt
from rag_app.search.statement_rewrite import StatementRewriter, usable_statement
from rag_app.serving.llm_client import LLMUnavailableError
from rag_app.serving.llm_server import LLMServerError
from retriever.search.rewrite_fusing_searcher import RewriteFusingSearcher
from retriever.search_filter import SearchFilter
from retriever.types import SearchHit
from tests.rag_app.answering.test_conversation import ScriptedClient


class NamedClient(ScriptedClient):
    model = "packaged-test-model"


def test_a_rewrite_is_asked_once_then_read_from_the_cache(tmp_path: Path) -> None:
    client = NamedClient("Statement: Every principal ideal domain is a unique factorization domain.")
    cache = tmp_path / "cache" / "rewrites.jsonl"
    rewriter = StatementRewriter(load_prompt("statement_rewrite"), lambda: client, cache)
    assert rewriter.rewrite("PID => UFD") == "Every principal ideal domain is a unique factorization domain."
    assert "PID => UFD" in client.messages[0][-1]["content"]
    again = StatementRewriter(load_prompt("statement_rewrite"), lambda: client, cache)  # a new process
    assert again.rewrite("PID => UFD").startswith("Every principal ideal domain")
    assert len(client.messages) == 1, "the second rewrite came from the cache"


def test_the_rewrites_kept_are_bounded_in_memory_and_on_disk(tmp_path: Path) -> None:
    # Issue 86: every distinct query stayed forever, in memory and in an append-only file.
    client = NamedClient("Every group of prime order is cyclic.")
    cache = tmp_path / "rewrites.jsonl"
    rewriter = StatementRewriter(load_prompt("statement_rewrite"), lambda: client, cache, max_entries=5)
    for number in range(23):
        rewriter.rewrite(f"query {number}")
    assert rewriter.cached() == 5, "the five used last stay in memory"
    lines = cache.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 10, f"the file is written anew past twice the bound: {len(lines)} lines"
    again = StatementRewriter(load_prompt("statement_rewrite"), lambda: client, cache, max_entries=5)
    calls = len(client.messages)
    assert again.rewrite("query 22") == "Every group of prime order is cyclic."
    assert len(client.messages) == calls, "the rewrite used last survived the file's rewriting"
    assert again.cached() == 5


def test_two_identical_queries_at_once_make_one_model_call(tmp_path: Path) -> None:
    started, release = threading.Event(), threading.Event()

    class SlowClient(NamedClient):
        def chat(self, messages, extra_body=None, max_tokens=None, temperature=None) -> str:
            started.set()
            release.wait(10)
            return super().chat(messages, extra_body, max_tokens, temperature)

    client = SlowClient("Every principal ideal domain is a unique factorization domain.")
    rewriter = StatementRewriter(load_prompt("statement_rewrite"), lambda: client, tmp_path / "rewrites.jsonl")
    results: list[str] = []
    first = threading.Thread(target=lambda: results.append(rewriter.rewrite("PID => UFD")))
    first.start()
    assert started.wait(10)
    second = threading.Thread(target=lambda: results.append(rewriter.rewrite("PID => UFD")))
    second.start()
    second.join(0.3)
    assert second.is_alive(), "the second caller waits for the first's rewrite"
    release.set()
    first.join(10)
    second.join(10)
    assert len(client.messages) == 1, "one model call for both"
    assert results == ["Every principal ideal domain is a unique factorization domain."] * 2


def test_a_broken_llm_or_an_unusable_reply_gives_no_rewrite(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    down = StatementRewriter(load_prompt("statement_rewrite"), lambda: NamedClient(LLMUnavailableError("down")))
    assert down.rewrite("Hall marriage thm") == ""
    assert "no statement rewrite for 'Hall marriage thm': down" in caplog.text  # said, not swallowed

    def no_server() -> NamedClient:
        raise LLMServerError("the packaged model would not start")

    # Issue 61, defect 9: the client was started outside the `try`, so a server that would not start failed
    # the whole search.
    assert StatementRewriter(load_prompt("statement_rewrite"), no_server).rewrite("Hall marriage thm") == ""
    broken = StatementRewriter(load_prompt("statement_rewrite"), lambda: NamedClient(TypeError("a bug")))
    with pytest.raises(TypeError):  # a bug is raised, not taken for an LLM that is down
        broken.rewrite("Hall marriage thm")
    assert usable_statement('"Hall marriage thm"', "Hall marriage thm") == ""
    assert usable_statement("x" * 700, "q") == ""


def _hit(id_: str, rank: int) -> SearchHit:
    record = StatementRecord(id=id_, source=Source.LOCAL, kind=StatementKind.THEOREM, text=id_, paper_id="p")
    return SearchHit(record, 1.0 / rank, rank)


class ListSearcher:
    def __init__(self, results: dict[str, list[str]]) -> None:
        self.results = results
        self.queries: list[str] = []

    def search(self, query: str, k: int, mode: str, where: SearchFilter | None = None) -> list[SearchHit]:
        self.queries.append(query)
        return [_hit(id_, rank) for rank, id_ in enumerate(self.results[query][:k], start=1)]


def test_the_rewrite_ranking_is_fused_by_rank_with_the_query_keeping_the_lead() -> None:
    inner = ListSearcher({"q": ["a", "b", "c"], "statement": ["c", "d", "a"]})
    fused = RewriteFusingSearcher(inner, lambda q: "statement", rewrite_weight=0.5).search("q", 3, "hybrid")
    assert [hit.record.id for hit in fused] == ["a", "c", "b"]  # a: first in the query, also found by the rewrite
    assert [hit.rank for hit in fused] == [1, 2, 3] and inner.queries == ["q", "statement"]


def test_without_a_rewrite_the_query_is_searched_alone() -> None:
    inner = ListSearcher({"q": ["a", "b"]})
    hits = RewriteFusingSearcher(inner, lambda q: "").search("q", 2, "hybrid")
    assert [hit.record.id for hit in hits] == ["a", "b"] and inner.queries == ["q"]
