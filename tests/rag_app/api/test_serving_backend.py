"""The one backend behind the HTTP API and the MCP server (issue 61, defects 1-5, 7, 8): slots held while their
threads run, one deadline per request, the retrieval of an answer in the search limit, streams that give their
turn back however they end, one error map with redacted texts, and one index however many first callers.

Units: a stand-in for MathRAG whose searches and answers sleep (the real routes have their tests in
test_http_api.py and test_mcp_tools.py)."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Generator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import anyio
import pytest
from fastapi.testclient import TestClient
from mcp import Client
from starlette.requests import ClientDisconnect

import retriever.deadline as deadline
from rag_app import MathRAG
from rag_app.answering.answer import AnswerStream
from rag_app.api.guards import AskQueue
from rag_app.api.http_app import ReleasingStream, create_app
from rag_app.api.mcp_tools import build_mcp_server
from rag_app.api.serving_backend import DeadlineError, ServingBackend
from rag_app.settings import ApiSettings, Settings
from retriever.store.marf_index import MarfIndexError
from tests.conftest import make_settings


class SlowRag:
    """Searches and answers that take ``seconds``, counting the threads at work at once."""

    def __init__(self, tmp_path: Path, seconds: float = 0.5, **limits: Any) -> None:
        self.settings = Settings(data_dir=tmp_path / "data", index_dir=tmp_path / "index")
        self.settings.api = ApiSettings.model_validate(self.settings.api.model_dump() | limits)
        self.seconds = seconds
        self.running = self.most_running = 0
        self.events: list[tuple[str, float]] = []
        self._lock = threading.Lock()

    def _work(self, name: str) -> None:
        with self._lock:
            self.running += 1
            self.most_running = max(self.most_running, self.running)
            self.events.append((f"{name} starts", time.monotonic()))
        time.sleep(self.seconds)
        with self._lock:
            self.running -= 1
            self.events.append((f"{name} ends", time.monotonic()))

    def search(self, *args: object, **kwargs: object) -> list[object]:
        self._work("search")
        return []

    def ask_stream(self, question: str, k: int | None = None) -> SimpleNamespace:
        self._work("retrieval")
        return SimpleNamespace(sources=[], result=lambda: (self._work("answer"), SimpleNamespace(text=question))[1])


def test_timed_out_searches_keep_their_slot_until_their_thread_ends(tmp_path: Path) -> None:
    # Defect 2: a search past its time limit freed its slot while its thread ran on; threads piled up.
    rag = SlowRag(tmp_path, seconds=0.6, max_concurrent_searches=1, search_timeout_s=0.2)
    backend = ServingBackend(rag)  # type: ignore[arg-type]

    async def three_searches() -> list[BaseException | None]:
        outcomes = await asyncio.gather(*(backend.in_turn(rag.search) for _ in range(3)), return_exceptions=True)
        await asyncio.sleep(0.8)  # the first thread ends; nothing else had started
        return outcomes  # type: ignore[return-value]

    outcomes = asyncio.run(three_searches())
    assert all(isinstance(outcome, DeadlineError) for outcome in outcomes), outcomes
    assert rag.most_running == 1
    assert [name for name, _ in rag.events] == ["search starts", "search ends"]  # the other two never ran
    assert backend.searches_running == 0


def test_the_retrieval_of_an_answer_waits_its_turn_among_the_searches(tmp_path: Path) -> None:
    # Defect 1: /v1/ask ran its retrieval outside the search limit.
    rag = SlowRag(tmp_path, seconds=0.4, max_concurrent_searches=1)
    backend = ServingBackend(rag)  # type: ignore[arg-type]

    async def search_and_ask() -> None:
        search = asyncio.ensure_future(backend.in_turn(rag.search))
        await asyncio.sleep(0.05)  # the search holds the one slot
        await backend.ask("Is it?")
        await search

    asyncio.run(search_and_ask())
    assert rag.most_running == 1
    names = [name for name, _ in rag.events]
    assert names == ["search starts", "search ends", "retrieval starts", "retrieval ends", "answer starts",
                     "answer ends"]  # fmt: skip


def test_an_answer_has_one_deadline_for_its_wait_and_its_writing(tmp_path: Path) -> None:
    # Defect 5: ask_timeout_s was applied to the wait in the queue, then again to the answer.
    rag = SlowRag(tmp_path, seconds=0.4, ask_timeout_s=1.2, max_concurrent_asks=1)
    backend = ServingBackend(rag)  # type: ignore[arg-type]

    async def two_asks() -> tuple[float, BaseException | None]:
        first = asyncio.ensure_future(backend.ask("first"))  # holds the LLM for 0.8 s
        await asyncio.sleep(0.05)
        started = time.monotonic()
        try:
            await backend.ask("second")  # waits 0.75 s, then needs 0.8 s more: past 1.2 s from its start
            error = None
        except DeadlineError as raised:
            error = raised
        waited = time.monotonic() - started
        await first
        await asyncio.sleep(1.0)  # the second's threads end (they hold the LLM until then)
        return waited, error

    waited, error = asyncio.run(two_asks())
    assert isinstance(error, DeadlineError) and 1.0 < waited < 1.8, waited  # at its 1.2 s deadline
    assert backend.asks.running == 0


class StagedRag(SlowRag):
    """A search of three stages of ``seconds`` each, checking the request's deadline before each, as the real
    searchers do (retriever.deadline)."""

    def search(self, *args: object, **kwargs: object) -> list[object]:
        for stage in ("first stage", "learned ranker", "graph counts"):
            deadline.check(f"the {stage}")
            self._work(stage)
        return []


def test_a_search_given_up_at_its_deadline_ends_at_its_next_stage_and_frees_its_slot(tmp_path: Path) -> None:
    # Threads used to run on past their deadline to the end of their work, holding a CPU and a slot.
    rag = StagedRag(tmp_path, seconds=0.6, max_concurrent_searches=1, search_timeout_s=0.9)
    backend = ServingBackend(rag)  # type: ignore[arg-type]

    async def late_search_then_another() -> tuple[BaseException | None, float]:
        try:
            await backend.in_turn(rag.search)
            error = None
        except DeadlineError as raised:
            error = raised
        started = time.monotonic()
        await backend.in_turn(lambda: "next")  # waits for the late search's thread to free the slot
        return error, time.monotonic() - started

    error, waited = asyncio.run(late_search_then_another())
    assert isinstance(error, DeadlineError)
    assert [name for name, _ in rag.events] == ["first stage starts", "first stage ends", "learned ranker starts",
                                                "learned ranker ends"]  # fmt: skip
    # The slot came back when the learned ranker ended (0.3 s after the deadline), not after a third stage (0.9 s).
    assert waited < 0.6, waited
    assert backend.searches_running == 0


def test_an_answer_given_up_at_its_deadline_stops_the_llm_and_gives_its_turn_back(tmp_path: Path) -> None:
    rag = SlowRag(tmp_path, seconds=0.0, ask_timeout_s=0.35, max_concurrent_asks=1)
    chunks_written: list[int] = []

    def chunks() -> Generator[str, None, object]:
        for number in range(20):
            time.sleep(0.1)
            chunks_written.append(number)
            yield f"{number} "
        return SimpleNamespace()

    rag.ask_stream = lambda question, k=None: AnswerStream([], chunks(), lambda text, *_: text)  # type: ignore[method-assign,assignment]
    backend = ServingBackend(rag)  # type: ignore[arg-type]

    async def ask_past_the_deadline() -> BaseException | None:
        try:
            await backend.ask("a question")
        except DeadlineError as raised:
            return raised
        return None

    assert isinstance(asyncio.run(ask_past_the_deadline()), DeadlineError)
    time.sleep(1.0)  # a model writing on would have written 13 chunks or more by now
    assert len(chunks_written) <= 7, chunks_written  # it stopped at the chunk after the deadline (0.35 s)
    assert backend.asks.running == 0  # and its turn at the LLM is free


def test_the_mcp_tools_time_limits_fire_and_share_the_search_limit(tmp_path: Path) -> None:
    # Defect 4: anyio.fail_after around a thread shielded from cancellation could not fire.
    rag = SlowRag(tmp_path, seconds=1.5, search_timeout_s=0.3, max_concurrent_searches=1)
    backend = ServingBackend(rag)  # type: ignore[arg-type]

    async def session() -> tuple[float, Any, int]:
        async with Client(build_mcp_server(backend)) as client:
            started = time.monotonic()
            result = await client.call_tool("search_statements", {"query": "ring", "k": 3})
            return time.monotonic() - started, result, backend.searches_running

    took, result, running = anyio.run(session)
    assert result.is_error and "time limit" in result.content[0].text
    assert took < 1.2, took  # the tool answered at its limit, not when the 1.5 s search ended
    assert running == 1  # the search's thread still held the one slot when the tool answered


def test_a_stream_gives_its_turn_back_when_its_client_left_before_the_first_chunk() -> None:
    # Defect 3: the slot was given back in the body generator's `finally`, never run for a client that left.
    released: list[bool] = []

    async def body() -> Any:
        yield "event: sources\n\n"

    async def gone(_message: object) -> None:
        raise OSError("the client left")

    async def receive() -> dict[str, str]:
        await asyncio.sleep(10)
        return {"type": "http.disconnect"}

    stream = ReleasingStream(body(), lambda: released.append(True), media_type="text/event-stream")
    with pytest.raises(ClientDisconnect):
        asyncio.run(stream({"type": "http", "asgi": {"spec_version": "2.4"}}, receive, gone))
    assert released == [True]


def test_every_known_error_gets_its_status_and_no_server_path(tmp_path: Path) -> None:
    # Defect 7: `mode=fusion` before `build-fusion` was a 500 quoting the server's paths.
    rag = SlowRag(tmp_path, seconds=0.0)
    index_dir = rag.settings.resolved_index_dir

    def not_built(*args: object, **kwargs: object) -> list[object]:
        raise MarfIndexError(f"{index_dir}/marf holds no fusion vectors: run `rag-app build-fusion`")

    rag.search = not_built  # type: ignore[method-assign]
    with TestClient(create_app(rag, mcp=False), base_url="http://127.0.0.1") as client:  # type: ignore[arg-type]
        answer = client.get("/v1/search", params={"query": "ring", "mode": "fusion"})
    assert answer.status_code == 409, answer.text
    reason = answer.json()["error"]["reason"]
    assert "build-fusion" in reason and str(index_dir) not in reason and "<index>/marf" in reason


def test_two_first_callers_open_one_index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Defect 8: the lazy index was built with no lock: two first searches opened two.
    rag = MathRAG(make_settings(tmp_path))
    opened: list[int] = []

    def slow_open(*args: object, **kwargs: object) -> object:
        opened.append(1)
        time.sleep(0.3)
        return object()

    monkeypatch.setattr("rag_app.search.opened_index.StatementIndex", slow_open)
    monkeypatch.setattr("rag_app.search.opened_index.make_embedder", lambda settings: None)
    threads = [threading.Thread(target=lambda: rag.index) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert opened == [1]


def test_a_stream_past_its_deadline_stops_the_llm_before_it_gives_its_turn_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Issue 77, defect 2: /v1/ask/stream read its chunks in threads without the request's deadline, so the
    # answer never saw it; at the time limit the turn at the LLM was given back with the LLM's stream open.
    rag = SlowRag(tmp_path, seconds=0.0, ask_timeout_s=0.5, max_concurrent_asks=1)
    happened: list[tuple[str, float]] = []

    def chunks() -> Generator[str, None, object]:
        try:
            for number in range(20):
                time.sleep(0.2)  # a CPU model writing
                happened.append(("chunk", time.monotonic()))
                yield f"{number} "
        finally:
            happened.append(("llm stream closed", time.monotonic()))
        return SimpleNamespace()

    rag.ask_stream = lambda question, k=None, **options: AnswerStream([], chunks(), lambda text, *_: text)  # type: ignore[method-assign,assignment]
    leave = AskQueue.leave

    def recorded_leave(queue: AskQueue) -> None:
        happened.append(("turn given back", time.monotonic()))
        leave(queue)

    monkeypatch.setattr(AskQueue, "leave", recorded_leave)
    app = create_app(rag, mcp=False)  # type: ignore[arg-type]
    with (
        TestClient(app, base_url="http://127.0.0.1") as client,
        client.stream("POST", "/v1/ask/stream", json={"question": "a question"}) as response,
    ):
        body = "".join(response.iter_text())
    assert "event: error" in body and '"status": 504' in body, body
    names = [name for name, _ in happened]
    assert "llm stream closed" in names and "turn given back" in names, names
    assert names.index("llm stream closed") < names.index("turn given back"), names  # stopped, then freed
    assert names.count("chunk") <= 4, names  # the model stopped at the deadline, not after 20 chunks
