"""The deadline of the request a search serves, checked between the search's stages.

A Python thread cannot be stopped from outside. A search the HTTP API or the MCP server gives up at its time
limit would otherwise run on to its end in its worker thread, holding a CPU (and its slot) for nothing. So the
serving backend runs each request's work :func:`within` its deadline, and each stage of a search (the first
stage, the learned ranker, the reranker, the statement rewrite, the graph counts, each chunk of an answer)
calls :func:`check` before it starts: past the deadline it raises :class:`DeadlinePassedError`, so the
work ends at its next stage instead of running on. A stage that is already running (one Chroma query, one
LLM chunk) still ends by itself; the longest of those bound how late a thread can end.

A context variable carries the deadline, not an argument: the stages are composed searchers behind one
small protocol that code outside this package implements too, and a deadline is a concern of serving
alone. Outside a request (the CLI, the chat, the evaluation) no deadline is set and a check is one lookup.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TypeVar

T = TypeVar("T")
_deadline: ContextVar[float | None] = ContextVar("request_deadline", default=None)
# Set when the request's client left (a stream closed mid-answer): the work stops as at its deadline.
_left: ContextVar[threading.Event | None] = ContextVar("request_left", default=None)


class DeadlinePassedError(TimeoutError):
    """The request's deadline passed before a stage of its work began."""


@contextmanager
def within(deadline: float | None) -> Iterator[None]:
    """Work in this block checks ``deadline`` (a ``time.monotonic()`` instant; None: no deadline)."""
    token = _deadline.set(deadline)
    try:
        yield
    finally:
        _deadline.reset(token)


def run_within(deadline: float | None, work: Callable[[], T], left: threading.Event | None = None) -> T:
    """``work()`` :func:`within` ``deadline`` (for a worker thread, whose context starts empty); ``left``: set
    when the request's client leaves, which stops the work at its next check as the deadline would."""
    token = _left.set(left)
    try:
        with within(deadline):
            return work()
    finally:
        _left.reset(token)


def stopped() -> bool:
    """Whether the current request's deadline passed or its client left (cheap: for a loop over chunks)."""
    deadline, left = _deadline.get(), _left.get()
    return (left is not None and left.is_set()) or (deadline is not None and time.monotonic() > deadline)


def current() -> float | None:
    """The current request's deadline (a ``time.monotonic()`` instant), None outside a request."""
    return _deadline.get()


def check(stage: str) -> None:
    """Raise :class:`DeadlinePassedError` when the current request's deadline has passed before ``stage``."""
    left = _left.get()
    if left is not None and left.is_set():
        raise DeadlinePassedError(f"the request's client left before {stage}")
    deadline = _deadline.get()
    if deadline is not None and time.monotonic() > deadline:
        raise DeadlinePassedError(f"the request ran past its time limit before {stage}")
