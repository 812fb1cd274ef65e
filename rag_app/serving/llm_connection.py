"""The connection to the answering LLM: the configured OpenAI-compatible server (vLLM in production),
or a local server this process starts on the first question, watches (a server that died is noticed on
the next question and restarted once), and stops on close."""

from __future__ import annotations

import atexit
import logging
import threading
import time

from prompts import load_prompt
from rag_app.serving.llama_build import LlamaBuild
from rag_app.serving.llm_client import ChatClient, LLMUnavailableError
from rag_app.serving.llm_server import (
    LlamaCppServer,
    LLMNotBuiltError,
    LLMServerError,
    LLMServerProcess,
    is_healthy,
    published_state,
    running_server_url,
    server_from_settings,
)
from rag_app.serving.packaged_models import PackagedModelError
from rag_app.serving.server_process import process_alive
from rag_app.serving.server_watch import LLMHealth, WatchedServer
from rag_app.settings import LLMSettings, Settings

# What asking the LLM can fail with, short of a bug: no server, a server that died or hung, a packaged model
# missing, a reply that is not the API's JSON (ValueError). Optional LLM steps (a rewrite) catch these and
# go on without it, saying so in the log; anything else is a bug and is raised.
LLM_FAILURES: tuple[type[Exception], ...] = (LLMUnavailableError, LLMServerError, PackagedModelError, ValueError)

logger = logging.getLogger(__name__)


def request_slots(llm: LLMSettings) -> int:
    """Requests sent at once. The local llama.cpp server answers one at a time and gives the others an
    empty stream (3 of 4 concurrent `train questions` requests came back empty), so they wait their turn
    there; vLLM and other servers batch them."""
    local_llama_cpp = not llm.base_url and llm.server == "llama.cpp"
    return 1 if local_llama_cpp else llm.max_concurrency


