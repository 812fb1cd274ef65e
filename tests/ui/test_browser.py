"""End to end: the real app in headless Chromium, driven with Playwright.

Asks a question on the demo corpus, checks that the answer's formula is rendered by KaTeX and that
its citation is a link to the numbered source, uploads a .tex file on the library page, and saves
screenshots under ``test-artifacts/`` (or ``$RAG_APP_TEST_ARTIFACTS``).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from rag_app.serving.llm_server import LLMServerProcess, free_port
from tests.browser import chromium_executable, wait_for_streamlit, wait_for_the_run_to_end
from tests.llm_servers import forced_output

# Trains, starts a server or browser, or reads real corpora: out of the fast tier.
pytestmark = pytest.mark.slow

playwright = pytest.importorskip("playwright.sync_api", reason="playwright is a dev dependency: bash scripts/setup.sh")

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = Path(os.environ.get("RAG_APP_TEST_ARTIFACTS", ROOT / "test-artifacts"))
QUESTION = "What is the spectral theorem for symmetric matrices?"
FORCED_ANSWER = r"A real symmetric matrix has an orthonormal basis of eigenvectors, $A = Q \Lambda Q^{T}$ [1]."
UPLOADED_TEX = r"""\documentclass{article}
\newtheorem{theorem}{Theorem}
\title{Uploaded notes}
\begin{document}
\begin{theorem}[Browser upload theorem]
Every finite integral domain $D$ is a field.
\end{theorem}
\end{document}
"""


@pytest.fixture
def chat_url(demo_index_dir: Path, tmp_path: Path, llm_server: LLMServerProcess) -> Iterator[str]:
    """`streamlit run ui/chat_app.py` on loopback over a copy of the demo index (the upload adds to it)."""
    index = tmp_path / "index"
    shutil.copytree(demo_index_dir, index)
    port = free_port()
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),  # the tree under test, whatever the installed copy
        "RAG_APP_INDEX_DIR": str(index),
        "RAG_APP_DATA_DIR": str(tmp_path / "data"),
        "RAG_APP_INGESTION__ISOLATE_PAPERS": "false",
        "RAG_APP_LLM__BASE_URL": llm_server.base_url,
        "RAG_APP_ANSWERS__STYLE": "synthesis",  # the forced answer below is a written one
        "RAG_APP_LLM__MAX_TOKENS": "120",
        # The model's words are forced so that the check of the rendering is exact.
        "RAG_APP_LLM__EXTRA_BODY": json.dumps(forced_output(FORCED_ANSWER)),
    }
    command = [
        sys.executable, "-m", "streamlit", "run", str(ROOT / "ui" / "chat_app.py"),
        "--server.headless", "true", "--server.port", str(port), "--server.address", "127.0.0.1",
        "--browser.gatherUsageStats", "false", "--client.showErrorDetails", "type",
    ]  # fmt: skip
    log = (tmp_path / "streamlit.log").open("wb")
    process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=tmp_path)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for_streamlit(url, process, tmp_path / "streamlit.log", seconds=60)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=30)
        log.close()


@contextmanager
def browser_page(failure_screenshot: str) -> Iterator[Any]:
    """A page of headless Chromium (1400 x 1100); where the test fails, a full-page screenshot under ARTIFACTS."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with playwright.sync_playwright() as driver:
        browser = driver.chromium.launch(
            executable_path=chromium_executable(), headless=True, args=["--headless", "--no-sandbox", "--disable-gpu"]
        )
        page = browser.new_page(viewport={"width": 1400, "height": 1100})
        try:
            yield page
        except Exception:
            page.screenshot(path=str(ARTIFACTS / failure_screenshot), full_page=True)
            raise
        finally:
            browser.close()


