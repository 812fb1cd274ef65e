"""A watched LLM server, with real processes that fail as a CPU trap, a hang or an exit make them fail:
checked by a warm-up before it counts as up, retried with the safe build after SIGILL, noticed on the next
question when it died, restarted once, never waited on past a deadline, and described truthfully."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import httpx
import pytest

from rag_app.serving.llm_client import LLMDeadlineError, LLMUnavailableError
from rag_app.serving.llm_connection import LLMConnection
from rag_app.serving.llm_server import (
    STATE_FILE,
    LlamaCppServer,
    LLMServerDiedError,
    LLMServerError,
    installed_llama_build,
    safe_cpu_library,
)
from rag_app.serving.server_process import exit_reason
from rag_app.serving.server_watch import WatchedServer
from tests.conftest import make_settings
from tests.llm_servers import ScriptedLLMServer, make_test_server

QUESTION = [{"role": "user", "content": "Which source answers?"}]


def scripted(tmp_path: Path, **options: object) -> ScriptedLLMServer:
    return ScriptedLLMServer(model_alias="scripted-model", startup_timeout_s=30, log_path=tmp_path / "server.log",
                             **options)  # fmt: skip


def connection_to(tmp_path: Path, watched: WatchedServer, **llm: object) -> LLMConnection:
    """An LLMConnection whose local server is ``watched`` (started here, as a first question would)."""
    settings = make_settings(tmp_path, llm={"retries": 1, **llm})
    connection = LLMConnection(settings)
    connection.watched = watched
    watched.start()
    return connection


def gone(pid: int | None) -> bool:
    try:
        os.kill(pid or 0, 0)
    except ProcessLookupError:
        return True
    return False


def test_exit_reasons_name_the_signal_and_what_sigill_means() -> None:
    assert exit_reason(7) == "exited with code 7"
    assert exit_reason(-signal.SIGILL).startswith("killed by SIGILL: the CPU advertised instructions it cannot run")
    assert "rag-app llm cpu" in exit_reason(-signal.SIGILL)
    assert exit_reason(-signal.SIGKILL).startswith("killed by SIGKILL (out of memory")
    assert exit_reason(-signal.SIGSEGV) == "killed by SIGSEGV"


def test_a_server_killed_by_sigill_at_its_warm_up_is_started_again_with_the_safe_build(tmp_path: Path) -> None:
    watched = WatchedServer(scripted(tmp_path, fail="sigill", after=0, safe_fail="none"), state_dir=tmp_path)
    try:
        watched.start()  # /v1/models answered at once; the first generation trapped
        assert watched.server.running and watched.server.fail == "none"
        health = watched.health()
        assert health.state == "up" and "killed by SIGILL: the CPU advertised" in (health.failure or "")
        state = json.loads((tmp_path / STATE_FILE).read_text())
        assert state["state"] == "up" and "SIGILL" in state["failure"] and state["pid"] == watched.server.pid
    finally:
        watched.stop()
    assert not (tmp_path / STATE_FILE).exists()


def test_without_a_safe_build_a_sigill_start_fails_with_the_reason_and_is_refused_until_the_cooldown(
    tmp_path: Path,
) -> None:
    watched = WatchedServer(scripted(tmp_path, fail="sigill", after=0), cooldown_s=60)
    with pytest.raises(LLMServerDiedError, match="killed by SIGILL") as caught:
        watched.start()
    assert caught.value.illegal_instruction
    health = watched.health()
    assert health.state == "down" and "SIGILL" in health.description
    started = time.monotonic()
    with pytest.raises(LLMServerError, match=r"SIGILL.*next restart is tried in"):
        watched.ensure_running()  # refused at once: no second start within the cooldown
    assert time.monotonic() - started < 1


def test_a_server_that_never_generates_its_first_token_is_hung_killed_and_reported(tmp_path: Path) -> None:
    server = scripted(tmp_path, fail="hang", after=0, warm_up_timeout_s=2)
    watched = WatchedServer(server)
    started = time.monotonic()
    with pytest.raises(LLMServerError, match=r"did not generate a token within 2 s \(hung\)"):
        watched.start()
    assert time.monotonic() - started < 15
    assert not server.running and watched.health().state == "down"


def test_a_server_that_dies_between_two_questions_is_restarted_once_and_answers(tmp_path: Path) -> None:
    # after=1: the warm-up is answered, then each server answers one question and exits with code 7.
    watched = WatchedServer(scripted(tmp_path, fail="exit", after=1))
    connection = connection_to(tmp_path, watched)
    try:
        first_pid = watched.server.pid
        assert connection.client().chat(QUESTION) == "[1]"
        deadline = time.monotonic() + 10
        while watched.server.exit_code() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert connection.health().state == "down" and "exited with code 7" in connection.health().description
        watched.server.fail = "none"  # the restarted server stays up
        assert connection.client().chat(QUESTION) == "[1]"  # noticed on this question, restarted, answered
        assert watched.server.pid != first_pid and watched.restarts == 1
        health = connection.health()
        assert health.state == "up" and "restarted after: the scripted server exited with code 7" in health.description
    finally:
        connection.close()


def test_a_server_killed_by_sigill_under_a_question_fails_that_one_and_answers_the_next(tmp_path: Path) -> None:
    watched = WatchedServer(scripted(tmp_path, fail="sigill", after=1, safe_fail="none"))
    connection = connection_to(tmp_path, watched)
    try:
        started = time.monotonic()
        with pytest.raises(LLMUnavailableError):
            connection.client().chat(QUESTION)
        assert time.monotonic() - started < 30
        assert connection.client().chat(QUESTION) == "[1]"  # restarted straight on the safe build
        assert watched.server.fail == "none" and "killed by SIGILL" in (connection.health().failure or "")
    finally:
        connection.close()


def test_a_call_to_a_hung_server_ends_at_its_deadline_and_the_server_is_killed_then_restarted(
    tmp_path: Path,
) -> None:
    watched = WatchedServer(scripted(tmp_path, fail="hang", after=1))
    connection = connection_to(tmp_path, watched, timeout_s=2.0, deadline_s=4.0)
    try:
        hung_pid = watched.server.pid
        started = time.monotonic()
        with pytest.raises(LLMDeadlineError, match="deadline of 4 s"):
            connection.client().chat(QUESTION)
        assert time.monotonic() - started < 8, "the deadline bounds the call, retries included"
        assert gone(hung_pid) and "killed and restarts on the next question" in (connection.health().failure or "")
        watched.server.fail = "none"  # the hang does not come back
        assert connection.client().chat(QUESTION) == "[1]"
        assert connection.health().state == "up"
    finally:
        connection.close()


def test_two_first_questions_at_once_start_one_server(tmp_path: Path) -> None:
    from concurrent.futures import ThreadPoolExecutor

    settings = make_settings(tmp_path)
    connection = LLMConnection(settings)
    starts: list[int] = []

    def start_local_server() -> str:
        starts.append(1)
        watched = WatchedServer(scripted(tmp_path))
        connection.watched = watched
        watched.start()
        return watched.base_url

    connection._start_local_server = start_local_server  # type: ignore[method-assign]
    try:
        with ThreadPoolExecutor(4) as pool:
            clients = list(pool.map(lambda _: connection.client(), range(4)))
        assert len(starts) == 1 and len({id(client) for client in clients}) == 1
    finally:
        connection.close()


@pytest.mark.llm
def test_the_real_llama_cpp_server_serves_on_its_safe_cpu_library(tmp_path: Path) -> None:
    """What a SIGILL is retried with: the installed llama.cpp with the safe libggml-cpu.so preloaded."""
    safe = safe_cpu_library()
    build = installed_llama_build()
    if safe is None:
        assert build.get("profile") in (None, "x64"), "setup builds the safe library beside every other build"
        pytest.skip("this environment's llama.cpp is the safe build itself (or was not built by setup)")
    server = make_test_server(tmp_path)
    assert isinstance(server, LlamaCppServer)
    server = server.safe_variant()
    assert server is not None and server.cpu_library == safe
    with server:  # started and warmed up: it generated a token
        maps = Path(f"/proc/{server.pid}/maps").read_text()
        loaded = {line.split()[-1] for line in maps.splitlines() if "libggml-cpu" in line}
        assert loaded == {str(safe)}, loaded
        reply = httpx.post(f"{server.base_url}/completions", json={"prompt": "1, 2, 3,", "max_tokens": 8}, timeout=120)
        assert reply.status_code == 200 and reply.json()["usage"]["completion_tokens"] > 0
