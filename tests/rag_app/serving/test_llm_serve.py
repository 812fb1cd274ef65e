"""`rag-app llm serve`: a real server process that other commands find and reuse."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rag_app import MathRAG
from rag_app.serving.llm_server import STATE_FILE, free_port
from tests.conftest import TEST_CHAT_MODEL, make_settings


@pytest.mark.llm
def test_llm_serve_is_reused_by_ask_and_stops_cleanly(demo_index_dir: Path, tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    env = {**os.environ, "RAG_APP_DATA_DIR": str(data_dir), "HF_HUB_OFFLINE": "1"}
    command = [str(Path(sys.executable).parent / "rag-app"), "llm", "serve", "--model", TEST_CHAT_MODEL]
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        state = data_dir / STATE_FILE
        deadline = time.monotonic() + 120
        while not state.exists() and time.monotonic() < deadline and process.poll() is None:
            time.sleep(0.25)
        assert state.exists(), process.stdout.read() if process.poll() is not None else "no state file"
        base_url = json.loads(state.read_text())["base_url"]
        assert base_url.startswith("http://127.0.0.1:")

        settings = make_settings(tmp_path, index_dir=demo_index_dir)  # no base_url: find the running server
        settings.llm.max_tokens = 16
        rag = MathRAG(settings)
        assert "started by `llm serve`" in rag.llm.status()
        answer = rag.ask("State the Tietze extension theorem.", k=2)
        assert answer.llm_error is None and answer.model == TEST_CHAT_MODEL
        assert rag.llm.server is None  # reused, not started
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(timeout=30)
    assert not (data_dir / STATE_FILE).exists()


@pytest.mark.llm
def test_ui_stops_the_chat_and_the_llm_server_it_started_on_sigterm(demo_index_dir: Path, tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    env = {
        **os.environ,
        "RAG_APP_DATA_DIR": str(data_dir),
        "RAG_APP_INDEX_DIR": str(demo_index_dir),
        "RAG_APP_LLM__LOCAL_MODEL": TEST_CHAT_MODEL,
        "HF_HUB_OFFLINE": "1",
    }
    command = [str(Path(sys.executable).parent / "rag-app"), "ui", "--port", str(free_port())]
    # Its own session, so that the processes it started can be found (and cleaned up) by group.
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, start_new_session=True)
    state = data_dir / STATE_FILE
    try:
        deadline = time.monotonic() + 120
        while not state.exists() and time.monotonic() < deadline and process.poll() is None:
            time.sleep(0.25)
        assert state.exists(), "the chat started the local LLM server"
        server_pid = json.loads(state.read_text())["pid"]
        time.sleep(2)  # the chat process is up
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=60)
        assert not state.exists()
        deadline = time.monotonic() + 30
        while _alive(server_pid) and time.monotonic() < deadline:
            time.sleep(0.25)
        assert not _alive(server_pid), "the LLM server outlived `rag-app ui`"
        assert not _group_members(process.pid), "the Streamlit chat outlived `rag-app ui`"
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}").exists() and "zombie" not in Path(f"/proc/{pid}/status").read_text().lower()


def _group_members(group: int) -> list[int]:
    members = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == group and fields[0] != "Z":
            members.append(int(stat.parent.name))
    return members
