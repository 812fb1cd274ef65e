"""The chat and `rag-app serve`, two processes on one single-slot LLM server, never send it two prompts at
once (issue 77: each process had its own queue, so both could write into a server that serves one).

Real processes: `rag-app serve` on loopback, and a process that answers the way the chat does (the
chat's backend, ``BlockingBackend``, over ``MathRAG``); both ask at the same moment. The LLM server is a
real server process (tests/scripted_llm_server.py) whose completions each take four seconds (the two
answers' prompts overlap unless one waits for the other) and which counts the most it ever had in progress.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import httpx
import pytest

from rag_app.serving.llm_server import free_port
from tests.llm_servers import ScriptedLLMServer
from tests.processes import read_line

pytestmark = pytest.mark.slow  # two processes and a server: about 45 s (tests/rag_app/serving/test_server_slots.py
# covers the slots in the fast tier)
ROOT = Path(__file__).resolve().parents[3]
CHAT_PROCESS = textwrap.dedent(
    """
    import sys
    from rag_app import MathRAG, Settings
    from rag_app.api.blocking_backend import BlockingBackend

    backend = BlockingBackend(MathRAG(Settings.load()))
    backend.search("Galois correspondence", 3)  # the models loaded: the answer below starts at once
    print("ready", flush=True)
    sys.stdin.readline()  # asked when the test says so: at the same moment as serve
    with backend.answer("What does the Galois correspondence say?", 3) as stream:
        for _ in stream.events():
            pass
        print("answered", stream.result().status.value, flush=True)
    """
)


def test_the_chat_and_serve_sharing_one_llm_server_never_send_it_two_prompts_at_once(
    demo_index_dir: Path, tmp_path: Path
) -> None:
    llm = ScriptedLLMServer(model_alias="scripted", log_path=tmp_path / "llm.log", seconds=4.0, reply="[1]")
    llm.start()
    port = free_port()
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "HF_HUB_OFFLINE": "1",
        "RAG_APP_DATA_DIR": str(tmp_path / "data"),
        "RAG_APP_INDEX_DIR": str(demo_index_dir),
        "RAG_APP_LLM__BASE_URL": llm.base_url,
        "RAG_APP_LLM__MAX_CONCURRENCY": "1",  # the server serves one prompt at a time: say so
        "RAG_APP_LLM__RETRIES": "0",
        "RAG_APP_API__WARM_UP": "false",
        "RAG_APP_ANSWERS__QUOTE__RANKER_SURE_MARGIN": "none",  # every answer asks the model
        "RAG_APP_ANSWERS__QUOTE__CHOOSER": "none",  # the way before issue 92: the model chooses
    }
    serve_log = (tmp_path / "serve.log").open("wb")
    serve = subprocess.Popen(
        [sys.executable, "-m", "rag_app.cli", "serve", "--port", str(port), "--index", str(demo_index_dir), "--no-mcp"],
        stdout=serve_log, stderr=subprocess.STDOUT, env=env, cwd=tmp_path,
    )  # fmt: skip
    chat = subprocess.Popen(
        [sys.executable, "-c", CHAT_PROCESS], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=(tmp_path / "chat.log").open("wb"), env=env, cwd=tmp_path, text=True,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        ends = time.monotonic() + 120
        while True:
            assert serve.poll() is None, (tmp_path / "serve.log").read_text()
            assert time.monotonic() < ends, "serve did not start"
            try:
                if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.3)
        assert httpx.get(f"{url}/v1/search", params={"query": "Liouville", "k": 3}, timeout=120).status_code == 200
        assert chat.stdout is not None and chat.stdin is not None
        assert read_line(chat.stdout, 120).strip() == "ready", (tmp_path / "chat.log").read_text()

        chat.stdin.write("ask\n")
        chat.stdin.flush()
        answer = httpx.post(f"{url}/v1/ask", json={"question": "What does Liouville's theorem say?"}, timeout=120)
        chatted = read_line(chat.stdout, 120).strip()
        assert chat.wait(60) == 0, (tmp_path / "chat.log").read_text()

        assert answer.status_code == 200, answer.text[:300]
        assert chatted.startswith("answered"), (tmp_path / "chat.log").read_text()
        stats = httpx.get(llm.base_url.removesuffix("/v1") + "/stats", timeout=5).json()
        assert stats["completions"] >= 2, stats  # both asked the model
        assert stats["most_in_flight"] == 1, stats  # and never at the same time
    finally:
        for process in (serve, chat):
            if process.poll() is None:
                process.terminate()
                process.wait(30)
        serve_log.close()
        llm.stop()
