"""The statements a search read last, kept in memory: a search's candidates without a Chroma read.

Reading 100 candidates' records and vectors from Chroma costs about 20-25 ms of a search (17,780
statements, 2 CPUs; bench/results/search_profile.md), and the same statements come back search after
search. The cache holds the most recently read ``max_statements`` (least recently used dropped first).

It must never serve a statement that changed: the store clears it at each of its own writes and when
it opens its collection again (another process wrote: ``StatementIndex.follow_other_writers``). A read
that began before a clear may end after it; its statements are then not kept (``generation``).
Vectors are kept read-only, so a caller that wrote into one would fail instead of changing the cache.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence

import numpy as np

from ingestion.records import StatementRecord

# About 5 KB a statement with its proof and vector: some 100 MB at most.
DEFAULT_MAX_STATEMENTS = 20_000


class RecordCache:
    def __init__(self, max_statements: int = DEFAULT_MAX_STATEMENTS) -> None:
        self.max_statements = max_statements
        self._entries: OrderedDict[str, tuple[StatementRecord, np.ndarray]] = OrderedDict()
        self._lock = threading.Lock()
        self._generation = 0

    @property
    def generation(self) -> int:
        """Taken before a read from the store; :meth:`keep` drops what was read before a :meth:`clear`."""
        return self._generation

    def __len__(self) -> int:
        return len(self._entries)

    def find(self, ids: Sequence[str]) -> dict[str, tuple[StatementRecord, np.ndarray]]:
        """The cached ``ids`` (record and vector), each marked as just used."""
        found: dict[str, tuple[StatementRecord, np.ndarray]] = {}
        with self._lock:
            for statement_id in ids:
                entry = self._entries.get(statement_id)
                if entry is not None:
                    self._entries.move_to_end(statement_id)
                    found[statement_id] = entry
        return found

    def keep(self, generation: int, read: Iterable[tuple[StatementRecord, np.ndarray]]) -> None:
        """Keep statements read from the store when the cache stood at ``generation``."""
        if self.max_statements <= 0:
            return
        with self._lock:
            if generation != self._generation:
                return  # the store was written (or reopened) while they were read: they may be stale
            for record, vector in read:
                vector.setflags(write=False)
                self._entries[record.id] = (record, vector)
                self._entries.move_to_end(record.id)
            while len(self._entries) > self.max_statements:
                self._entries.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._generation += 1
