"""``POST /v1/ask`` (``ask --json``) and ``POST /v1/ask/stream`` (the same as server-sent events)."""

from __future__ import annotations

import inspect
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from fastapi import APIRouter
from fastapi.responses import JSONResponse, StreamingResponse
from starlette.types import Receive, Scope, Send

from rag_app.answering.answer_record import AnswerRecord
from rag_app.api.errors import ApiError
from rag_app.api.guards import QueueFullError
from rag_app.api.requests import AskRequest
from rag_app.api.routes import Backend, past_deadline
from rag_app.api.serving_backend import DeadlineError, ServingBackend
from rag_app.api.streamed_answer import StreamedAnswer

router = APIRouter()
# The stream's last event: what was checked of the answer (the same fields as in its `answer` event).
CHECKS = ("status", "supported", "citations_valid", "invalid_citations", "attributed", "unsupported_sentences",
          "llm_error", "timings_ms")  # fmt: skip


def queue_full(backend: ServingBackend) -> ApiError:
    asks = backend.asks
    return ApiError(
        429,
        f"{asks.running} answers are being written and {asks.waiting} wait (api.max_queued_asks); retry later",
        {"Retry-After": str(backend.limits.retry_after_s)},
    )


@router.post(
    "/v1/ask",
    summary="The quoting answer with its sources (`ask --json`: the same record, `llm` included)",
    responses={200: {"model": AnswerRecord}, 503: {"model": AnswerRecord, "description": "the LLM was not there"}},
)
async def ask(backend: Backend, request: AskRequest) -> JSONResponse:
    try:
        answer = await backend.record(await backend.ask(request.question, request.k))
    except QueueFullError:
        raise queue_full(backend) from None
    except DeadlineError as error:
        raise past_deadline(error) from None
    # As `ask` does: when the LLM is down the sources are still returned, with the reason.
    return JSONResponse(answer, status_code=503 if answer.get("llm_error") else 200)


@router.post(
    "/v1/ask/stream",
    summary="The answer as server-sent events: `sources` (with `next_results`, the same search's next results), "
    "`text` chunks, `answer` (`ask --json`), then `checks`. "
    "Where the model chooses, the first `text` quotes the search's first result at once; the model's choice "
    "follows as a `text` event that also carries `replace` (the answer as it now stands), `changed` and `notice`",
)
async def ask_stream(backend: Backend, request: AskRequest) -> StreamingResponse:
    try:
        answer = await backend.stream_answer(request.question, request.k)
    except QueueFullError:
        raise queue_full(backend) from None
    except DeadlineError as error:
        raise past_deadline(error) from None
    timeout_s = backend.limits.ask_timeout_s
    events = _events(answer, backend, timeout_s)
    return ReleasingStream(events, answer.close, media_type="text/event-stream", headers={"Cache-Control": "no-cache"})


async def _events(answer: StreamedAnswer, backend: ServingBackend, timeout_s: float) -> AsyncIterator[str]:
    try:
        sources = [hit.to_dict() for hit in answer.sources]
        yield _event("sources", {"sources": sources, "next_results": [hit.to_dict() for hit in answer.next_results]})
        async for chunk in answer:
            # An update (the model's choice after the quote shown first) is text to append that says what
            # changed, and for a client that redraws, the answer as it now stands ("replace").
            yield _event("text", {"text": chunk} if isinstance(chunk, str) else chunk.to_dict())
        record = await backend.record(await answer.result())
    except DeadlineError:
        reason = f"the answer ran past its time limit (api.ask_timeout_s = {timeout_s:g} s)"
        yield _event("error", {"error": {"status": 504, "reason": reason}})
        return
    finally:  # however it ended (a client that left, the deadline): the LLM stops, then its turn is free
        await answer.close()
    yield _event("answer", record)
    yield _event("checks", {key: record[key] for key in CHECKS})


class ReleasingStream(StreamingResponse):
    """A stream that gives its turn at the LLM back however it ends: finished, failed before its first
    chunk, or left by its client (whose body generator is then never resumed, so a ``finally`` in it would
    not run, and three abandoned streams would hold the queue). ``release`` may be a coroutine function."""

    def __init__(
        self, content: AsyncIterator[str], release: Callable[[], Awaitable[None] | None], **kwargs: Any
    ) -> None:
        super().__init__(content, **kwargs)
        self._release = release

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            aclose = getattr(self.body_iterator, "aclose", None)
            if aclose is not None:
                await aclose()  # runs the body's own clean-up when its client left mid-stream
            released = self._release()
            if inspect.isawaitable(released):
                await released


def _event(name: str, data: object) -> str:
    return f"event: {name}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"
