"""llama.cpp built in the background while the chat searches and quotes (issue 94): the build's state as every
reader sees it, and answers that say the model is still being built instead of failing."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest

from rag_app import MathRAG
from rag_app.serving.llama_build import LlamaBuild
from rag_app.serving.llm_connection import LLMConnection
from rag_app.serving.llm_server import LLMNotBuiltError, published_state
from rag_app.serving.server_watch import publish_building
from tests.conftest import make_settings

SCRIPT = """#!/usr/bin/env bash
echo "[ 10%] Building C object vendor/llama.cpp/ggml.c.o"
echo "  [87/193] /usr/bin/g++ -c vendor/llama.cpp/llama.cpp"
sleep {sleep}
echo "{last}"
exit {code}
"""


@pytest.fixture
def not_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    """llama-cpp-python is installed in this venv: here it is not (yet)."""
    monkeypatch.setattr(LlamaBuild, "installed", staticmethod(lambda: False))


def fake_build(tmp_path: Path, sleep: float, code: int, last: str = "done") -> LlamaBuild:
    script = tmp_path / "scripts" / "build_llama_cpp.sh"
    script.parent.mkdir(parents=True, exist_ok=True)
    script.write_text(SCRIPT.format(sleep=sleep, code=code, last=last))
    return LlamaBuild(tmp_path / "data", script=script)


def test_a_background_build_reports_its_progress_then_why_it_failed(tmp_path: Path, not_installed: None) -> None:
    build = fake_build(tmp_path, sleep=1.5, code=2, last="error: cmake: no C++ compiler found")
    assert build.state().state == "none"
    started = time.monotonic()
    state = build.start_in_background()
    assert time.monotonic() - started < 1, "the command returns at once: the build runs beside it"
    deadline = time.monotonic() + 5
    while state.progress != 45 and time.monotonic() < deadline:
        time.sleep(0.1)
        state = build.state()
    assert state.state == "building" and state.progress == 45  # ninja's 87 of 193 steps
    assert "still being built" in state.describe() and "45% done" in state.describe()
    assert build.start_in_background().state == "building", "a running build is not started twice"
    state = build.wait(timeout_s=10, poll_s=0.1)
    assert state.state == "failed" and "exit code 2" in state.detail and "no C++ compiler found" in state.detail
    assert str(build.log) in state.describe()
    assert build.log.read_text().startswith("[ 10%]")


def test_a_build_whose_process_vanished_is_failed_not_building_for_ever(tmp_path: Path, not_installed: None) -> None:
    build = fake_build(tmp_path, sleep=0, code=0)
    build.directory.mkdir(parents=True)
    (build.directory / "run.json").write_text('{"pid": 999999, "started": 0}')  # no such process, no exit file
    state = build.state()
    assert state.state == "failed" and "ended without a word" in state.detail


def test_while_llama_cpp_is_built_answers_quote_and_say_so(
    demo_index_dir: Path, tmp_path: Path, not_installed: None
) -> None:
    """No local server can start before the build is in: the answer quotes the search's first result at once and
    says the model is still being built (the chooser off: the model would choose), and `status` says the same."""
    build = fake_build(tmp_path, sleep=30, code=0)
    quote = {"chooser": "none", "ranker_sure_margin": 1000.0}  # the model chooses: it is asked, and is not there
    settings = make_settings(tmp_path, index_dir=demo_index_dir, answers={"style": "quote", "quote": quote})
    build = LlamaBuild(settings.data_dir, script=build.script)
    build.start_in_background()
    try:
        rag = MathRAG(settings)
        health = rag.llm.health()
        assert health.state == "building" and "still being built" in health.description
        with pytest.raises(LLMNotBuiltError, match="still being built"):
            rag.llm.client()
        answer = rag.ask("What does Liouville's theorem say about bounded entire functions?")
        assert answer.sources and answer.text
        assert answer.llm_error is not None and "still being built" in answer.llm_error
    finally:
        os.killpg(json.loads((build.directory / "run.json").read_text())["pid"], signal.SIGTERM)


def test_the_chats_server_address_waits_for_the_build_and_refuses_at_once(tmp_path: Path) -> None:
    """`rag-app ui` gives the chat its server's address before the server exists and says in the state file that
    it waits for the build: the chat's connection answers without the model at once, not after refused retries."""
    settings = make_settings(tmp_path, llm={"base_url": "http://127.0.0.1:9/v1", "retries": 0})
    publish_building(settings.data_dir, "http://127.0.0.1:9/v1", "the build is 45% done")
    connection = LLMConnection(settings)
    started = time.monotonic()
    with pytest.raises(LLMNotBuiltError, match="45% done"):
        connection.client()
    assert time.monotonic() - started < 1
    assert connection.health().state == "building"
    publish_building(settings.data_dir, "http://127.0.0.1:9/v1", "the build failed: exit code 2", state="not built")
    assert connection.health().state == "down" and "exit code 2" in connection.health().description
    assert published_state(settings.data_dir)["state"] == "not built"


def test_the_chat_starts_its_server_once_the_build_is_in(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`rag-app ui`'s wait: the state file says "building" while the build runs; once llama.cpp is installed the
    server is started on the address the chat was given, and the chat's connection reaches it (no restart)."""
    import rag_app.cli.serve as serve
    from tests.llm_servers import ScriptedLLMServer

    settings = make_settings(tmp_path)
    installed = {"now": False}
    monkeypatch.setattr(LlamaBuild, "installed", staticmethod(lambda: installed["now"]))
    build = fake_build(tmp_path, sleep=30, code=0)
    monkeypatch.setattr(serve, "LlamaBuild", lambda data_dir: LlamaBuild(data_dir, script=build.script))
    started: list[int] = []

    def scripted(settings: object, port: int | None = None, **rest: object) -> ScriptedLLMServer:
        started.append(port or 0)
        return ScriptedLLMServer(model_alias="scripted", port=port or 0, log_path=tmp_path / "llm.log")

    monkeypatch.setattr(serve, "server_from_settings", scripted)
    waiting = serve.BuildWait(settings)
    watched = None
    try:
        assert waiting.poll() is None and published_state(settings.data_dir)["state"] == "building"
        chat = LLMConnection(settings.with_overrides({"llm.base_url": waiting.base_url, "llm.retries": 0}))
        with pytest.raises(LLMNotBuiltError):
            chat.client()
        installed["now"] = True
        watched = waiting.poll()
        assert watched is not None and started == [waiting.port] and waiting.done
        assert published_state(settings.data_dir)["state"] == "up"
        assert chat.client().chat([{"role": "user", "content": "hello"}], max_tokens=3)
    finally:
        if watched is not None:
            watched.stop()
        run = json.loads((LlamaBuild(settings.data_dir).directory / "run.json").read_text())
        os.killpg(run["pid"], signal.SIGTERM)
