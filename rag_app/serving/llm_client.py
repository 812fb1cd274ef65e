"""One chat client for any OpenAI-compatible server (vLLM, llama.cpp), with retries."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import httpx
import openai
from tenacity import (
    Retrying,
    retry_if_exception_type,
    stop_after_attempt,
    stop_after_delay,
    wait_random_exponential,
)

from rag_app.serving.server_slots import ServerSlots, SlotWaitError
from retriever.deadline import check as request_check
from retriever.deadline import stopped as request_stopped

# Worth retrying: the server was unreachable, too slow, overloaded (429) or failed (5xx).
# Other 4xx errors are our request's fault and are raised at once.
RETRYABLE = (openai.APIConnectionError, openai.RateLimitError, openai.InternalServerError)


class LLMUnavailableError(RuntimeError):
    """The LLM server could not be reached or kept failing after retries."""


class LLMDeadlineError(LLMUnavailableError):
    """One call ran past its deadline (``llm.deadline_s``), retries included."""


# Tokenizing is quick even on a busy server: a count that takes longer is estimated instead.
TOKEN_COUNT_TIMEOUT_S = 30.0


class Deadline:
    """The time one call may still take."""

    def __init__(self, seconds: float | None) -> None:
        self.seconds = seconds
        self.ends = None if seconds is None else time.monotonic() + seconds

    def remaining(self) -> float | None:
        return None if self.ends is None else max(0.0, self.ends - time.monotonic())

    @property
    def passed(self) -> bool:
        return self.ends is not None and time.monotonic() >= self.ends

    def bound(self, timeout_s: float) -> float:
        """``timeout_s``, or less where the deadline comes first (never 0: httpx takes that as no wait)."""
        remaining = self.remaining()
        return timeout_s if remaining is None else max(0.05, min(timeout_s, remaining))


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
        max_concurrency: int = 4,
        deadline_s: float | None = None,
        on_deadline: Callable[[str], None] | None = None,
    ) -> None:
        self.base_url = base_url
        # The timeout bounds connecting and each wait for data, so a server that hangs mid-answer fails too.
        self._client = openai.OpenAI(base_url=base_url, api_key=api_key, timeout=timeout_s, max_retries=0)
        self._model = model
        self.timeout_s = timeout_s
        self.retries = retries
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.extra_body = dict(extra_body or {})
        # No call waits longer than this, retries included; ``on_deadline`` hears of one that would have.
        self.deadline_s = deadline_s
        self.on_deadline = on_deadline
        self._token_counts_paused_until = 0.0
        # Bounded concurrency: requests beyond this many wait for a slot instead of piling onto the server,
        # counted across every process on this machine that talks to it (the chat and `serve` share one).
        self._slots = ServerSlots(base_url, max_concurrency)
        # A slot is held at most one call's deadline; waiting for two such calls is the most a request waits.
        self.slot_wait_s = 2 * (deadline_s if deadline_s is not None else timeout_s * (retries + 1))
        self._token_endpoint: str | None = None
        self._server_models: list[Any] | None = None
        self._alternatives_refused = False  # the server said it gives no log probabilities

    @property
    def model(self) -> str:
        """The configured model, else the first model the server lists."""
        if self._model is None:
            models = self._models()
            if not models:
                raise LLMUnavailableError(f"the server at {self.base_url} lists no models")
            self._model = models[0].id
        return self._model

    def context_window(self) -> int | None:
        """The model's window in tokens when the server says it (vLLM's ``max_model_len``), else None."""
        for entry in self._models():
            if entry.id == self.model:
                window = getattr(entry, "max_model_len", None) or (entry.model_extra or {}).get("max_model_len")
                return int(window) if window else None
        return None

    def count_tokens(self, text: str) -> int | None:
        """Tokens of ``text`` in the served model's tokenizer, or None when the server cannot count.

        vLLM serves ``POST /tokenize``; llama.cpp's Python server ``POST /extras/tokenize/count``.
        """
        root = self.base_url.rstrip("/").removesuffix("/v1")
        candidates = {
            f"{root}/tokenize": lambda: {"model": self.model, "prompt": text, "add_special_tokens": False},
            f"{root}/extras/tokenize/count": lambda: {"input": text},
        }
        endpoints = [self._token_endpoint] if self._token_endpoint else list(candidates)
        if time.monotonic() < self._token_counts_paused_until:
            return None
        for endpoint in endpoints:
            if endpoint == "":
                return None
            try:
                timeout = min(self.timeout_s, TOKEN_COUNT_TIMEOUT_S)
                response = httpx.post(endpoint, json=candidates[endpoint](), timeout=timeout)
            except httpx.ConnectError:  # nobody listens (yet: a restarting server): the chat call retries
                return None
            except httpx.HTTPError:
                # Slow or broken: estimate for a minute rather than wait on every source of a prompt.
                self._token_counts_paused_until = time.monotonic() + 60
                return None
            try:
                count = response.json().get("count") if response.status_code == 200 else None
            except (ValueError, AttributeError):  # not JSON, or not an object: this server cannot count here
                count = None
            if isinstance(count, int):
                self._token_endpoint = endpoint
                return count
        self._token_endpoint = ""  # neither: estimate from now on
        return None

    def stream_chat(
        self,
        messages: Sequence[dict[str, str]],
        extra_body: dict[str, Any] | None = None,
        max_tokens: int | None = None,
        temperature: float | None = None,
    ) -> Iterator[str]:
        """Yield the answer's text as it is generated (``max_tokens``, ``temperature``: this call only).

        Only opening the stream is retried: once text has been shown it cannot be taken back. A stream
        that closes with neither text nor a finish reason (a server restarting under the request) has
        shown nothing, so it is opened again too (within ``retries``; still empty, the answer is empty).
        """
        extra_body = {**self.extra_body, **(extra_body or {})}
        with self._held_slot():  # the deadline counts from here: waiting for a slot is not the server's time
            deadline = Deadline(self.deadline_s)
            model = self._model_within(deadline)
            for _ in range(self.retries + 1):
                stream = self._call(
                    lambda timeout: self._client.chat.completions.create(
                        model=model,
                        messages=list(messages),
                        temperature=self.temperature if temperature is None else temperature,
                        max_tokens=max_tokens or self.max_tokens,
                        stream=True,
                        extra_body=extra_body or None,
                        timeout=timeout,
                    ),
                    deadline,
                )
                self._check_is_a_stream(stream)
                shown = finished = False
                try:
                    for chunk in stream:
                        if deadline.passed:
                            stream.close()
                            raise self._past_deadline(deadline, "while it was still answering")
                        if request_stopped():  # the request's client left, or its deadline passed: stop writing
                            stream.close()
                            request_check("the rest of the answer")
                        if not chunk.choices:
                            continue
                        finished = finished or chunk.choices[0].finish_reason is not None
                        if chunk.choices[0].delta.content:
                            shown = True
                            yield chunk.choices[0].delta.content
                except openai.APITimeoutError as error:
                    waited = f"stopped sending the answer for {self.timeout_s:g} s"
                    raise self._timed_out(deadline, "while it was still answering", waited) from error
                except (openai.APIError, httpx.HTTPError) as error:
                    raise LLMUnavailableError(f"the answer stream from {self.base_url} broke off: {error}") from error
                except (ValueError, TypeError, AttributeError, KeyError) as error:  # `data: {not json`
                    raise LLMUnavailableError(
                        f"the LLM server at {self.base_url} sent a malformed answer stream ({_describe(error)})"
                    ) from error
                if shown or finished:
                    return
            # Still nothing: a small model can end its answer at once (llama.cpp then sends no finish
            # reason either), so the answer is empty and the caller judges it.

    def chat(
        self,
        messages: Sequence[dict[str, str]],
        extra_body: dict[str, Any] | None = None,
        max_tokens: int | None = None,
        temperature: float | None = None,
    ) -> str:
        return "".join(self.stream_chat(messages, extra_body, max_tokens, temperature))

    def chat_with_alternatives(
        self,
        messages: Sequence[dict[str, str]],
        max_tokens: int | None = None,
        alternatives: int = 10,
    ) -> tuple[str, list[dict[str, float]]]:
        """The reply (temperature 0) and, for each token of it, the ``alternatives`` likeliest tokens
        with their log probabilities; the quoting answer reads how sure the model was of the source
        numbers it wrote. vLLM returns them; llama-cpp-python's server only when it keeps every
        position's logits (``llm.llama_cpp.prompt_logits``, off by default: it slows prompt reading).
        A server that refuses is asked again without them, and not asked for them again: the reply
        then comes with no alternatives."""
        if self._alternatives_refused:
            return self.chat(messages, max_tokens=max_tokens, temperature=0.0), []
        with self._held_slot():
            deadline = Deadline(self.deadline_s)
            model = self._model_within(deadline)
            try:
                response = self._client.chat.completions.create(
                    model=model,
                    messages=list(messages),
                    temperature=0.0,
                    max_tokens=max_tokens or self.max_tokens,
                    logprobs=True,
                    top_logprobs=alternatives,
                    extra_body=self.extra_body or None,
                    timeout=deadline.bound(self.timeout_s),
                )
            except openai.APITimeoutError as error:
                waited = f"did not answer within {self.timeout_s:g} s"
                raise self._timed_out(deadline, "before its answer was complete", waited) from error
            except openai.APIStatusError as error:
                if "logprob" not in str(error).lower():
                    raise LLMUnavailableError(
                        f"the LLM server at {self.base_url} failed: {_describe(error)}"
                    ) from error
                self._alternatives_refused = True
                response = None
            except (openai.APIError, httpx.HTTPError) as error:
                raise LLMUnavailableError(f"the LLM server at {self.base_url} failed: {_describe(error)}") from error
            except json.JSONDecodeError as error:  # a proxy's error page with status 200, a cut body
                sent = " ".join(str(error.doc)[:160].split())
                raise LLMUnavailableError(
                    f"the LLM server at {self.base_url} answered with something other than the API's JSON: {sent!r}"
                ) from error
        if response is None:
            return self.chat(messages, max_tokens=max_tokens, temperature=0.0), []
        try:
            choice = response.choices[0]
            text = choice.message.content or ""
        except (ValueError, TypeError, AttributeError, KeyError, IndexError) as error:
            raise LLMUnavailableError(
                f"the LLM server at {self.base_url} sent a malformed answer ({_describe(error)})"
            ) from error
        tokens: list[dict[str, float]] = []
        content = getattr(getattr(choice, "logprobs", None), "content", None) or []
        for token in content:
            tops = getattr(token, "top_logprobs", None) or []
            tokens.append({top.token: float(top.logprob) for top in tops} or {token.token: float(token.logprob)})
        return text, tokens

    def _model_within(self, deadline: Deadline) -> str:
        if self._model is None:
            self._models(deadline)
        return self.model

    def _models(self, deadline: Deadline | None = None) -> list[Any]:
        if self._server_models is None:
            deadline = deadline or Deadline(self.deadline_s)
            try:
                models = list(self._call(lambda timeout: self._client.models.list(timeout=timeout).data, deadline))
                if not all(isinstance(getattr(entry, "id", None), str) for entry in models):
                    raise TypeError("its entries have no model id")
            except (ValueError, TypeError, AttributeError, KeyError, openai.APIResponseValidationError) as error:
                raise LLMUnavailableError(
                    f"the server at {self.base_url} is not an OpenAI-compatible LLM server: /models answered "
                    f"something other than a model list ({_describe(error)})"
                ) from error
            self._server_models = models
        return self._server_models

    def _call(self, request: Callable[[float], Any], deadline: Deadline) -> Any:
        """``request(timeout)``, retried on the errors worth retrying until ``retries`` or the deadline."""
        stop = stop_after_attempt(self.retries + 1)
        remaining = deadline.remaining()
        if remaining is not None:
            stop = stop | stop_after_delay(remaining)
        retrying = Retrying(
            retry=retry_if_exception_type(RETRYABLE),
            stop=stop,
            wait=wait_random_exponential(multiplier=0.5, max=8),
            reraise=True,
        )
        try:
            return retrying(lambda: request(deadline.bound(self.timeout_s)))
        except openai.APITimeoutError as error:
            waited = f"did not answer within {self.timeout_s:g} s ({self.retries + 1} attempts)"
            raise self._timed_out(deadline, "before it answered", waited) from error
        except RETRYABLE as error:
            raise LLMUnavailableError(f"the LLM server at {self.base_url} is not reachable: {error}") from error

    def _check_is_a_stream(self, stream: Any) -> None:
        """Refuse a reply that is not an event stream (a proxy's error page sent with status 200): read as a
        stream it holds no event, and the answer would look merely empty. Says what the server sent."""
        response = getattr(stream, "response", None)
        if response is None:
            return
        kind = response.headers.get("content-type", "")
        if "text/event-stream" in kind:
            return
        try:
            start = response.read()[:160].decode("utf-8", errors="replace")
        except httpx.HTTPError:
            start = ""
        stream.close()
        raise LLMUnavailableError(
            f"the LLM server at {self.base_url} answered with {kind or 'no content type'}, not an answer stream: "
            f"{' '.join(start.split())!r}"
        )

    @contextmanager
    def _held_slot(self) -> Iterator[None]:
        """One of the server's slots (:mod:`rag_app.serving.server_slots`); the server too busy for too long is
        the server unavailable, with the reason."""
        try:
            with self._slots.held(self.slot_wait_s):
                yield
        except SlotWaitError as error:
            raise LLMUnavailableError(str(error)) from None

    def _timed_out(self, deadline: Deadline, when: str, waited: str) -> LLMUnavailableError:
        """A timeout in words: past the call's deadline (a local server is then taken for hung), or one wait
        of ``timeout_s`` (``waited``: what the server did not do in time)."""
        if deadline.passed:
            return self._past_deadline(deadline, when)
        return LLMUnavailableError(f"the LLM server at {self.base_url} {waited}")

    def _past_deadline(self, deadline: Deadline, when: str) -> LLMDeadlineError:
        reason = f"did not finish one request within its deadline of {deadline.seconds:g} s ({when})"
        if self.on_deadline is not None:
            self.on_deadline(reason)
        return LLMDeadlineError(f"the LLM server at {self.base_url} {reason}")


def _describe(error: Exception) -> str:
    """An exception as one short line: its type and the start of its message."""
    text = " ".join(str(error).split())
    return f"{type(error).__name__}: {text[:160]}" if text else type(error).__name__
