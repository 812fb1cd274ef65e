"""A Chroma server on this machine: ``chroma run --path DIR --host HOST --port PORT``.

For `store.mode = "server"` on one machine, for the tests and for the benchmarks. A deployment runs its
own server (or Chroma's distributed deployment) and only sets ``store.url``.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx


class ChromaServerError(RuntimeError):
    pass


class ChromaServerProcess:
    def __init__(self, path: Path, port: int, host: str = "127.0.0.1", log_path: Path | None = None) -> None:
        self.path = path
        self.host = host
        self.port = port
        self.log_path = log_path or path.parent / f"chroma-server-{port}.log"
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def command(self) -> list[str]:
        # The `chroma` executable ships with the chromadb wheel, beside this interpreter.
        chroma = Path(sys.executable).parent / "chroma"
        executable = str(chroma) if chroma.exists() else shutil.which("chroma")
        if executable is None:
            raise ChromaServerError("the `chroma` command is not installed (it comes with the chromadb package)")
        return [executable, "run", "--path", str(self.path), "--host", self.host, "--port", str(self.port)]

    def start(self, timeout: float = 60.0) -> None:
        self.path.mkdir(parents=True, exist_ok=True)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "ANONYMIZED_TELEMETRY": "False"}
        with self.log_path.open("ab") as log:
            self._process = subprocess.Popen(
                self.command(), stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise ChromaServerError(f"chroma run exited with {self._process.returncode}{self._log_tail()}")
            if self.healthy():
                return
            time.sleep(0.2)
        self.stop()
        raise ChromaServerError(f"chroma run did not answer on {self.url} in {timeout:.0f} s{self._log_tail()}")

    def healthy(self) -> bool:
        try:
            return httpx.get(f"{self.url}/api/v2/heartbeat", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    def stop(self) -> None:
        if self._process is None:
            return
        if self._process.poll() is None:
            os.killpg(self._process.pid, signal.SIGTERM)
            try:
                self._process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self._process.pid, signal.SIGKILL)
                self._process.wait(timeout=10)
        self._process = None

    def _log_tail(self) -> str:
        if not self.log_path.is_file():
            return ""
        return f"; log {self.log_path} ends with:\n{self.log_path.read_text(errors='replace')[-1500:]}"

    def __enter__(self) -> ChromaServerProcess:
        self.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stop()
