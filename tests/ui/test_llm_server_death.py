"""The chat in a real browser across the death of its LLM server (`rag-app ui`, the real llama.cpp server).

The server is killed with SIGILL between two questions, as the CPU trap of a VM that advertises AMX killed
it: the second question is answered or refused with the reason within the deadline, and the sidebar tells
the truth (the server died of SIGILL and was restarted, on its safe build where one is installed).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rag_app.serving.llm_server import STATE_FILE, free_port
from tests.browser import chromium_executable, wait_for_streamlit
from tests.llm_servers import TEST_CHAT_MODEL

pytestmark = [pytest.mark.slow, pytest.mark.llm]
playwright = pytest.importorskip("playwright.sync_api", reason="playwright is a dev dependency: bash scripts/setup.sh")

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = Path(os.environ.get("RAG_APP_TEST_ARTIFACTS", ROOT / "test-artifacts"))
DEADLINE_S = 60
FINISHED = re.compile(r"\d+\.\d s · ")  # the caption under a finished answer


def test_the_chat_answers_after_its_llm_server_dies_of_sigill(demo_index_dir: Path, tmp_path: Path) -> None:
    index, data = tmp_path / "index", tmp_path / "data"
    shutil.copytree(demo_index_dir, index)
    port = free_port()
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "RAG_APP_DATA_DIR": str(data),
        "RAG_APP_LLM__LOCAL_MODEL": TEST_CHAT_MODEL,
        "RAG_APP_LLM__MAX_TOKENS": "24",
        "RAG_APP_LLM__DEADLINE_S": str(DEADLINE_S),
        "RAG_APP_ANSWERS__QUOTE__RANKER_SURE_MARGIN": "none",  # every answer asks the model
        "RAG_APP_ANSWERS__QUOTE__CHOOSER": "none",  # the model chooses
        # the safe build runs the model without vector instructions (a 700-token prompt reads in half a minute):
        # a short prompt keeps the answer after the restart quick
        "RAG_APP_ANSWERS__QUOTE__MAX_SOURCES": "2",
        "RAG_APP_ANSWERS__QUOTE__SOURCES_BUDGET_TOKENS": "120",
    }
    command = [sys.executable, "-m", "rag_app.cli", "ui", "--port", str(port), "--index", str(index)]
    log_path = tmp_path / "ui.log"
    with log_path.open("wb") as log:
        ui = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=tmp_path)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for_streamlit(url, ui, log_path, seconds=180)
        with playwright.sync_playwright() as driver:
            browser = driver.chromium.launch(
                executable_path=chromium_executable(),
                headless=True,
                args=["--headless", "--no-sandbox", "--disable-gpu"],
            )
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            try:
                page.goto(url)
                ask(page, "What is the spectral theorem for symmetric matrices?", 0)
                sidebar = page.get_by_test_id("stSidebar")
                playwright.expect(sidebar.get_by_text("🟢 LLM:", exact=False)).to_be_visible()

                pid = json.loads((data / STATE_FILE).read_text())["pid"]
                os.kill(pid, signal.SIGILL)  # the trap, delivered for real

                started = time.monotonic()
                answer = ask(page, "What does Fermat's little theorem say?", 1)
                assert time.monotonic() - started < DEADLINE_S + 15, "answered or refused within the deadline"
                # the sidebar says what happened, after the question (not as it was before it)
                playwright.expect(sidebar.get_by_text("SIGILL", exact=False)).to_be_visible(timeout=30_000)
                state = json.loads((data / STATE_FILE).read_text())
                assert state["pid"] != pid and "killed by SIGILL" in state["failure"]
                assert "not available" in answer or "Sources" in answer
                page.screenshot(path=str(ARTIFACTS / "chat-after-sigill.png"), full_page=True)
            except Exception:
                ARTIFACTS.mkdir(parents=True, exist_ok=True)
                page.screenshot(path=str(ARTIFACTS / "chat-sigill-failure.png"), full_page=True)
                raise
            finally:
                browser.close()
    finally:
        ui.send_signal(signal.SIGTERM)
        ui.wait(timeout=60)
    assert not (data / STATE_FILE).exists(), "`ui` stops the server it started (and its state file)"


def ask(page, question: str, turn: int) -> str:
    """Type ``question`` and wait for its answer's closing caption; the answer's text."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    box = page.get_by_test_id("stChatInputTextArea")
    box.wait_for(timeout=120_000)
    box.fill(question)
    box.press("Enter")
    message = page.get_by_test_id("stChatMessage").nth(2 * turn + 1)
    message.get_by_text(FINISHED).wait_for(timeout=(DEADLINE_S + 60) * 1000)
    return message.inner_text()
