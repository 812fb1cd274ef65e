"""One chat client for any OpenAI-compatible server (vLLM, llama.cpp), with retries."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import openai
from tenacity import (
    Retrying,
    retry_if_exception_type,
    stop_after_attempt,
    wait_random_exponential,
)

# Worth retrying: the server was unreachable, too slow, overloaded (429) or failed (5xx).
# Other 4xx errors are our request's fault and are raised at once.
RETRYABLE = (openai.APIConnectionError, openai.RateLimitError, openai.InternalServerError)


class LLMUnavailableError(RuntimeError):
    """The LLM server could not be reached or kept failing after retries."""


class ChatClient:
    def __init__(
        self,
        base_url: str,
        api_key: str = "not-needed",
        model: str | None = None,
        timeout_s: float = 120.0,
        retries: int = 3,
        temperature: float = 0.2,
        max_tokens: int = 512,
        extra_body: dict[str, Any] | None = None,
    ) -> None:
        self.base_url = base_url
        self._client = openai.OpenAI(base_url=base_url, api_key=api_key, timeout=timeout_s, max_retries=0)
        self._model = model
        self.retries = retries
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.extra_body = dict(extra_body or {})

    @property
    def model(self) -> str:
        """The configured model, else the first model the server lists."""
        if self._model is None:
            models = self._call(lambda: self._client.models.list().data)
            if not models:
                raise LLMUnavailableError(f"the server at {self.base_url} lists no models")
            self._model = models[0].id
        return self._model

    def stream_chat(self, messages: Sequence[dict[str, str]]) -> Iterator[str]:
        """Yield the answer's text as it is generated.

        Only opening the stream is retried: once text has been shown it cannot be taken back.
        """
        stream = self._call(
            lambda: self._client.chat.completions.create(
                model=self.model,
                messages=list(messages),
                temperature=self.temperature,
                max_tokens=self.max_tokens,
                stream=True,
                extra_body=self.extra_body or None,
            )
        )
        try:
            for chunk in stream:
                if chunk.choices and chunk.choices[0].delta.content:
                    yield chunk.choices[0].delta.content
        except openai.APIError as error:
            raise LLMUnavailableError(f"the answer stream from {self.base_url} broke off: {error}") from error

    def chat(self, messages: Sequence[dict[str, str]]) -> str:
        return "".join(self.stream_chat(messages))

    def _call(self, request):
        retrying = Retrying(
            retry=retry_if_exception_type(RETRYABLE),
            stop=stop_after_attempt(self.retries + 1),
            wait=wait_random_exponential(multiplier=0.5, max=8),
            reraise=True,
        )
        try:
            return retrying(request)
        except RETRYABLE as error:
            raise LLMUnavailableError(f"the LLM server at {self.base_url} is not reachable: {error}") from error
