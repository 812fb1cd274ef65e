"""Reads of an index's Chroma stores and the reload that replaces their clients, kept apart.

When another process wrote the index, a long-lived reader (the HTTP API, the chat) opens its Chroma stores
again (``StatementIndex.follow_other_writers``): embedded Chroma keeps a vector index in each process's
memory, and the only way to read the new statements is a new client, after ``clear_system_cache()``. That
call drops every client of the process at once: a search in another thread, between two Chroma calls,
would then fail with the client gone. So the reload waits for the searches in flight, and searches that
start meanwhile wait for the reload (a few hundred milliseconds, once per write seen).

A thread that already reads (a search whose first stage asks whether to reload) is never made to wait for
itself: :meth:`ReloadGuard.reading` nests, and :meth:`ReloadGuard.reading_here` tells the reload to leave
it for the next search.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager


class ReloadGuard:
    """Many readers at once, or one reload: a reload waits for the readers in flight, and new readers wait for
    a reload that is waiting or running (so a steady stream of searches cannot put it off for ever)."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._readers = 0
        self._reloading = False
        self._depth = threading.local()  # how deep this thread is in reading() (it nests)

    @contextmanager
    def reading(self) -> Iterator[None]:
        depth = getattr(self._depth, "value", 0)
        if depth == 0:
            with self._changed:
                self._changed.wait_for(lambda: not self._reloading)
                self._readers += 1
        self._depth.value = depth + 1
        try:
            yield
        finally:
            self._depth.value = depth
            if depth == 0:
                with self._changed:
                    self._readers -= 1
                    self._changed.notify_all()

    def reading_here(self) -> bool:
        """Whether this thread is inside :meth:`reading` (a reload now would wait for itself)."""
        return getattr(self._depth, "value", 0) > 0

    @contextmanager
    def reloading(self) -> Iterator[None]:
        with self._changed:
            self._changed.wait_for(lambda: not self._reloading)  # one reload at a time
            self._reloading = True  # readers arriving from now on wait
            self._changed.wait_for(lambda: self._readers == 0)
        try:
            yield
        finally:
            with self._changed:
                self._reloading = False
                self._changed.notify_all()
