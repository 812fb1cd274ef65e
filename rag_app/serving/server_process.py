"""A server the app starts as a child process on ``host:port``: started, health-checked, stopped.

Shared by the LLM servers (:mod:`rag_app.serving.llm_server`) and the local Chroma server
(:mod:`rag_app.serving.chroma_server`). The child gets a session of its own, so stopping it also stops
anything it spawned (vLLM's engine); a start that fails raises with the tail of the server's log.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from abc import ABC, abstractmethod
from pathlib import Path
from typing import ClassVar


class ServerProcess(ABC):
    """Subclasses set ``host``, ``port``, ``startup_timeout_s``, ``log_path`` and ``_process = None``."""

    kind: ClassVar[str] = "child"  # names the server in messages
    error: ClassVar[type[RuntimeError]] = RuntimeError  # what a failed start raises
    host: str
    port: int
    startup_timeout_s: float
    log_path: Path | None
    _process: subprocess.Popen[bytes] | None

    @abstractmethod
    def command(self) -> list[str]:
        """The command line that starts the server."""

    @abstractmethod
    def healthy(self) -> bool:
        """Whether the server answers (polled until it does)."""

    def environment(self) -> dict[str, str]:
        return dict(os.environ)

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process else None

    def start(self) -> None:
        """Start the process and wait until it is healthy; raise with the log's tail if it is not."""
        log = self.log_path.open("ab") if self.log_path else None
        try:
            self._process = subprocess.Popen(
                self.command(),
                stdout=log or subprocess.DEVNULL,
                stderr=subprocess.STDOUT,
                env=self.environment(),
                start_new_session=True,
            )
        except OSError as error:
            raise self.error(f"cannot start the {self.kind} server: {error}") from error
        finally:
            if log is not None:
                log.close()  # the child holds its own descriptor
        deadline = time.monotonic() + self.startup_timeout_s
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                code = self._process.returncode
                self._process = None
                raise self.error(f"the {self.kind} server exited with code {code}{self._log_hint()}")
            if self.healthy():
                return
            time.sleep(0.25)
        self.stop()
        raise self.error(
            f"the {self.kind} server did not answer within {self.startup_timeout_s:.0f} s{self._log_hint()}"
        )

    def stop(self, timeout_s: float = 30.0) -> None:
        """SIGTERM the process group, then SIGKILL what is left after ``timeout_s``."""
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)

    def kill(self) -> None:
        """SIGKILL at once, as a crash would (tests use it)."""
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)

    def _log_hint(self) -> str:
        if self.log_path is None or not self.log_path.is_file():
            return ""
        tail = self.log_path.read_bytes()[-1500:].decode("utf-8", "replace").strip()
        return f"; log {self.log_path} ends with:\n{tail}"

    def __enter__(self) -> ServerProcess:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