class LLMConnection:
    """One chat client per connection; ``watched`` is the local server this connection started, if any.

    Thread-safe: the HTTP API and the chat ask from several threads; one local server is started.
    """

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.watched: WatchedServer | None = None
        self._client: ChatClient | None = None
        self._lock = threading.RLock()

    @property
    def server(self) -> LLMServerProcess | None:
        """The local server process this connection started (None: a configured or shared server)."""
        return self.watched.server if self.watched is not None else None

    def client(self) -> ChatClient:
        """A client for the configured server, starting the local one if none is configured. A local server
        that died since the last question is restarted once here; raises :class:`LLMServerError` with the
        reason when no local server can be had."""
        with self._lock:
            if self.watched is not None:
                self.watched.ensure_running()
            elif self.settings.llm.base_url:
                self._refuse_while_building()
                self._wait_while_restarting()
            if self._client is None:
                llm = self.settings.llm
                base_url = (
                    llm.base_url
                    or (self.watched.base_url if self.watched is not None else None)
                    or running_server_url(self.settings.data_dir)
                    or self._start_local_server()
                )
                self._client = ChatClient(
                    base_url,
                    api_key=llm.api_key,
                    model=llm.model,
                    timeout_s=llm.timeout_s,
                    retries=llm.retries,
                    temperature=llm.temperature,
                    max_tokens=llm.max_tokens,
                    extra_body=llm.extra_body,
                    max_concurrency=request_slots(llm),
                    deadline_s=llm.deadline_s,
                    on_deadline=self._past_deadline,
                )
                if isinstance(self.server, LlamaCppServer) and llm.llama_cpp.warm_up:
                    self._warm_up(self._client)
            return self._client

    def _refuse_while_building(self) -> None:
        """The server at ``llm.base_url`` is the chat's, which `rag-app ui` starts once llama.cpp is built: while
        the build runs, the state file says so, and the question is answered without the model at once (a
        connection refused, retried, would only say less, later)."""
        state = published_state(self.settings.data_dir)
        if state.get("base_url") == self.settings.llm.base_url and state.get("state") in ("building", "not built"):
            raise LLMNotBuiltError(str(state.get("failure") or "the local model's server is still being built"))

    def _wait_while_restarting(self) -> None:
        """The server at ``llm.base_url`` belongs to `rag-app ui` (the chat's), which says in the state file
        that it is restarting it: wait for that, at most ``llm.deadline_s``, then ask anyway."""
        llm = self.settings.llm
        ends = time.monotonic() + llm.deadline_s
        while time.monotonic() < ends:
            state = published_state(self.settings.data_dir)
            if state.get("base_url") != llm.base_url:
                return
            pid = state.get("pid")
            # "up" with its process gone: it died a moment ago, and `ui` notices within a second.
            died = state.get("state") == "up" and isinstance(pid, int) and not process_alive(pid)
            if state.get("state") != "restarting" and not died:
                return
            time.sleep(0.25)

    def _past_deadline(self, reason: str) -> None:
        """A call ran past its deadline: a local server of ours is taken for hung (killed, restarted next)."""
        if self.watched is not None:
            self.watched.hung(reason)

    def _warm_up(self, client: ChatClient) -> None:
        """Have the local server read the answer prompt's instructions once: they open every answer
        prompt, so llama.cpp keeps them as the cached prefix and the first question reads only its own
        part. A failure here only costs that saving. The prompt is the one answers use: the quoting
        answer's choice prompt by default (warming the written answer's prompt saved nothing there)."""
        answers = self.settings.answers
        prompt = load_prompt(answers.quote.prompt if answers.style == "quote" else self.settings.llm.prompt)
        system = prompt.messages(sources="", question="", fence="")[0]
        try:
            client.chat([system, {"role": "user", "content": "Sources"}], max_tokens=1, temperature=0.0)
        except LLMUnavailableError as error:
            logger.warning("the LLM server's warm-up failed: %s", error)

    def status(self) -> str:
        """A one-line description of where answers come from, for the UI and ``status``."""
        return self.health().description

    def health(self) -> LLMHealth:
        """Whether answers can be generated now: ``up``, ``down`` or ``not started`` (the local server starts
        on the first question), with the last failure in words (a death, a hang, a failed start)."""
        llm = self.settings.llm
        if self.watched is not None:
            return self.watched.health()
        shared = published_state(self.settings.data_dir)
        if llm.base_url:
            up = is_healthy(llm.base_url)
            # The chat's server belongs to `rag-app ui`, which publishes why it died or restarted.
            failure = shared.get("failure") if shared.get("base_url") == llm.base_url else None
            failure = str(failure) if failure else None
            if not up and shared.get("base_url") == llm.base_url and shared.get("state") in ("building", "not built"):
                state = "building" if shared.get("state") == "building" else "down"
                return LLMHealth(state, str(failure or "the local model's server is still being built"), failure)
            if not up and shared.get("base_url") == llm.base_url and shared.get("state") == "restarting":
                return LLMHealth("restarting", f"{llm.base_url} (restarting after: {failure})", failure)
            if up:
                restarted = f"; restarted after: {failure}" if failure else ""
                return LLMHealth("up", f"{llm.base_url} (up{restarted})", failure)
            return LLMHealth("down", f"{llm.base_url} (down{': ' + failure if failure else ''})", failure)
        running = running_server_url(self.settings.data_dir)
        if running:
            return LLMHealth("up", f"local server at {running} (started by `llm serve` or `ui`)")
        if llm.server != "llama.cpp" and llm.vllm.model:
            description = f"local server ({llm.server}: vLLM {llm.vllm.model} if installed), started on first question"
            return LLMHealth("not started", description)
        if not LlamaBuild.installed():  # its build runs in the background, failed, or never ran
            build = LlamaBuild(self.settings.data_dir).state()
            state = "building" if build.state == "building" else "down"
            return LLMHealth(state, build.describe(), build.detail or None)
        return LLMHealth("not started", f"local llama.cpp server, started on first question ({llm.local_model})")

    def _start_local_server(self) -> str:
        notes: list[str] = []
        server = server_from_settings(self.settings, notes=notes)
        for note in notes:
            logger.warning(note)
        watched = WatchedServer(server, cooldown_s=self.settings.llm.restart_cooldown_s)
        self.watched = watched
        atexit.register(watched.stop)
        watched.start()
        return watched.base_url

    def close(self) -> None:
        """Stop the LLM server if this connection started it."""
        with self._lock:
            if self.watched is not None:
                self.watched.stop()
                self.watched = None
            self._client = None
