"""`rag-app serve` stopped by SIGTERM (a service manager, a script) stops the llama.cpp server it started
(issue 61, defect 16: uvicorn raised SIGTERM again under Python's default handler, which killed the process
before its cleanup, leaving the LLM server running, ~1 GB, with no parent)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from rag_app.serving.llm_server import free_port
from tests.llm_servers import TEST_CHAT_MODEL

pytestmark = [pytest.mark.slow, pytest.mark.llm]
ROOT = Path(__file__).resolve().parents[3]


def children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.append(int(entry.name))
    return found


def alive(pid: int) -> bool:
    try:
        state = (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_sigterm_stops_the_llm_server_serve_started(demo_index_dir: Path, tmp_path: Path) -> None:
    index = tmp_path / "index"
    shutil.copytree(demo_index_dir, index)
    port = free_port()
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "RAG_APP_DATA_DIR": str(tmp_path / "data"),
        "RAG_APP_LLM__LOCAL_MODEL": TEST_CHAT_MODEL,
        "RAG_APP_LLM__MAX_TOKENS": "16",
        "RAG_APP_ANSWERS__QUOTE__RANKER_SURE_MARGIN": "none",  # every answer asks the model: it starts
        "RAG_APP_ANSWERS__QUOTE__CHOOSER": "none",  # the way before issue 92: the model chooses
    }
    log_path = tmp_path / "serve.log"
    with log_path.open("wb") as log:
        serve = subprocess.Popen(
            [sys.executable, "-m", "rag_app.cli", "serve", "--port", str(port), "--index", str(index), "--no-mcp"],
            stdout=log, stderr=subprocess.STDOUT, env=env, cwd=tmp_path,
        )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                assert serve.poll() is None, log_path.read_text()
                time.sleep(0.5)
        answer = httpx.post(f"{url}/v1/ask", json={"question": "What does Liouville's theorem say?"}, timeout=300)
        assert answer.status_code == 200, answer.text
        servers = [pid for pid in children(serve.pid) if "llama_cpp.server" in Path(f"/proc/{pid}/cmdline").read_text()]
        assert len(servers) == 1, log_path.read_text()
        serve.send_signal(signal.SIGTERM)
        assert serve.wait(timeout=60) == 0, log_path.read_text()
        deadline = time.monotonic() + 30
        while alive(servers[0]) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not alive(servers[0]), "the LLM server outlived `rag-app serve`"
        assert "Traceback" not in log_path.read_text()
    finally:
        if serve.poll() is None:
            serve.kill()
            serve.wait()
