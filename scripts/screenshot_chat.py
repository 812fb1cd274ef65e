"""Screenshot of the chat answering a question on the demo corpus, for the README.

Runs `rag-app ui --demo` (the embedded default: the packaged Qwen2.5-Coder-1.5B on llama.cpp, the demo
corpus in a fresh index), asks one question in headless Chromium and saves the page once the answer is
complete:

    .venv/bin/python scripts/screenshot_chat.py [--out docs/chat.png] [--question "..."]
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
import time
from pathlib import Path

from playwright.sync_api import expect

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rag_app.serving.llm_server import free_port  # noqa: E402
from tests.browser import chat_page  # noqa: E402 (shared with the browser test)

DEFAULT_QUESTION = r"When is a real matrix $A$ orthogonally diagonalizable?"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "chat.png")
    parser.add_argument("--question", default=DEFAULT_QUESTION)
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="rag-app-screenshot-"))
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "RAG_APP_INDEX_DIR": str(work / "index"),
    }
    command = [sys.executable, "-m", "rag_app.cli", "ui", "--demo", "--port", str(port)]
    print(f"Starting the chat (demo ingest and the local LLM; log: {work / 'ui.log'}) ...")
    # Streamlit keeps a chat scrolled to its end: a viewport tall enough for the question, the answer and
    # its sources shows them all.
    with chat_page(command, url, env, work, {"width": 1400, "height": 2000}, seconds=900) as page:
        box = page.get_by_test_id("stChatInputTextArea")
        box.wait_for(timeout=300_000)
        started = time.monotonic()
        box.fill(args.question)
        box.press("Enter")
        # The caption under a finished answer gives its time, the model and the prompt ("12.3 s · ...").
        page.get_by_text(re.compile(r"\d\.\d s · ")).first.wait_for(timeout=600_000)
        print(f"Answered in {time.monotonic() - started:.1f} s")
        expect(page.get_by_test_id("stChatMessage").nth(1)).to_be_visible()
        page.wait_for_timeout(500)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(args.out))
    print(f"Saved {args.out}")


if __name__ == "__main__":
    main()
