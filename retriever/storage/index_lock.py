"""Advisory locks on files in the index directory (``fcntl.flock``), gone with a killed process.

:func:`exclusive`: one process at a time for a job (``rag-app repair``, ``build-dense2``): a second repair
waits for the first, then finds the stores in step and has nothing to do.
:class:`WriterLock`: one writer at a time per index (ingests, and every write to the statements).
"""

from __future__ import annotations

import contextlib
import fcntl
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO

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


WRITE_LOCK_FILE = "write.lock"


class IndexWriterBusyError(RuntimeError):
    """Another process has been writing this index for longer than this one would wait."""


class WriterLock:
    """One writer at a time per index, across processes: held for a whole ingest, and for each write
    of anything else that writes (an advisory ``fcntl.flock`` on ``write.lock``, gone with a killed
    process). Re-entrant within its owner, so an ingest that holds it writes its batches under it.

    Two ingests into one index at once would collide (one dies when the other removes its staging
    files), so the second waits (``on_wait`` tells the user once) and, past ``wait_s``, raises
    :class:`IndexWriterBusyError`. Readers never take it: they only ask :meth:`held_elsewhere` before
    repairing a store that a writer may be in the middle of.
    """

    def __init__(self, directory: Path, wait_s: float = 900.0) -> None:
        self.directory = directory
        self.wait_s = wait_s
        self._guard = threading.RLock()  # threads of this process take turns here, before the flock
        self._handle: IO[str] | None = None
        self._depth = 0
        self._owner: int | None = None  # the thread holding it

    @contextlib.contextmanager
    def hold(self, on_wait: Callable[[], None] | None = None, wait_s: float | None = None) -> Iterator[None]:
        wait_s = self.wait_s if wait_s is None else wait_s
        if not self._guard.acquire(blocking=False):  # another thread of this process is writing
            if on_wait is not None:
                on_wait()
                on_wait = None
            if not self._guard.acquire(timeout=wait_s):
                raise self._busy(wait_s)
        try:
            if self._depth == 0:
                self._handle = self._acquire(on_wait, wait_s)
                self._owner = threading.get_ident()
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
                if self._depth == 0 and self._handle is not None:
                    fcntl.flock(self._handle, fcntl.LOCK_UN)
                    self._handle.close()
                    self._handle = None
                    self._owner = None
        finally:
            self._guard.release()

    def held_elsewhere(self) -> bool:
        """Whether another thread or process is writing right now (not the caller's own write)."""
        if self._depth:
            return self._owner != threading.get_ident()
        path = self.directory / WRITE_LOCK_FILE
        if not path.exists():
            return False
        try:
            handle = path.open("a")
        except OSError:  # a read-only index: nobody writes it
            return False
        with handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return True
            fcntl.flock(handle, fcntl.LOCK_UN)
            return False

    def _acquire(self, on_wait: Callable[[], None] | None, wait_s: float) -> IO[str]:
        self.directory.mkdir(parents=True, exist_ok=True)
        handle = (self.directory / WRITE_LOCK_FILE).open("a")
        deadline = time.monotonic() + wait_s
        told = False
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return handle
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    handle.close()
                    raise self._busy(wait_s) from None
                if not told and on_wait is not None:
                    on_wait()
                    told = True
                time.sleep(min(0.25, max(0.0, deadline - time.monotonic())))

    def _busy(self, wait_s: float) -> IndexWriterBusyError:
        return IndexWriterBusyError(
            f"another ingest is writing the index {self.directory} (waited {wait_s:g} s, "
            "ingestion.writer_wait_s): run this again when it has finished"
        )
