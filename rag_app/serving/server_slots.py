"""The LLM server's slots, shared by every process on this machine that talks to it.

A llama.cpp server on a CPU serves one prompt at a time. The chat (`rag-app ui`) and `rag-app serve`
share one such server (the chat's own, or ``llm.base_url``); with a count of the prompts sent kept in each
process, the two could send one each, at once. So the slots are files, one per slot, in one folder
per user, named by the server's URL; a request holds an exclusive lock (``flock``) on one of them while
the server works on it. The kernel frees a lock when its process ends, however it ends, so a process
killed mid-answer holds nothing.

Every wait for a slot has a deadline: ``wait_s`` (the LLM client's: twice the longest one call may take),
and the request's own where one is set (``retriever.deadline``: a served request past its time limit stops
waiting at once).
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import retriever.deadline as request_deadline

POLL_S = 0.02  # how often a request waiting for a slot held by another process looks again


class SlotWaitError(TimeoutError):
    """No slot of the server came free within the wait's bound: other requests held them all."""


def default_directory() -> Path:
    """One folder per user on this machine: every process of that user that talks to a server finds it."""
    return Path(tempfile.gettempdir()) / f"rag-app-llm-slots-{os.getuid()}"


class ServerSlots:
    """At most ``count`` requests at once to the server at ``base_url``, across threads and processes."""

    def __init__(self, base_url: str, count: int, directory: Path | None = None) -> None:
        if count < 1:
            raise ValueError(f"a server has at least one slot, got {count}")
        self.base_url = base_url
        self.count = count
        self.directory = directory or default_directory()
        key = hashlib.sha256(base_url.rstrip("/").encode()).hexdigest()[:16]
        self.paths = [self.directory / f"{key}-{slot}.lock" for slot in range(count)]
        # This process's requests wait here first, in turn, rather than all polling the files.
        self._in_process = threading.BoundedSemaphore(count)

    @contextmanager
    def held(self, wait_s: float) -> Iterator[None]:
        """A slot, waited for at most ``wait_s`` (:class:`SlotWaitError` past it); a request's own deadline
        starts once it holds one."""
        ends = time.monotonic() + wait_s
        request_ends = request_deadline.current()
        first_wait_ends = ends if request_ends is None else min(ends, request_ends)
        if not self._in_process.acquire(timeout=max(0.0, first_wait_ends - time.monotonic())):
            request_deadline.check("a free slot at the LLM server")
            raise self._busy(wait_s)
        try:
            descriptor = self._take(ends, wait_s)
            try:
                yield
            finally:
                fcntl.flock(descriptor, fcntl.LOCK_UN)
                os.close(descriptor)
        finally:
            self._in_process.release()

    def _take(self, ends: float, wait_s: float) -> int:
        self.directory.mkdir(parents=True, exist_ok=True)
        while True:
            for path in self.paths:
                descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
                try:
                    fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    return descriptor
                except BlockingIOError:
                    os.close(descriptor)
            if time.monotonic() >= ends:
                raise self._busy(wait_s)
            request_deadline.check("a free slot at the LLM server")
            time.sleep(POLL_S)

    def _busy(self, wait_s: float) -> SlotWaitError:
        return SlotWaitError(
            f"the LLM server at {self.base_url} stayed busy: none of its {self.count} slot(s) came free within "
            f"{wait_s:g} s (other requests, perhaps of another process on this machine, held them)"
        )
