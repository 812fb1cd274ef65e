"""Commands that serve: the chat (`rag-app ui`) and the LLM server (`rag-app llm serve`, `llm models`)."""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from importlib import resources
from pathlib import Path
from typing import Annotated, Optional

import typer
from tqdm import tqdm

from rag_app.cli.common import (
    ConfigOption,
    IndexOption,
    _err,
    _settings,
    app,
    llm_app,
)

# Exit codes (README, "Exit codes"): scripts tell these apart.
from rag_app.cli.index import catch_up_second_embedding, reembed_if_the_default_changed
from rag_app.pipeline import MathRAG
from rag_app.serving import cpu_features
from rag_app.serving.llama_build import BuildState, LlamaBuild
from rag_app.serving.llm_server import (
    STATE_FILE,
    LLMServerError,
    free_port,
    installed_llama_build,
    llama_cpp_library_dir,
    running_server_url,
    safe_cpu_library,
    server_from_settings,
    vllm_executable,
)
from rag_app.serving.packaged_models import PACKAGED_GGUFS, PackagedModelError
from rag_app.serving.server_watch import WatchedServer, publish_building
from rag_app.settings import Settings


@app.command()
def ui(
    port: Annotated[int, typer.Option(help="port for the chat")] = 8501,
    host: Annotated[str, typer.Option(help="address to listen on")] = "127.0.0.1",
    demo: Annotated[bool, typer.Option("--demo", help="ingest the demo corpus first if the index is empty")] = False,
    index: IndexOption = None,
    config: ConfigOption = None,
) -> None:
    """Start the Streamlit chat on localhost (and the local LLM server, when none is configured)."""
    settings = _settings(config, index)
    rag = MathRAG(settings)
    if demo:
        reembed_if_the_default_changed(settings)
    if demo and rag.index.count() == 0:
        typer.echo("The index is empty: ingesting the demo corpus ...")
        typer.echo(rag.ingest_demo(show_progress=True).summary())
    if demo:
        catch_up_second_embedding(rag)
    env = dict(os.environ)
    env["RAG_APP_INDEX_DIR"] = str(settings.resolved_index_dir)
    if config is not None:
        env["RAG_APP_CONFIG"] = str(config)
    watched = None
    waiting: BuildWait | None = None
    if not settings.llm.base_url and not running_server_url(settings.data_dir) and _llama_not_built(settings):
        # The chat opens now and searches; the server starts once llama.cpp's build is in.
        waiting = BuildWait(settings)
        env["RAG_APP_LLM__BASE_URL"] = waiting.base_url
        typer.echo(f"The local model's server starts once llama.cpp is built: {waiting.build.state().describe()}")
        typer.echo(f"  (its log: {waiting.build.log}); meanwhile answers quote the statement the search ranks first")
    elif not settings.llm.base_url and not running_server_url(settings.data_dir):
        typer.echo(f"Starting the local LLM server ({settings.llm.local_model}) ...")
        try:
            # Watched from here: a server that dies is restarted once on its port, and the state file says
            # why (the chat's sidebar reads it; `ask` and `status` reuse an up server meanwhile).
            watched = WatchedServer(
                server_from_settings(settings), settings.llm.restart_cooldown_s, state_dir=settings.data_dir
            )
            env["RAG_APP_LLM__BASE_URL"] = watched.base_url
            watched.start()
            if watched.failure:  # started, after a first try that died (SIGILL: now on the safe build)
                _err(f"note: {watched.health().description}")
        except (PackagedModelError, LLMServerError) as error:
            _err(f"LLM unavailable, the chat will show retrieved statements only: {error}")
    app_file = Path(str(resources.files("ui") / "chat_app.py"))
    command = [
        sys.executable, "-m", "streamlit", "run", str(app_file),
        "--server.port", str(port), "--server.address", host, "--server.headless", "true",
        "--browser.gatherUsageStats", "false",
        # An unexpected error shows its type and message; the traceback goes to this console only.
        "--client.showErrorDetails", "type",
    ]  # fmt: skip
    typer.echo(f"Chat running at http://{host}:{port}  (Ctrl-C to stop){_since_first_command()}")
    _stop_on_signals()
    chat = subprocess.Popen(command, env=env)
    reported = watched.failure if watched is not None else None
    try:
        while chat.poll() is None:
            if waiting is not None:
                watched = waiting.poll()
                if watched is not None or waiting.done:
                    waiting = None
            if watched is not None:
                reported = _keep_running(watched, reported)
            time.sleep(1)
    except KeyboardInterrupt:
        pass
    finally:
        # Neither the chat nor the LLM server may outlive this command (they run in other processes).
        if chat.poll() is None:
            chat.terminate()
            try:
                chat.wait(timeout=20)
            except subprocess.TimeoutExpired:
                chat.kill()
        if waiting is not None:
            waiting.stop()
        if watched is not None:
            watched.stop()  # and its state file


def _since_first_command() -> str:
    """ "; ready 2.9 min after the first command" when the quick start says when it began (RAG_APP_STARTED_AT)."""
    try:
        started = float(os.environ["RAG_APP_STARTED_AT"])
    except (KeyError, ValueError):
        return ""
    return f"; ready {(time.time() - started) / 60:.1f} min after the first command"


