"""A Chroma server on this machine: ``chroma run --path DIR --host HOST --port PORT``.

For `store.mode = "server"` on one machine, for the tests and for the benchmarks. A deployment runs its
own server (or Chroma's distributed deployment) and only sets ``store.url``.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import ClassVar

import httpx

from rag_app.serving.server_process import ServerDiedError, ServerProcess


class ChromaServerError(RuntimeError):
    pass


class ChromaServerDiedError(ServerDiedError, ChromaServerError):
    """The Chroma server's process ended by itself."""


class ChromaServerProcess(ServerProcess):
    kind: ClassVar[str] = "Chroma"
    error: ClassVar[type[RuntimeError]] = ChromaServerError
    died_error: ClassVar[type[ServerDiedError]] = ChromaServerDiedError

    def __init__(
        self,
        path: Path,
        port: int,
        host: str = "127.0.0.1",
        log_path: Path | None = None,
        startup_timeout_s: float = 60.0,
    ) -> None:
        self.path = path
        self.host = host
        self.port = port
        self.log_path = log_path or path.parent / f"chroma-server-{port}.log"
        self.startup_timeout_s = startup_timeout_s
        self._process = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def command(self) -> list[str]:
        # The `chroma` executable ships with the chromadb wheel, beside this interpreter.
        chroma = Path(sys.executable).parent / "chroma"
        executable = str(chroma) if chroma.exists() else shutil.which("chroma")
        if executable is None:
            raise ChromaServerError("the `chroma` command is not installed (it comes with the chromadb package)")
        return [executable, "run", "--path", str(self.path), "--host", self.host, "--port", str(self.port)]

    def environment(self) -> dict[str, str]:
        return {**os.environ, "ANONYMIZED_TELEMETRY": "False"}

    def start(self) -> None:
        self.path.mkdir(parents=True, exist_ok=True)
        if self.log_path is not None:
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
        super().start()

    def healthy(self) -> bool:
        try:
            return httpx.get(f"{self.url}/api/v2/heartbeat", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False
