"""The connection to the answering LLM: the configured OpenAI-compatible server (vLLM in production),
or a local server this process starts on the first question and stops on close."""

from __future__ import annotations

import atexit
import logging
from dataclasses import dataclass

from prompts import load_prompt
from rag_app.serving.llm_client import ChatClient, LLMUnavailableError
from rag_app.serving.llm_server import (
    LlamaCppServer,
    LLMServerProcess,
    is_healthy,
    running_server_url,
    server_from_settings,
)
from rag_app.settings import LLMSettings, Settings

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class LLMHealth:
    state: str  # "up", "down" or "not started"
    description: str


def request_slots(llm: LLMSettings) -> int:
    """Requests sent at once. The local llama.cpp server answers one at a time and gives the others an
    empty stream (3 of 4 concurrent `train questions` requests came back empty), so they wait their turn
    there; vLLM and other servers batch them."""
    local_llama_cpp = not llm.base_url and llm.server == "llama.cpp"
    return 1 if local_llama_cpp else llm.max_concurrency


class LLMConnection:
    """One chat client per connection; ``server`` is the local server this connection started, if any."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.server: LLMServerProcess | None = None
        self._client: ChatClient | None = None

    def client(self) -> ChatClient:
        """A client for the configured server, starting the local one if none is configured."""
        if self._client is None:
            llm = self.settings.llm
            base_url = llm.base_url or running_server_url(self.settings.data_dir) or self._start_local_server()
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
            )
            if isinstance(self.server, LlamaCppServer) and llm.llama_cpp.warm_up:
                self._warm_up(self._client)
        return self._client

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
        """A one-line description of where answers come from, for the UI and ``llm status``."""
        llm = self.settings.llm
        if llm.base_url:
            state = "up" if is_healthy(llm.base_url) else "down"
            return f"{llm.base_url} ({state})"
        if self.server is not None and self.server.running:
            return f"local {self.server.kind} server at {self.server.base_url} ({self.server.model_alias})"
        running = running_server_url(self.settings.data_dir)
        if running:
            return f"local server at {running} (started by `llm serve` or `ui`)"
        if llm.server != "llama.cpp" and llm.vllm.model:
            return f"local server ({llm.server}: vLLM {llm.vllm.model} if installed), started on first question"
        return f"local llama.cpp server, started on first question ({llm.local_model})"

    def health(self) -> LLMHealth:
        """Whether answers can be generated now: ``up``, ``down`` or ``not started`` (the local server starts
        on the first question)."""
        llm = self.settings.llm
        description = self.status()
        if llm.base_url:
            return LLMHealth("up" if is_healthy(llm.base_url) else "down", description)
        if self.server is not None:
            return LLMHealth("up" if self.server.running else "down", description)
        if running_server_url(self.settings.data_dir):
            return LLMHealth("up", description)
        return LLMHealth("not started", description)

    def _start_local_server(self) -> str:
        notes: list[str] = []
        server = server_from_settings(self.settings, notes=notes)
        for note in notes:
            logger.warning(note)
        server.start()
        self.server = server
        atexit.register(server.stop)
        return server.base_url

    def close(self) -> None:
        """Stop the LLM server if this connection started it."""
        if self.server is not None:
            self.server.stop()
            self.server = None
        self._client = None
