"""The local OpenAI-compatible LLM server: llama.cpp's server with a packaged GGUF.

In production the app talks to ``vllm serve MODEL`` instead; the client does not care which.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

from rag_app.packaged_models import resolve_gguf
from rag_app.settings import Settings

STATE_FILE = "llm-server.json"


class LLMServerError(RuntimeError):
    """The local server could not be started."""


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def is_healthy(base_url: str, timeout_s: float = 2.0) -> bool:
    """True when ``GET {base_url}/models`` answers 200."""
    try:
        return httpx.get(f"{base_url.rstrip('/')}/models", timeout=timeout_s).status_code == 200
    except httpx.HTTPError:
        return False


@dataclass
class LocalLLMServer:
    """A ``llama_cpp.server`` child process on loopback, stopped by :meth:`stop`."""

    model_path: Path
    model_alias: str
    host: str = "127.0.0.1"
    port: int = 0
    context_window: int = 4096
    threads: int | None = None
    startup_timeout_s: float = 300.0
    log_path: Path | None = None

    def __post_init__(self) -> None:
        if self.port == 0:
            self.port = free_port(self.host)
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def start(self) -> None:
        command = [
            sys.executable, "-m", "llama_cpp.server",
            "--model", str(self.model_path),
            "--model_alias", self.model_alias,
            "--host", self.host,
            "--port", str(self.port),
            "--n_ctx", str(self.context_window),
        ]  # fmt: skip
        if self.threads:
            command += ["--n_threads", str(self.threads)]
        log = self.log_path.open("ab") if self.log_path else subprocess.DEVNULL
        # A session of its own so that stopping it also stops anything it spawned.
        self._process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + self.startup_timeout_s
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                hint = f"; see {self.log_path}" if self.log_path else ""
                raise LLMServerError(f"llama.cpp server exited with code {self._process.returncode}{hint}")
            if is_healthy(self.base_url, timeout_s=1.0):
                return
            time.sleep(0.25)
        self.stop()
        raise LLMServerError(f"llama.cpp server did not answer within {self.startup_timeout_s:.0f} s")

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)

    def write_state(self, data_dir: Path) -> Path:
        """Record this server so that other commands (ask, ui) reuse it instead of starting one."""
        data_dir.mkdir(parents=True, exist_ok=True)
        path = data_dir / STATE_FILE
        pid = self._process.pid if self._process else None
        path.write_text(json.dumps({"base_url": self.base_url, "model": self.model_alias, "pid": pid}))
        return path

    def __enter__(self) -> LocalLLMServer:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def running_server_url(data_dir: Path) -> str | None:
    """The URL of a server that ``llm serve`` left running, if it still answers."""
    path = data_dir / STATE_FILE
    if not path.is_file():
        return None
    try:
        base_url = json.loads(path.read_text())["base_url"]
    except (ValueError, KeyError):
        return None
    return base_url if is_healthy(base_url) else None


def local_server_from_settings(settings: Settings, model: str | None = None, port: int | None = None) -> LocalLLMServer:
    """A (not yet started) local server for ``model`` (default: the settings' packaged model)."""
    llm = settings.llm
    model_name = model or llm.local_model
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    alias = Path(model_name).stem if model_name.endswith(".gguf") else model_name
    return LocalLLMServer(
        model_path=resolve_gguf(model_name, settings.data_dir),
        model_alias=llm.model or alias,
        host=llm.host,
        port=llm.port if port is None else port,
        context_window=llm.context_window,
        threads=llm.threads,
        startup_timeout_s=llm.startup_timeout_s,
        log_path=settings.data_dir / "llm-server.log",
    )
