"""A local LLM server that is watched: checked by a warm-up before it counts as up, retried with the safe
build after SIGILL, noticed when it dies or hangs, restarted once, and described truthfully.

One :class:`WatchedServer` wraps the server a process starts (``ask``, ``serve``, ``mcp`` and the chat
through :class:`~rag_app.serving.llm_connection.LLMConnection`; ``rag-app ui`` and ``llm serve`` in their
own loop). Where it shares the server with other processes it writes its state into the state file
(``llm-server.json``: ``state`` and ``failure``), so that the chat's sidebar can say why the server is down.
"""

from __future__ import annotations

import json
import logging
import signal
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from rag_app.serving.llm_server import (
    STATE_FILE,
    LLMServerDiedError,
    LLMServerError,
    LLMServerProcess,
)
from rag_app.serving.server_process import exit_reason

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class LLMHealth:
    state: str  # "up", "down", "restarting", "not started" or "building" (llama.cpp, in the background)
    description: str
    failure: str | None = None  # the last death, hang or failed start, in words (also after a restart)

    def to_dict(self) -> dict[str, str | None]:
        return {"state": self.state, "description": self.description, "failure": self.failure}


class WatchedServer:
    """The local server of this process. Thread-safe: the chat and the HTTP API ask from many threads."""

    def __init__(self, server: LLMServerProcess, cooldown_s: float = 60.0, state_dir: Path | None = None) -> None:
        self.server = server
        self.cooldown_s = cooldown_s
        self.state_dir = state_dir  # where to publish state for other processes (None: this process only)
        self.failure: str | None = None
        self.restarts = 0
        self._refused_until = 0.0
        self._lock = threading.RLock()

    @property
    def base_url(self) -> str:
        return self.server.base_url  # the same across restarts: clients keep their URL

    def start(self) -> None:
        """Start and warm up; after SIGILL, once more with the safe build. Raises :class:`LLMServerError`."""
        with self._lock:
            self._start(prefer_safe=False)

    def ensure_running(self) -> None:
        """Before each question: a server that died since the last one is described and restarted once; a
        restart that failed is not tried again for ``cooldown_s`` (questions are refused with the reason)."""
        with self._lock:
            if self.server.running:
                return
            code = self.server.exit_code()
            if code is not None:  # it ended by itself since the last question
                self.failure = f"the {self.server.kind} server {exit_reason(code)}"
                logger.warning("%s; restarting it once", self.failure)
                self.server.stop()  # forgets the dead process
                self._publish("restarting")  # the chat waits for it rather than fail at once
            elif time.monotonic() < self._refused_until:
                wait = self._refused_until - time.monotonic()
                raise LLMServerError(f"{self.failure} (the next restart is tried in {wait:.0f} s)")
            restart = code is not None or self.failure is not None
            self._start(prefer_safe=code == -signal.SIGILL)
            self.restarts += restart

    def hung(self, reason: str) -> None:
        """A call to the server ran past its deadline: kill it; the next question restarts it."""
        with self._lock:
            if not self.server.running:
                return
            self.failure = f"the {self.server.kind} server {reason}; it was killed and restarts on the next question"
            logger.warning(self.failure)
            self.server.kill()
            self._publish("down")

    def health(self) -> LLMHealth:
        server = self.server
        where = f"local {server.kind} server at {server.base_url} ({server.model_alias}"
        where += f", {server.variant})" if server.variant else ")"
        if server.running:
            restarted = f"; restarted after: {self.failure}" if self.failure else ""
            return LLMHealth("up", where + restarted, self.failure)
        code = server.exit_code()
        if code is not None:
            failure = f"the {server.kind} server {exit_reason(code)}"
            return LLMHealth("down", f"{where}: {failure} (it restarts on the next question)", failure)
        if self.failure:
            return LLMHealth("down", f"{where}: {self.failure}", self.failure)
        return LLMHealth("not started", where)

    def stop(self) -> None:
        with self._lock:
            self.server.stop()
            if self.state_dir is not None:
                (self.state_dir / STATE_FILE).unlink(missing_ok=True)

    def _start(self, prefer_safe: bool) -> None:
        safe = self.server.safe_variant() if prefer_safe else None
        if safe is not None:
            logger.warning("starting the %s server with its safe build (%s)", safe.kind, safe.variant)
            self.server = safe
        try:
            try:
                self.server.start()
            except LLMServerDiedError as error:
                safe = self.server.safe_variant() if error.illegal_instruction else None
                if safe is None:
                    raise
                self.failure = without_log(str(error))
                logger.warning("%s; retrying with the safe build (%s)", self.failure, safe.variant)
                self.server = safe
                self.server.start()
        except LLMServerError as error:
            self.failure = without_log(str(error))
            self._refused_until = time.monotonic() + self.cooldown_s
            self._publish("down")
            raise
        self._publish("up")

    def _publish(self, state: str) -> None:
        """Write the state file other processes read (the chat's sidebar; ``ask`` reuses an up server)."""
        if self.state_dir is None:
            return
        self.state_dir.mkdir(parents=True, exist_ok=True)
        record = {
            "base_url": self.server.base_url,
            "model": self.server.model_alias,
            "pid": self.server.pid,
            "server": self.server.kind,
            "variant": self.server.variant,
            "state": state,
            "failure": self.failure,
        }
        path = self.state_dir / STATE_FILE
        staging = path.with_name(path.name + ".partial")
        staging.write_text(json.dumps(record))
        staging.replace(path)


def without_log(message: str) -> str:
    """A start's error without the server log's tail it ends with (the log stays in its file)."""
    return message.split("; log ")[0]


def publish_building(state_dir: Path, base_url: str, description: str, state: str = "building") -> None:
    """Say in the state file that the server at ``base_url`` waits for llama.cpp's build (``description``: how far
    it is), or, with ``state`` "not built", that it will not come (the build failed: why): the chat's connection
    answers without the model meanwhile, and its sidebar says which."""
    state_dir.mkdir(parents=True, exist_ok=True)
    record = {"base_url": base_url, "state": state, "failure": description, "pid": None}
    path = state_dir / STATE_FILE
    staging = path.with_name(path.name + ".partial")
    staging.write_text(json.dumps(record))
    staging.replace(path)
