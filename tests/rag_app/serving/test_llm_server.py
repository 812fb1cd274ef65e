"""Which server `llm serve` starts, with what command line, and that stopping it stops all it spawned.

A stand-in `vllm` executable (a tiny HTTP server that also spawns a child) plays vLLM here; the real
vLLM runs the same code in scripts/vllm_cpu_check.sh.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from rag_app.serving.llm_server import LlamaCppServer, LLMServerError, VLLMServer, physical_cores, server_from_settings
from rag_app.settings import LlamaCppSettings
from tests.conftest import make_settings

FAKE_VLLM = textwrap.dedent(
    """\
    #!{python}
    # Stands in for `vllm serve MODEL ...`: records its arguments, spawns a child, serves /v1/models and
    # one-token chat completions (the warm-up).
    import json, subprocess, sys
    from http.server import BaseHTTPRequestHandler, HTTPServer
    args = sys.argv[1:]
    option = lambda name: args[args.index(name) + 1]
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    with open({record!r}, "w") as handle:
        json.dump({{"args": args, "child": child.pid}}, handle)
    if "--fail" in args:
        print("CUDA error: no kernel image is available", flush=True)
        sys.exit(3)
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            body = json.dumps({{"data": [{{"id": option("--served-model-name"), "max_model_len": 2048}}]}}).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        def do_POST(self):  # the warm-up's one token
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            message = {{"role": "assistant", "content": "2"}}
            body = json.dumps({{"id": "x", "object": "chat.completion", "created": 0, "model": "m",
                               "choices": [{{"index": 0, "message": message, "finish_reason": "length"}}]}}).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        def log_message(self, *a):
            pass
    HTTPServer((option("--host"), int(option("--port"))), Handler).serve_forever()
    """
)


@pytest.fixture
def fake_vllm(tmp_path: Path) -> tuple[Path, Path]:
    record = tmp_path / "vllm-args.json"
    executable = tmp_path / "bin" / "vllm"
    executable.parent.mkdir()
    executable.write_text(FAKE_VLLM.format(python=sys.executable, record=str(record)))
    executable.chmod(0o755)
    return executable, record


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    status = Path(f"/proc/{pid}/stat").read_text().split()[2] if Path(f"/proc/{pid}/stat").exists() else "X"
    return status != "Z"


def vllm_settings(tmp_path: Path, executable: Path | str, **vllm: object):
    settings = make_settings(tmp_path)
    settings.llm.server = "vllm"
    settings.llm.vllm.executable = str(executable)
    settings.llm.vllm.model = "/models/Qwen2.5-7B-Instruct"
    for name, value in vllm.items():
        setattr(settings.llm.vllm, name, value)
    return settings


def test_vllm_is_started_with_the_settings_command_line(tmp_path: Path, fake_vllm: tuple[Path, Path]) -> None:
    executable, record = fake_vllm
    settings = vllm_settings(tmp_path, executable, tensor_parallel_size=2, max_model_len=16384)
    server = server_from_settings(settings)
    assert isinstance(server, VLLMServer) and server.model_alias == "Qwen2.5-7B-Instruct"
    command = server.command()
    assert command[:3] == [str(executable), "serve", "/models/Qwen2.5-7B-Instruct"]
    assert command[command.index("--tensor-parallel-size") + 1] == "2"
    assert command[command.index("--max-model-len") + 1] == "16384"
    with server:
        assert server.running
        child = json.loads(record.read_text())["child"]
        assert alive(child)
    assert not server.running
    deadline = time.monotonic() + 10
    while alive(child) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not alive(child), "stopping the server stops what it spawned"


def test_a_server_that_exits_at_start_is_reported_with_its_log(tmp_path: Path, fake_vllm: tuple[Path, Path]) -> None:
    executable, _ = fake_vllm
    settings = vllm_settings(tmp_path, executable, extra_args=["--fail"])
    server = server_from_settings(settings)
    with pytest.raises(LLMServerError, match=r"(?s)vLLM server exited with code 3.*no kernel image"):
        server.start()


def test_missing_vllm_falls_back_to_llama_cpp_and_says_so(tmp_path: Path) -> None:
    settings = vllm_settings(tmp_path, tmp_path / "no-such-vllm")
    notes: list[str] = []
    server = server_from_settings(settings, model="smollm2-135m-instruct", notes=notes)
    assert isinstance(server, LlamaCppServer) and server.model_alias == "smollm2-135m-instruct"
    assert notes and "vLLM is not installed" in notes[0] and "pip install" in notes[0]
    settings.llm.server = "auto"
    quiet: list[str] = []
    assert isinstance(server_from_settings(settings, model="smollm2-135m-instruct", notes=quiet), LlamaCppServer)
    assert quiet == []


def test_llama_cpp_runs_with_the_cpu_settings_chosen_by_measurement(tmp_path: Path) -> None:
    settings = make_settings(tmp_path)
    command = server_from_settings(settings, model="smollm2-135m-instruct").command()
    flags = dict(zip(command[3::2], command[4::2], strict=False))
    assert flags["--n_threads"] == flags["--n_threads_batch"] == str(physical_cores())
    assert flags["--logits_all"] == "False" and flags["--n_batch"] == "512" and "--draft_model" not in command
    settings.llm.threads = 1
    settings.llm.llama_cpp = LlamaCppSettings(batch_threads=2, kv_cache_type="q8_0", flash_attn=True, state_cache_mb=64)
    command = server_from_settings(settings, model="smollm2-135m-instruct").command()
    flags = dict(zip(command[3::2], command[4::2], strict=False))
    assert flags["--n_threads"] == "1" and flags["--n_threads_batch"] == "2" and flags["--type_k"] == "8"
    assert flags["--flash_attn"] == "True" and flags["--cache_size"] == str(64 << 20)


@pytest.mark.slow
def test_llm_serve_starts_vllm_writes_its_state_and_stops_it(tmp_path: Path, fake_vllm: tuple[Path, Path]) -> None:
    executable, record = fake_vllm
    data_dir = tmp_path / "data"
    env = {
        **os.environ, "RAG_APP_DATA_DIR": str(data_dir), "RAG_APP_LLM__SERVER": "vllm",
        "RAG_APP_LLM__VLLM__EXECUTABLE": str(executable), "RAG_APP_LLM__VLLM__MODEL": "/models/m",
    }  # fmt: skip
    command = [str(Path(sys.executable).parent / "rag-app"), "llm", "serve"]
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    state = data_dir / "llm-server.json"
    try:
        deadline = time.monotonic() + 60
        while not state.exists() and time.monotonic() < deadline and process.poll() is None:
            time.sleep(0.2)
        assert state.exists(), process.stdout.read() if process.poll() is not None else "no state file"
        assert json.loads(state.read_text())["server"] == "vLLM"
        child = json.loads(record.read_text())["child"]
    finally:
        process.send_signal(signal.SIGTERM)
        output = process.communicate(timeout=30)[0]
    assert "vLLM server (m) at http://127.0.0.1:" in output
    assert not state.exists()
    deadline = time.monotonic() + 10
    while alive(child) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not alive(child)
