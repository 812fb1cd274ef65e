"""The serving backend under the chat (issue 61: the chat on the one backend): its sessions share the queue at
the LLM and the deadlines of the HTTP API, from plain threads. Units with a stand-in MathRAG."""

from __future__ import annotations

import threading
import time
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

from rag_app.answering.answer import AnswerStream
from rag_app.api.blocking_backend import BackendClosedError, BlockingBackend
from rag_app.api.guards import QueueFullError
from rag_app.api.serving_backend import DeadlineError
from rag_app.settings import ApiSettings, Settings
from retriever.deadline import DeadlinePassedError


class WritingRag:
    """Answers of ``chunks`` chunks, ``seconds`` apart; records what each question was asked with."""

    def __init__(self, tmp_path: Path, chunks: int = 3, seconds: float = 0.1, **limits: Any) -> None:
        self.settings = Settings(data_dir=tmp_path / "data", index_dir=tmp_path / "index")
        self.settings.api = ApiSettings.model_validate(self.settings.api.model_dump() | limits)
        self.chunks, self.seconds = chunks, seconds
        self.asked: list[tuple[str, dict[str, Any]]] = []
        self.writing: list[tuple[str, float, float]] = []

    def ask_stream(self, question: str, k: int | None = None, **options: Any) -> AnswerStream:
        self.asked.append((question, options))

        def chunks() -> Generator[str, None, object]:
            started = time.monotonic()
            for number in range(self.chunks):
                time.sleep(self.seconds)
                yield f"{number} "
            self.writing.append((question, started, time.monotonic()))
            return object()

        return AnswerStream([], chunks(), lambda text, *_: text)  # type: ignore[arg-type,return-value]

    def search(self, query: str) -> list[str]:
        time.sleep(self.seconds)
        return [query]


def answer(backend: BlockingBackend, question: str, **options: Any) -> str:
    with backend.answer(question, 3, **options) as stream:
        return "".join(stream)


def test_two_sessions_asking_at_once_take_turns_at_the_llm(tmp_path: Path) -> None:
    rag = WritingRag(tmp_path, max_concurrent_asks=1, max_queued_asks=4)
    backend = BlockingBackend(rag)  # type: ignore[arg-type]
    try:
        threads = [threading.Thread(target=answer, args=(backend, f"q{n}"), kwargs={"mode": "dense"}) for n in (1, 2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(10)
        assert len(rag.writing) == 2
        (_, _, first_end), (_, second_start, _) = sorted(rag.writing, key=lambda w: w[1])
        assert second_start >= first_end  # one prompt at a time, as the llama.cpp server serves
        assert {question for question, _ in rag.asked} == {"q1", "q2"}
        assert all(options == {"mode": "dense"} for _, options in rag.asked)  # the chat's options reach ask_stream
        assert backend.backend.asks.running == 0
        assert backend.in_turn(lambda: rag.search("ring")) == ["ring"]
    finally:
        backend.close()


def test_a_full_queue_and_a_deadline_reach_the_session_as_errors(tmp_path: Path) -> None:
    rag = WritingRag(tmp_path, chunks=30, seconds=0.05, max_concurrent_asks=1, max_queued_asks=1, ask_timeout_s=0.5)
    backend = BlockingBackend(rag)  # type: ignore[arg-type]
    outcomes: list[BaseException | str] = []

    def ask(question: str) -> None:
        try:
            outcomes.append(answer(backend, question))
        except (QueueFullError, TimeoutError) as error:
            outcomes.append(error)

    try:
        threads = [threading.Thread(target=ask, args=(f"q{n}",)) for n in range(3)]
        for thread in threads:
            thread.start()
            time.sleep(0.05)
        for thread in threads:
            thread.join(10)
        # one finds the queue full; the others stop at their deadline, waiting for their turn or writing
        assert sum(isinstance(outcome, QueueFullError) for outcome in outcomes) == 1, outcomes
        assert sum(isinstance(outcome, TimeoutError) for outcome in outcomes) == 2, outcomes
        assert any(isinstance(outcome, DeadlinePassedError) for outcome in outcomes)  # the first, mid-answer
        assert backend.backend.asks.running == 0 and backend.backend.asks.waiting == 0
        assert rag.writing == []  # no answer was written to its end past its deadline
    finally:
        backend.close()


def test_a_search_past_its_limit_is_a_deadline_error(tmp_path: Path) -> None:
    rag = WritingRag(tmp_path, seconds=0.5, search_timeout_s=0.1)
    backend = BlockingBackend(rag)  # type: ignore[arg-type]
    try:
        with pytest.raises(DeadlineError):
            backend.in_turn(lambda: rag.search("ring"))
    finally:
        backend.close()


def test_a_call_after_close_is_an_error_not_a_hang(tmp_path: Path) -> None:
    """Issue 86: ``BlockingBackend._wait`` waited with no timeout; a call after ``close()`` hung for good."""
    backend = BlockingBackend(WritingRag(tmp_path))  # type: ignore[arg-type]
    backend.close()
    started = time.monotonic()
    with pytest.raises(BackendClosedError, match="closed"):
        backend.in_turn(lambda: "never")
    assert time.monotonic() - started < 2