def _llama_not_built(settings: Settings) -> bool:
    """The local server would be llama.cpp, and llama.cpp is not installed yet (its build runs, or failed)."""
    local_llama = settings.llm.server == "llama.cpp" or not (settings.llm.vllm.model and vllm_executable(
        settings.llm.vllm.executable))  # fmt: skip
    return local_llama and not LlamaBuild.installed()


class BuildWait:
    """`rag-app ui` while llama.cpp is built in the background: the chat has the server's address from the start;
    the state file says the build's progress (the sidebar shows it, answers quote without the model); once the build
    is in, the server is started and watched as if it had been there from the start."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.build = LlamaBuild(settings.data_dir)
        if self.build.state().state == "none":
            self.build.start_in_background()  # `ui` run without the quick start's setup: built from here
        self.port = settings.llm.port or free_port(settings.llm.host)
        self.base_url = f"http://{settings.llm.host}:{self.port}/v1"
        self.done = False
        self._said = ""
        self._echoed_tenth = -1  # the progress said on the command line, in tenths
        self._publish()

    def poll(self) -> WatchedServer | None:
        """The watched server, started, once the build is in; None while it runs (or after it failed: said once)."""
        state = self.build.state()
        if state.state == "installed":
            self.done = True
            typer.echo("llama.cpp is built: starting the local LLM server ...")
            try:
                server = server_from_settings(self.settings, port=self.port)
                watched = WatchedServer(server, self.settings.llm.restart_cooldown_s, state_dir=self.settings.data_dir)
                watched.start()
            except (PackagedModelError, LLMServerError) as error:
                _err(f"LLM unavailable, the chat keeps quoting without it: {error}")
                reason = f"the local server did not start: {error}"
                publish_building(self.settings.data_dir, self.base_url, reason, state="not built")
                return None
            typer.echo(f"LLM server up: {watched.health().description}")
            return watched
        if state.state != "building":
            self.done = True
            _err(f"LLM unavailable, the chat keeps quoting without it: {state.describe()}")
            publish_building(self.settings.data_dir, self.base_url, state.describe(), state="not built")
            return None
        self._publish(state)
        return None

    def stop(self) -> None:
        (self.settings.data_dir / STATE_FILE).unlink(missing_ok=True)

    def _publish(self, state: BuildState | None = None) -> None:
        state = state or self.build.state()
        description = state.describe()
        if description != self._said:
            self._said = description
            publish_building(self.settings.data_dir, self.base_url, description)
        tenth = (state.progress or 0) // 10
        if tenth > self._echoed_tenth:  # the command line says the progress too, every tenth
            self._echoed_tenth = tenth
            typer.echo(f"llama.cpp build: {state.progress or 0}% (the chat searches and quotes meanwhile)")


def _keep_running(watched: WatchedServer, reported: str | None) -> str | None:
    """Restart a server that died (once per death); say each new failure once. Returns the last said."""
    restarts = watched.restarts
    with contextlib.suppress(LLMServerError):  # down: the state file and the message below say why
        watched.ensure_running()
    if watched.failure != reported or watched.restarts != restarts:
        _err(f"LLM server: {watched.health().description}")
    return watched.failure


def _stop_on_signals() -> None:
    """Ctrl-C and SIGTERM both end a long-running command through its cleanup (``finally``).

    Explicit handlers: a process started in the background inherits an ignored SIGINT, and service
    managers (and scripts) stop with SIGTERM, whose default kills Python without any cleanup.
    """

    def stop(signum: int, _frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)


@llm_app.command("serve")
def llm_serve(
    model: Annotated[
        Optional[str], typer.Option(help="packaged model name or .gguf path (llama.cpp); a model dir or id (vLLM)")
    ] = None,
    port: Annotated[Optional[int], typer.Option(help="port (default from settings; 0 picks one)")] = None,
    config: ConfigOption = None,
) -> None:
    """Run an OpenAI-compatible server until Ctrl-C (vLLM if llm.server asks and it is installed, else
    llama.cpp); ask and ui reuse it."""
    settings = _settings(config)
    notes: list[str] = []
    try:
        server = server_from_settings(settings, model, port, notes)
        for note in notes:
            _err(note)
        typer.echo(f"Starting the {server.kind} server ({server.model_alias}) ...")
        watched = WatchedServer(server, settings.llm.restart_cooldown_s, state_dir=settings.data_dir)
        watched.start()
    except (PackagedModelError, LLMServerError) as error:
        _err(str(error))
        raise typer.Exit(1) from error
    typer.echo(f"{server.kind} server ({server.model_alias}) at {server.base_url}  (Ctrl-C to stop)")

    _stop_on_signals()
    try:
        while True:  # a server that dies is restarted once; one whose restart fails ends the command
            time.sleep(1)
            if not watched.server.running:
                _err(f"{watched.health().description}: restarting it")
                watched.ensure_running()
                _err(f"restarted: {watched.health().description}")
    except KeyboardInterrupt:
        pass
    except LLMServerError as error:
        _err(str(error))
        raise typer.Exit(1) from error
    finally:
        watched.stop()  # and its state file


@llm_app.command("build")
def llm_build(
    background: Annotated[
        bool, typer.Option("--background", help="start the build (if needed) and return at once")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="the build's state as JSON")] = False,
    dry_run: Annotated[
        bool,
        typer.Option(
            "--dry-run", help="print the build's command (script, cache, environment) and exit without building"
        ),
    ] = False,
    config: ConfigOption = None,
) -> None:
    """Build llama.cpp for this CPU (the local model's server), niced, its log in the data dir: started if it is
    neither installed nor running, then followed to its end (``--background``: not followed). The chat, search,
    `serve` and `mcp` work meanwhile; answers quote without the model until it is in. The build script ships in the
    package: an installed rag-app builds into its own environment."""
    build = LlamaBuild(_settings(config).data_dir)
    if dry_run:
        _print_build_plan(build, as_json)
        return
    state = build.start_in_background()
    if not background and state.state == "building":
        ends = time.monotonic() + 7200  # the build's own steps have deadlines; this wait has one too
        with tqdm(total=100, desc="building llama.cpp", unit="%", disable=as_json) as bar:
            while state.state == "building" and time.monotonic() < ends:
                bar.n = state.progress or 0
                bar.refresh()
                time.sleep(2)
                state = build.state()
            bar.n = 100 if state.state == "installed" else bar.n
            bar.refresh()
    if as_json:
        typer.echo(json.dumps(state.to_dict()))
    else:
        typer.echo(f"{state.describe()}" + (f"; log: {build.log}" if state.state == "building" else ""))
    if state.state == "failed":
        raise typer.Exit(1)


def _print_build_plan(build: LlamaBuild, as_json: bool) -> None:
    """``llm build --dry-run``: what the build would run, and whether it would start now; exit 1 if the build
    script is missing (an incomplete install)."""
    plan, state = build.plan(), build.state()
    starts = state.state not in ("installed", "building")
    if as_json:
        typer.echo(json.dumps({**plan.to_dict(), "state": state.to_dict(), "would_start": starts}))
    else:
        environment = " ".join(f"{name}={shlex.quote(value)}" for name, value in plan.knobs.items())
        where = f"the .venv of the checkout {plan.checkout}" if plan.checkout else "the environment that runs rag-app"
        typer.echo(f"script: {plan.script}")
        typer.echo(f"command: cd {shlex.quote(str(plan.cwd))} && {environment} bash -c {shlex.quote(plan.command)}")
        typer.echo(f"cache: {plan.cache}")
        typer.echo(f"environment: {environment}")
        typer.echo(f"installs into: {plan.installs_into} ({where})")
        typer.echo(f"log: {plan.log}")
        typer.echo(f"now: {state.describe()}" + ("" if starts else " (the build would not start)"))
    if not plan.script.is_file():
        _err(f"the build script {plan.script} is not there (an incomplete install of rag-app)")
        raise typer.Exit(1)


@llm_app.command("models")
def llm_models() -> None:
    """The chat models that ship as packages."""
    for spec in PACKAGED_GGUFS.values():
        parts = f", split in {len(spec.parts)} parts" if spec.parts else ""
        typer.echo(f"{spec.name}  ({spec.size / 1e6:,.0f} MB{parts})")


@llm_app.command("cpu")
def llm_cpu(
    as_json: Annotated[bool, typer.Option("--json", help="the report as JSON")] = False,
) -> None:
    """Which instructions this CPU really runs (advertised, enabled by the OS, executed by a probe), the
    llama.cpp build installed, and whether its libraries hold code this CPU cannot run (exit 1 if so)."""
    report = cpu_features.check_cpu()
    library_dir = llama_cpp_library_dir()
    libraries = sorted(library_dir.glob("lib*.so")) if library_dir is not None else []
    unrunnable = cpu_features.unrunnable_instructions(libraries, report) if shutil.which("objdump") else None
    build = installed_llama_build()
    safe = safe_cpu_library()
    if as_json:
        record = {**report.to_dict(), "installed_build": build, "safe_library": str(safe) if safe else None,
                  "unrunnable": unrunnable}  # fmt: skip
        typer.echo(json.dumps(record, indent=2))
    else:
        typer.echo("\n".join(cpu_features.describe(report)))
        typer.echo(f"installed llama.cpp build: {build.get('profile', 'not built by scripts/setup.sh')}"
                   f" ({build.get('cmake_args', 'pip defaults: -march=native')})")  # fmt: skip
        typer.echo(f"safe CPU library: {safe or 'none'}")
        if unrunnable is None:
            typer.echo("libraries: not checked (objdump is not installed)")
        for path, missing in (unrunnable or {}).items():
            typer.echo(f"CANNOT RUN HERE: {path} holds instructions of {', '.join(sorted(missing))}")
        if unrunnable == {}:
            typer.echo(f"libraries: every instruction of {len(libraries)} llama.cpp libraries runs here")
    if unrunnable:
        raise typer.Exit(1)
