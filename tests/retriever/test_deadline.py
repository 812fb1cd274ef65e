"""A request's deadline, checked between the stages of its search and the chunks of its answer (issue 61:
no thread left running past its deadline)."""

from __future__ import annotations

import threading
import time
from collections.abc import Generator
from dataclasses import dataclass, field
from types import SimpleNamespace

import pytest

import retriever.deadline as deadline
from ingestion import Source, StatementKind, StatementRecord
from rag_app.answering.answer import AnswerStream
from retriever.deadline import DeadlinePassedError, run_within, within
from retriever.search.duplicate_collapsing_searcher import DuplicateCollapsingSearcher
from retriever.search.learned_ranking_searcher import LearnedRankingSearcher
from retriever.search.rewrite_fusing_searcher import RewriteFusingSearcher
from retriever.search_mode import SearchMode
from retriever.types import SearchHit


def test_no_deadline_or_one_not_yet_passed_lets_every_stage_run() -> None:
    deadline.check("anything")  # no request: no deadline
    with within(time.monotonic() + 60):
        deadline.check("the first stage")


def test_a_passed_deadline_names_the_stage_it_stopped_before_and_ends_with_its_block() -> None:
    with within(time.monotonic() - 0.001), pytest.raises(DeadlinePassedError, match="before the learned ranker"):
        deadline.check("the learned ranker")
    deadline.check("after the block")  # the deadline was the block's alone


def test_a_worker_thread_sees_only_the_deadline_it_was_given() -> None:
    seen: list[str] = []

    def work() -> None:
        try:
            deadline.check("a stage")
            seen.append("ran")
        except DeadlinePassedError:
            seen.append("stopped")

    with within(time.monotonic() - 1):  # a thread's context starts empty: this does not reach it
        thread = threading.Thread(target=work)
        thread.start()
        thread.join()
    thread = threading.Thread(target=run_within, args=(time.monotonic() - 1, work))
    thread.start()
    thread.join()
    assert seen == ["ran", "stopped"]


@dataclass
class SlowFirstStage:
    """A first stage that takes ``seconds`` and counts its calls."""

    seconds: float
    calls: list[int] = field(default_factory=list)

    def search(self, query: str, k: int, mode: SearchMode | str = SearchMode.HYBRID, where=None) -> list[SearchHit]:
        self.calls.append(k)
        time.sleep(self.seconds)
        records = [StatementRecord(f"id{i}", Source.LOCAL, StatementKind.LEMMA, f"Lemma {i}.", "p") for i in range(k)]
        return [SearchHit(record, 1.0 - 0.01 * i, i + 1) for i, record in enumerate(records)]


class CountingRanker:
    mode = "hybrid-formula"

    def __init__(self) -> None:
        self.scored = 0

    def scores(self, query: str, hits: list[SearchHit], graph: object, hidden: tuple[str, ...]) -> list[float]:
        self.scored += 1
        return [0.0] * len(hits)


def test_a_search_past_its_deadline_stops_before_its_next_stage() -> None:
    first, ranker = SlowFirstStage(0.2), CountingRanker()
    searcher = LearnedRankingSearcher(first, ranker, candidates=20)  # type: ignore[arg-type]
    assert len(searcher.search("q", 5, SearchMode.HYBRID_FORMULA)) == 5 and ranker.scored == 1  # in time: every stage
    with within(time.monotonic() + 0.05), pytest.raises(DeadlinePassedError, match="learned ranker"):
        searcher.search("q", 5, SearchMode.HYBRID_FORMULA)
    assert ranker.scored == 1  # the ranker never ran for the late search


def test_the_statement_rewrite_and_deeper_passes_are_not_started_past_the_deadline() -> None:
    first, rewrites = SlowFirstStage(0.0), []
    fusing = RewriteFusingSearcher(first, lambda query: rewrites.append(query) or "rewritten", 1.0, 60, 10)  # type: ignore[arg-type]
    with within(time.monotonic() - 1), pytest.raises(DeadlinePassedError, match="statement rewrite"):
        fusing.search("q", 5, SearchMode.HYBRID)
    assert rewrites == [] and first.calls == []  # the LLM was not asked to rewrite for a request already late
    groups = SimpleNamespace(groups_of=lambda ids: {})
    collapsing = DuplicateCollapsingSearcher(first, groups)  # type: ignore[arg-type]
    with within(time.monotonic() - 1), pytest.raises(DeadlinePassedError, match="deeper pass"):
        collapsing.search("q", 5, SearchMode.HYBRID)
    assert first.calls == []


def test_an_answer_past_its_deadline_closes_the_llm_stream_at_its_next_chunk() -> None:
    written: list[str] = []
    closed = threading.Event()

    def chunks() -> Generator[str, None, object]:
        try:
            for word in ("one ", "two ", "three ", "four "):
                time.sleep(0.1)
                written.append(word)
                yield word
        finally:
            closed.set()  # closing the generator closes the HTTP stream to the LLM server
        return object()

    stream = AnswerStream([], chunks(), lambda text, generation, _: text)  # type: ignore[arg-type,return-value]
    with within(time.monotonic() + 0.15), pytest.raises(DeadlinePassedError, match="next chunk of the answer"):
        stream.result()
    assert closed.is_set()
    assert len(written) < 4  # the model stopped writing for a caller past its deadline
