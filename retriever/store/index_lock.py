"""One process at a time for work that rewrites an index's derived stores (``rag-app repair``).

An advisory lock on a file in the index directory (``fcntl.flock``): a second repair waits for the
first, then finds the stores in step and has nothing to do, instead of reading files the first one is
rewriting. The lock goes with the process, so a killed repair never leaves it held.
"""

from __future__ import annotations

import contextlib
import fcntl
from collections.abc import Callable, Iterator
from pathlib import Path

LOCK_FILE = "repair.lock"


@contextlib.contextmanager
def exclusive(directory: Path, on_wait: Callable[[], None] | None = None, lock_file: str = LOCK_FILE) -> Iterator[None]:
    """Hold the index's lock (``lock_file``: another job's own lock); ``on_wait`` is called once if another
    process holds it first."""
    with (directory / lock_file).open("a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if on_wait is not None:
                on_wait()  # may raise instead of waiting (a job that must not wait with no end)
            fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
