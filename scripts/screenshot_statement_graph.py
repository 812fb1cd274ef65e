"""Screenshot of the chat's source cards with the statement graph open: what a statement uses and what
uses it, for the notes and the docs.

Runs `rag-app ui --index DIR` with the language model left out (the sources are the point), asks one
question in headless Chromium, expands the first source's "Uses · Used by" and saves the page:

    .venv/bin/python scripts/screenshot_statement_graph.py --index DIR [--question "..."] [--out FILE.png]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rag_app.serving.llm_server import free_port  # noqa: E402
from tests.browser import chat_page  # noqa: E402 (shared with the browser test)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--index", type=Path, required=True)
    parser.add_argument("--question", default="Nakayama's lemma: IM = M for a finite module")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "statement-graph.png")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="rag-app-screenshot-"))
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "RAG_APP_LLM__BASE_URL": "http://127.0.0.1:9/v1",
           "RAG_APP_LLM__RETRIES": "0"}  # fmt: skip
    command = [sys.executable, "-m", "rag_app.cli", "ui", "--index", str(args.index), "--port", str(port)]
    with chat_page(command, url, env, work, {"width": 1400, "height": 2600}, seconds=300) as page:
        box = page.get_by_test_id("stChatInputTextArea")
        box.wait_for(timeout=300_000)
        box.fill(args.question)
        box.press("Enter")
        links = page.get_by_text("Used by", exact=False).filter(has_text="Uses").first
        links.wait_for(timeout=300_000)
        links.click()
        page.wait_for_timeout(1500)  # the expander open: its buttons name the statements
        page.get_by_text("[1] ", exact=False).first.scroll_into_view_if_needed()  # the first card's heading
        page.wait_for_timeout(500)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(args.out))
    print(f"Saved {args.out}")


if __name__ == "__main__":
    main()
