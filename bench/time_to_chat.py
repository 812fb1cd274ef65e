"""Benchmark: the quick start's first command on a fresh clone, timed to a chat that answers (issue 94).

A fresh clone of this checkout, run with an empty ``HOME`` (no pip cache, no llama.cpp build cached, no data dir,
no exported ONNX model): ``bash scripts/quickstart.sh --port PORT``. Timed from its start:

- ``chat_url``: the command prints the chat's URL (dependencies installed, the demo corpus ingested);
- ``chat_up``: the Streamlit server answers its health check;
- ``quoting_answer``: ``rag-app ask --json`` in the clone answers by quoting (while llama.cpp is still built);
- ``model_built``: the background build of llama.cpp is installed (``rag-app llm build --json``);
- ``model_answer``: an answer the model took part in (its server started by the chat, no restart).

Then the same command again on the warm clone (everything cached): ``warm_chat_up``.

    python bench/time_to_chat.py [--keep DIR] [--timeout-min 40]

Writes ``bench/results/time_to_chat.{json,md}``. About 15-20 minutes on 2 CPUs (most of it the llama.cpp build).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "bench/results"
QUESTION = "What does Liouville's theorem say about bounded entire functions?"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class FirstCommand:
    """``scripts/quickstart.sh`` running in ``clone`` with ``env``; its output to ``log``."""

    def __init__(self, clone: Path, env: dict[str, str], port: int, log: Path) -> None:
        self.clone, self.env, self.port, self.log = clone, env, port, log
        self.started = time.monotonic()
        self.process = subprocess.Popen(
            ["bash", "scripts/quickstart.sh", "--port", str(port)],
            cwd=clone, env=env, stdout=log.open("w"), stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip

    def elapsed(self) -> float:
        return round(time.monotonic() - self.started, 1)

    def wait_for(self, what: str, ready: object, timeout_s: float, poll_s: float = 1.0) -> float:
        ends = time.monotonic() + timeout_s
        while time.monotonic() < ends:
            if self.process.poll() is not None:
                raise SystemExit(f"the first command ended ({self.process.returncode}) before {what}; see {self.log}")
            if ready():  # type: ignore[operator]
                print(f"{what}: {self.elapsed()} s", file=sys.stderr)
                return self.elapsed()
            time.sleep(poll_s)
        raise SystemExit(f"no {what} within {timeout_s:.0f} s; see {self.log}")

    def rag_app(self, *args: str, timeout_s: float = 600) -> dict[str, object] | None:
        done = subprocess.run(
            [str(self.clone / ".venv/bin/rag-app"), *args], cwd=self.clone, env=self.env, capture_output=True,
            text=True, timeout=timeout_s, check=False,
        )  # fmt: skip
        try:
            return dict(json.loads(done.stdout))
        except ValueError:
            return None

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)


def chat_up(port: int) -> bool:
    try:
        return httpx.get(f"http://127.0.0.1:{port}/_stcore/health", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def run(work: Path, timeout_s: float) -> dict[str, object]:
    clone, home = work / "clone", work / "home"
    home.mkdir(parents=True)
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True)
    env = {key: value for key, value in os.environ.items() if not key.startswith(("RAG_APP_", "XDG_", "VIRTUAL_ENV"))}
    env |= {"HOME": str(home), "PYTHONUNBUFFERED": "1"}
    # pip's configuration (where the package registries are) is the machine's, not a cache: kept
    pip_config = Path.home() / ".config/pip/pip.conf"
    if pip_config.is_file() and "PIP_CONFIG_FILE" not in env:
        env["PIP_CONFIG_FILE"] = str(pip_config)
    timings: dict[str, object] = {}
    port = free_port()
    first = FirstCommand(clone, env, port, work / "first-command.log")
    try:
        log = first.log
        timings["chat_url"] = first.wait_for("the chat's URL", lambda: "Chat running at" in log.read_text(), timeout_s)
        timings["chat_up"] = first.wait_for("the chat up", lambda: chat_up(port), 120)
        answer = first.rag_app("ask", QUESTION, "--json")
        timings["quoting_answer"] = first.elapsed()
        print(f"a quoting answer: {timings['quoting_answer']} s", file=sys.stderr)
        timings["quoting_answer_chosen_by"] = answer.get("chosen_by") if answer else None
        timings["quoting_answer_sources"] = len(answer.get("sources", [])) if answer else 0

        def built() -> bool:
            state = first.rag_app("llm", "build", "--background", "--json", timeout_s=60)
            if state is not None and state.get("state") == "failed":
                raise SystemExit(f"the build failed: {state.get('description')}")
            return state is not None and state.get("state") == "installed"

        timings["model_built"] = first.wait_for("llama.cpp built", built, timeout_s, poll_s=10)
        timings["model_answer"] = first.wait_for(
            "an answer the model took part in", lambda: _model_answered(first), 900, poll_s=5
        )
    finally:
        first.stop()
    port = free_port()
    warm = FirstCommand(clone, env, port, work / "warm-command.log")
    try:
        timings["warm_chat_up"] = warm.wait_for("the chat up (warm)", lambda: chat_up(port), timeout_s)
    finally:
        warm.stop()
    return timings


def _model_answered(command: FirstCommand) -> bool:
    """An answer with the model: the server is up (started by the chat once the build was in) and chose the
    quote (the learned chooser off for this one question, so that the model is asked)."""
    health = command.rag_app("status", "--json", timeout_s=120)
    llm = (health or {}).get("llm") or {}
    if not (isinstance(llm, dict) and llm.get("state") == "up"):
        return False
    # the model asked for this one question: no learned chooser, and the ranker never sure enough to go without it
    asked = {"RAG_APP_ANSWERS__QUOTE__CHOOSER": "none", "RAG_APP_ANSWERS__QUOTE__RANKER_SURE_MARGIN": "1000"}
    command.env.update(asked)
    try:
        answer = command.rag_app("ask", QUESTION, "--json")
    finally:
        for name in asked:
            del command.env[name]
    return bool(answer) and answer.get("chosen_by") == "model" and not answer.get("llm_error")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--keep", type=Path, help="work here and keep it (default: a temporary directory)")
    parser.add_argument("--timeout-min", type=float, default=40)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="rag-app-time-to-chat-"))
    try:
        timings = run(work, args.timeout_min * 60)
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    summary = {
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs",
        "date": time.strftime("%Y-%m-%d"),
        "commit": commit.stdout.strip(),
        "seconds": timings,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "time_to_chat.json").write_text(json.dumps(summary, indent=1) + "\n")
    rows = [f"| {name} | {value} |" for name, value in timings.items()]
    markdown = "\n".join([
        "# The first command on a fresh clone, to a chat that answers",
        "",
        f"{summary['machine']}; {summary['date']}; commit {summary['commit']}; an empty HOME (no pip cache, no "
        "llama.cpp build cached, no data dir). Seconds from `bash scripts/quickstart.sh`. "
        "Regenerate: `python bench/time_to_chat.py`.",
        "",
        "| step | seconds (or value) |",
        "| --- | ---: |",
        *rows,
        "",
    ])  # fmt: skip
    (args.out / "time_to_chat.md").write_text(markdown)
    print(markdown)


if __name__ == "__main__":
    main()
