"""The build of llama.cpp for this CPU, run in the background while the chat already searches.

Building llama-cpp-python for what the CPU really runs (``build_llama_cpp.sh`` beside this module: it ships in the
package, so an installed rag-app builds its own server; ``scripts/build_llama_cpp.sh`` runs it) takes about ten minutes
on 2 CPUs the first time; nothing else needs it: search, the Search page, the next results and the answers that
quote the learned chooser's pick need no model. So the first command starts the chat once the dependencies and the
demo index are in, and the build runs beside it, niced, its output in the data directory. Everyone reads its state
here: the chat's sidebar, ``rag-app status``, ``rag-app llm build``, and the LLM connection, which says "the model
is still being built" instead of failing to start a server that is not there yet, and starts it once it is.

Files, in ``<data_dir>/llama-build/``: ``build.log`` (the build's output), ``run.json`` (its process and start),
``exit`` (its exit code, written when it ends).
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from rag_app.serving.server_process import process_alive

# the build script, package data of rag_app (pyproject.toml) beside this module: a wheel has it too
BUILD_SCRIPT = Path(__file__).resolve().parent / "build_llama_cpp.sh"
# its default cache of built wheels (RAG_APP_BUILD_CACHE)
DEFAULT_BUILD_CACHE = Path("~/.cache/rag-app/builds")
# the compiler's progress in the verbose build's output: ninja's "[89/193] /usr/bin/g++ ..." (pip's build of
# llama-cpp-python), or make's "[ 45%] Building C object ..."
_PROGRESS = re.compile(rb"\[\s*(\d{1,5})/(\d{1,5})\]|\[\s*(\d{1,3})%\]")


def source_checkout(script: Path) -> Path | None:
    """The checkout the build script lies in (``<root>/rag_app/serving/``, ``<root>`` holding ``pyproject.toml`` and
    ``scripts/``), else ``None`` (an installed package): the script's own test, so both say where it installs."""
    root = script.resolve().parent.parent.parent
    return root if (root / "pyproject.toml").is_file() and (root / "scripts" / "build_llama_cpp.sh").is_file() else None


@dataclass(frozen=True, slots=True)
class BuildPlan:
    """What ``start_in_background`` runs: the shell command, its working directory and the build script's
    environment knobs (the rest of the environment is inherited), the cache of built wheels and the interpreter
    whose environment gets llama-cpp-python."""

    script: Path
    command: str
    cwd: Path
    knobs: dict[str, str]
    cache: Path
    installs_into: Path
    checkout: Path | None
    log: Path

    def to_dict(self) -> dict[str, object]:
        return {"script": str(self.script), "script_exists": self.script.is_file(), "command": self.command,
                "cwd": str(self.cwd), "environment": self.knobs, "cache": str(self.cache),
                "installs_into": str(self.installs_into),
                "checkout": str(self.checkout) if self.checkout else None, "log": str(self.log)}  # fmt: skip


@dataclass(frozen=True, slots=True)
class BuildState:
    """Where the build stands: ``installed``, ``building`` (``progress`` in percent where cmake said it),
    ``failed`` (``detail`` says why) or ``none`` (never started here)."""

    state: str
    progress: int | None = None
    detail: str = ""
    log: Path | None = None
    elapsed_s: float | None = None

    def describe(self) -> str:
        """One line for the sidebar, ``status`` and the answer's notice."""
        if self.state == "installed":
            return "llama.cpp is built and installed"
        if self.state == "building":
            done = f"{self.progress}% done, " if self.progress is not None else ""
            minutes = f"{self.elapsed_s / 60:.0f} min so far" if self.elapsed_s is not None else "started"
            return f"the local model's server (llama.cpp) is still being built for this CPU ({done}{minutes})"
        if self.state == "failed":
            return f"the build of llama.cpp failed: {self.detail} (log: {self.log})"
        return "llama.cpp is not installed (`bash scripts/setup.sh` builds it)"

    def to_dict(self) -> dict[str, object]:
        return {"state": self.state, "progress": self.progress, "detail": self.detail,
                "log": str(self.log) if self.log else None, "description": self.describe()}  # fmt: skip


