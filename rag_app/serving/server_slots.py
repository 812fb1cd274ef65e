"""The LLM server's slots, shared by every process on this machine that talks to it (issue 77).

A llama.cpp server on a CPU serves one prompt at a time. The chat (`rag-app ui`) and `rag-app serve`
share one such server (the chat's own, or ``llm.base_url``), and each kept its own count of the prompts
it had sent: the two could send one each, at once. The slots are now files, one per slot, in one folder
per user, named by the server's URL; a request holds an exclusive lock (``flock``) on one of them while
the server works on it. The kernel frees a lock when its process ends, however it ends, so a process
killed mid-answer holds nothing.
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

POLL_S = 0.02  # how often a request waiting for a slot held by another process looks again


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
    def held(self) -> Iterator[None]:
        """A slot, waited for as long as it takes (a request's own deadline starts once it holds one)."""
        with self._in_process:
            descriptor = self._take()
            try:
                yield
            finally:
                fcntl.flock(descriptor, fcntl.LOCK_UN)
                os.close(descriptor)

    def _take(self) -> int:
        self.directory.mkdir(parents=True, exist_ok=True)
        while True:
            for path in self.paths:
                descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
                try:
                    fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    return descriptor
                except BlockingIOError:
                    os.close(descriptor)
            time.sleep(POLL_S)