def test_the_chat_in_a_real_browser(chat_url: str, tmp_path: Path) -> None:
    with browser_page("chat-failure.png") as page:
        page.goto(chat_url)
        box = page.get_by_test_id("stChatInputTextArea")
        box.wait_for(timeout=120_000)
        box.fill(QUESTION)
        box.press("Enter")
        citation = page.locator('a[href="#src-0-1"]').first
        citation.wait_for(timeout=180_000)
        answer = page.get_by_test_id("stChatMessage").nth(1)
        playwright.expect(answer.locator(".katex").first).to_be_visible()  # the formula is rendered
        assert "Q" in answer.locator(".katex").first.inner_text()
        wait_for_the_run_to_end(page, seconds=120)  # CI once clicked while the answer was redrawn: no jump
        citation.click()
        playwright.expect(page.locator("#src-0-1")).to_be_attached()
        playwright.expect(page).to_have_url(re.compile(r"#src-0-1$"))
        playwright.expect(page.get_by_text("Spectral theorem").first).to_be_visible()
        page.screenshot(path=str(ARTIFACTS / "chat.png"))

        page.goto(f"{chat_url}/library")
        page.get_by_text("Add LaTeX sources").wait_for(timeout=60_000)
        upload = tmp_path / "uploaded-notes.tex"
        upload.write_text(UPLOADED_TEX)
        broken = tmp_path / "broken-eprint.tar.gz"  # not gzip at all: its own error, the other file still goes in
        broken.write_bytes(b"this is not an archive")
        page.locator('input[type="file"]').set_input_files([str(upload), str(broken)])
        page.get_by_role("button", name="Ingest", exact=True).click()
        page.get_by_text("uploaded-notes.tex: 1 papers, 1 statements").wait_for(timeout=120_000)
        page.get_by_text("broken-eprint.tar.gz:").first.wait_for(timeout=120_000)
        page.get_by_text("Done: 2 file(s)").wait_for(timeout=120_000)
        page.screenshot(path=str(ARTIFACTS / "library.png"), full_page=True)
    assert (ARTIFACTS / "chat.png").stat().st_size > 10_000


def test_the_next_results_and_the_search_page_in_a_real_browser(chat_url: str) -> None:
    """Issue 76, in the real app: a question, the list under its answer, an item opened, asking about it, and the
    Search page with a filter. The screenshots (``next-results*.png``, ``search-page.png`` under the artifacts
    folder) are the ones in docs/answers.md: copied to docs/ from a run."""
    with browser_page("next-results-failure.png") as page:
        page.goto(chat_url)
        box = page.get_by_test_id("stChatInputTextArea")
        box.wait_for(timeout=120_000)
        box.fill(QUESTION)
        box.press("Enter")
        page.get_by_text("Next results", exact=True).wait_for(timeout=180_000)
        answer = page.get_by_test_id("stChatMessage").nth(1)
        lines = answer.get_by_test_id("stExpander").filter(has_text=" — ")
        playwright.expect(lines).to_have_count(20)  # one line each, twenty at first
        first_line = lines.first
        first_line.scroll_into_view_if_needed()
        page.screenshot(path=str(ARTIFACTS / "next-results.png"))

        wait_for_the_run_to_end(page, seconds=120)
        first_line.locator("summary").click()  # opens: the statement, its links, ask about it, quote it
        ask_about = page.get_by_role("button", name="Ask about it")
        ask_about.wait_for(timeout=60_000)
        playwright.expect(page.get_by_role("button", name="Quote it")).to_be_visible()
        ask_about.scroll_into_view_if_needed()
        page.screenshot(path=str(ARTIFACTS / "next-results-opened.png"))
        ask_about.click()
        playwright.expect(box).to_have_value(re.compile(r"^What does .+ say, and when does it apply\?$"))
        page.screenshot(path=str(ARTIFACTS / "next-results-ask-about-it.png"))

        page.goto(f"{chat_url}/search")
        query = page.get_by_label("Search the statements")
        query.wait_for(timeout=120_000)
        query.fill("Sylow subgroups are conjugate")
        query.press("Enter")
        results = page.get_by_test_id("stExpander").filter(has_text=" — ")
        playwright.expect(results).to_have_count(20, timeout=120_000)
        assert "Sylow" in results.first.inner_text()
        kinds = page.get_by_test_id("stSidebar").get_by_test_id("stMultiSelect").nth(1)  # sources, then kinds
        kinds.click()
        page.get_by_role("option", name="theorem", exact=True).click()
        page.keyboard.press("Escape")
        page.get_by_text("filter:", exact=False).first.wait_for(timeout=120_000)
        playwright.expect(results.first).to_contain_text("Theorem")
        page.screenshot(path=str(ARTIFACTS / "search-page.png"))
        # Asking about a result of the Search page goes to the chat, the question waiting in its input.
        wait_for_the_run_to_end(page, seconds=120)
        results.first.locator("summary").click()
        page.get_by_role("button", name="Ask about it").click()
        box = page.get_by_test_id("stChatInputTextArea")
        playwright.expect(box).to_have_value(re.compile(r"^What does Theorem.+\?$"), timeout=120_000)
    assert (ARTIFACTS / "search-page.png").stat().st_size > 10_000