class LlamaBuild:
    """The llama.cpp build of this environment, as a background job whose files live in ``data_dir``."""

    def __init__(self, data_dir: Path, script: Path = BUILD_SCRIPT) -> None:
        self.directory = data_dir / "llama-build"
        self.script = script

    @property
    def log(self) -> Path:
        return self.directory / "build.log"

    @staticmethod
    def installed() -> bool:
        """Whether llama-cpp-python can be imported now (looked up again: a build may have installed it since)."""
        importlib.invalidate_caches()
        return importlib.util.find_spec("llama_cpp") is not None

    def state(self) -> BuildState:
        if self.installed():
            return BuildState("installed", 100, log=self.log if self.log.exists() else None)
        run = self._run()
        if run is None:
            return BuildState("none")
        exit_code = self._exit_code()
        elapsed = time.time() - float(run.get("started", time.time()))
        if exit_code is None and process_alive(int(run.get("pid", 0))):
            return BuildState("building", self._progress(), log=self.log, elapsed_s=elapsed)
        if exit_code == 0:  # built, installed into another environment, or not importable here
            return BuildState("failed", detail="it ended but llama_cpp cannot be imported here", log=self.log)
        reason = f"exit code {exit_code}" if exit_code is not None else "the build's process ended without a word"
        return BuildState("failed", detail=f"{reason}; {self._last_line()}".rstrip("; "), log=self.log)

    def plan(self) -> BuildPlan:
        """The build's command and environment, as ``start_in_background`` runs it (``llm build --dry-run``)."""
        checkout = source_checkout(self.script)
        knobs = {"PYTHON": os.environ.get("PYTHON", sys.executable), "RAG_APP_BUILD_VERBOSE": "1"}
        # a checkout's script installs into its .venv; an installed package's into the environment that runs the app
        if checkout is not None and "RAG_APP_VENV_PYTHON" not in os.environ:
            installs_into = checkout / ".venv" / "bin" / "python"
        else:
            installs_into = Path(os.environ.get("RAG_APP_VENV_PYTHON", sys.executable))
            knobs["RAG_APP_VENV_PYTHON"] = str(installs_into)
        for name in ("RAG_APP_BUILD_CACHE", "RAG_APP_LLAMA_PROFILE"):
            if name in os.environ:
                knobs[name] = os.environ[name]
        return BuildPlan(
            script=self.script,
            command=f'nice -n 10 bash "{self.script}"; echo $? > "{self.directory / "exit"}"',
            cwd=self.directory,
            knobs=knobs,
            cache=Path(os.environ.get("RAG_APP_BUILD_CACHE") or DEFAULT_BUILD_CACHE).expanduser(),
            installs_into=installs_into,
            checkout=checkout,
            log=self.log,
        )

    def start_in_background(self) -> BuildState:
        """Start the build, niced, unless it is installed or running already; returns its state."""
        state = self.state()
        if state.state in ("installed", "building"):
            return state
        if not self.script.is_file():
            return BuildState("failed", detail=f"{self.script} is not there (an incomplete install of rag-app)")
        plan = self.plan()
        self.directory.mkdir(parents=True, exist_ok=True)
        (self.directory / "exit").unlink(missing_ok=True)
        env = {**os.environ, **plan.knobs}
        with self.log.open("wb") as log:
            process = subprocess.Popen(
                ["bash", "-c", plan.command], stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                cwd=plan.cwd, env=env, start_new_session=True,  # outlives the command that started it
            )  # fmt: skip
        run = {"pid": process.pid, "started": time.time(), "script": str(self.script)}
        (self.directory / "run.json").write_text(json.dumps(run))
        return self.state()

    def wait(self, timeout_s: float, poll_s: float = 2.0) -> BuildState:
        """The state once the build is no longer running, or after ``timeout_s``."""
        ends = time.monotonic() + timeout_s
        state = self.state()
        while state.state == "building" and time.monotonic() < ends:
            time.sleep(poll_s)
            state = self.state()
        return state

    def _run(self) -> dict[str, object] | None:
        try:
            return dict(json.loads((self.directory / "run.json").read_text()))
        except (OSError, ValueError):
            return None

    def _exit_code(self) -> int | None:
        try:
            return int((self.directory / "exit").read_text().strip())
        except (OSError, ValueError):
            return None

    def _progress(self) -> int | None:
        """The compiler's last progress in the log, in percent (the main build; the safe CPU library after it)."""
        try:
            with self.log.open("rb") as log:
                log.seek(max(0, self.log.stat().st_size - 65536))
                found = _PROGRESS.findall(log.read())
        except OSError:
            return None
        if not found:
            return None
        done, total, percent = found[-1]
        return min(100, int(percent) if percent else 100 * int(done) // max(1, int(total)))

    def _last_line(self) -> str:
        try:
            lines = [line for line in self.log.read_text(errors="replace").splitlines() if line.strip()]
        except OSError:
            return ""
        return lines[-1][:300] if lines else ""
