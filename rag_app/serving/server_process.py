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

SIGILL_HINT = (
    "the CPU advertised instructions it cannot run (`rag-app llm cpu` shows which run here; "
    'docs/scale-and-serving.md, "The llama.cpp build, and a server that dies of SIGILL")'
)


def exit_reason(returncode: int) -> str:
    """How a child ended, in words: ``killed by SIGILL: ...`` or ``exited with code N``."""
    if returncode >= 0:
        return f"exited with code {returncode}"
    try:
        name = signal.Signals(-returncode).name
    except ValueError:
        name = f"signal {-returncode}"
    if name == "SIGILL":
        return f"killed by SIGILL: {SIGILL_HINT}"
    if name == "SIGKILL":
        return "killed by SIGKILL (out of memory, or killed by hand)"
    return f"killed by {name}"


class ServerDiedError(RuntimeError):
    """The server's process ended by itself; ``returncode`` says how (negative: a signal)."""

    def __init__(self, message: str, returncode: int) -> None:
        super().__init__(message)
        self.returncode = returncode

    @property
    def illegal_instruction(self) -> bool:
        return self.returncode == -signal.SIGILL


class ServerProcess(ABC):
    """Subclasses set ``host``, ``port``, ``startup_timeout_s``, ``log_path`` and ``_process = None``."""

    kind: ClassVar[str] = "child"  # names the server in messages
    error: ClassVar[type[RuntimeError]] = RuntimeError  # what a failed start raises
    died_error: ClassVar[type[ServerDiedError]] = ServerDiedError  # ... when the process ended by itself
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

    def warm_up(self) -> None:  # noqa: B027 (most servers need none: a hook, not an abstract method)
        """Called once the server is healthy: a server that must show it works does so here (and raises)."""

    def exit_code(self) -> int | None:
        """How the process ended, or None while it runs (or was never started)."""
        return None if self._process is None else self._process.poll()

    def start(self) -> None:
        """Start the process, wait until it is healthy and warmed up; raise with the log's tail if it is not
        (:class:`ServerDiedError`, a subclass of ``error`` too, when the process ended by itself)."""
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
                raise self._died()
            if self.healthy():
                self._warm_up_or_raise()
                return
            time.sleep(0.25)
        self.stop()
        raise self.error(
            f"the {self.kind} server did not answer within {self.startup_timeout_s:.0f} s{self._log_hint()}"
        )

    def _warm_up_or_raise(self) -> None:
        try:
            self.warm_up()
        except Exception as error:
            if self._process is not None and self._exits_within(2.0):
                raise self._died() from error  # it died under the warm-up: say how
            self.stop(timeout_s=5)
            raise
        if self._process is not None and self._process.poll() is not None:
            raise self._died()

    def _exits_within(self, seconds: float) -> bool:
        """Whether the process ends within ``seconds`` (a dropped connection comes before the exit status)."""
        assert self._process is not None
        try:
            self._process.wait(timeout=seconds)
        except subprocess.TimeoutExpired:
            return False
        return True

    def _died(self) -> RuntimeError:
        """The error for a process that ended by itself (forgotten: ``running`` is False from here)."""
        assert self._process is not None
        code = self._process.returncode
        self._process = None
        return self.died_error(f"the {self.kind} server {exit_reason(code)}{self._log_hint()}", code)

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


def process_alive(pid: int) -> bool:
    """Whether process ``pid`` runs (a zombie, dead and not yet reaped by its parent, does not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's: it exists
    stat = Path(f"/proc/{pid}/stat")
    try:
        return stat.read_text().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except (OSError, IndexError):
        return True  # no /proc: os.kill said it exists
