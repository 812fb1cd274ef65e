"""The index's committed generations: each write committed once every store has it, and the generation reads pin.

``StatementIndex`` writes Chroma, then every derived store, then commits the write here
(:mod:`retriever.storage.commit_log`: one SQLite transaction, a new generation), and last rewrites the manifest
naming that generation. A process pins the generation its Chroma client was opened at (the manifest's, read
before the client opens) and its searches see the statements visible at it and no others (:meth:`visible`); the
exact dense search reads its vectors from the log at it (``ChromaStatementStore.committed``). A reader so sees the
last complete write it knows of, or the one before; never a batch in flight.

A write killed between its stores and its commit, or an index made before the log, leaves the log behind Chroma:
the next ingest commits what Chroma holds beyond it (:meth:`catch_up`), and so does the first search of a process
that finds no writer at work (:meth:`sync`).
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import numpy as np

from ingestion.records import StatementRecord
from retriever.storage.commit_log import CommitLog, CommittedState
from retriever.storage.index_lock import IndexWriterBusyError, WriterLock
from retriever.storage.sqlite_file import StoreFileBusyError

if TYPE_CHECKING:
    from retriever.store.chroma_store import ChromaStatementStore

logger = logging.getLogger(__name__)


class CommittingIndex(Protocol):
    """What the commits read of the statement index that owns them (``StatementIndex``)."""

    directory: Path
    store: ChromaStatementStore
    writer: WriterLock

    def manifest(self) -> dict[str, object]: ...

    def write_manifest(
        self, collection: str | None = None, statements: int | None = None, generation: int | None = None
    ) -> None: ...

    def count(self) -> int: ...


class CommittedGenerations:
    """The commit log of one index, the generation this process pinned, and keeping the two in step."""

    def __init__(self, index: CommittingIndex) -> None:
        self.index = index
        self.log = CommitLog(index.directory)

    # ----------------------------------------------------------------- reading
    @property
    def pinned(self) -> int | None:
        """The generation this process's searches read at (None: the index has no commit log yet)."""
        committed = self.index.store.committed
        return None if committed is None else committed.generation

    def pin(self, generation: object) -> None:
        """Read at ``generation`` from now on (the manifest's value: None or absent on an index without a log)."""
        store = self.index.store
        store.committed = CommittedState(self.log, generation) if isinstance(generation, int) else None

    def visible(self, ids: Sequence[str]) -> set[str]:
        """Those of ``ids`` a search of this process may return: committed at the generation it pinned (every one
        on an index that has no commit log yet). From the exact search's matrix when it is read, else one query."""
        store = self.index.store
        committed = store.committed
        if committed is None:
            return set(ids)
        kept = store.exact.ids_of(committed.key)
        return {i for i in ids if i in kept} if kept is not None else committed.visible(ids)

    # ----------------------------------------------------------------- writing (the writer lock held)
    def in_step(self) -> bool:
        """Whether the log holds every complete write: the manifest, written after each commit, names its
        generation (an index made before the log names none)."""
        try:
            return self.index.manifest().get("generation") == self.log.generation()
        except sqlite3.DatabaseError:
            return False

    def commit(self, added: Sequence[str], vectors: np.ndarray | None, removed: Sequence[str], in_step: bool) -> int:
        """The write that Chroma and every derived store now hold, committed as one generation (returned); a log
        that was behind (``in_step`` false, asked before the write) is caught up instead. The vectors are kept
        while the index is small enough for the exact search."""
        if not in_step:
            return self._caught_up()
        limit = self.index.store.exact.max_vectors
        keep = limit > 0 and self.log.count() + len(added) <= limit
        return self.log.commit(added, vectors if keep else None, removed)

    def catch_up(self, quick: bool = True, show_progress: bool = False) -> None:
        """Commit what Chroma holds and the log does not, and forget what Chroma no longer holds, as one
        generation; ``quick``: only when the log is behind the manifest or the counts differ."""
        with self.index.writer.hold():
            if quick and self.in_step() and self.log.count() == self.index.count():
                return
            generation = self._caught_up(show_progress)
            self.pin(generation)
            self.index.write_manifest(generation=generation)

    def sync(self) -> None:
        """A process's first search: when the log is behind Chroma and no writer is at work, it is caught up; with
        a writer at work, that writer's commit does it, and this process reads what is committed (or, on an index
        with no log yet, reads as before: its own vectors, unfiltered) until it sees that commit."""
        if not (self.index.directory / "manifest.json").exists() or self.index.writer.held_elsewhere():
            return
        if self.in_step() and self.log.count() == self.index.count():
            return
        try:
            with self.index.writer.hold(wait_s=0):
                self.catch_up()
        except IndexWriterBusyError:
            return

    def _caught_up(self, show_progress: bool = False) -> int:
        with self.index.writer.hold():
            try:
                known = self.log.ids()
            except StoreFileBusyError:
                raise  # another process holds it: the file is fine
            except sqlite3.DatabaseError:  # damaged: everything in it is derived from Chroma
                logger.warning("the commit log %s is damaged: made again from the statements", self.log.path)
                self.log.recreate()
                known = set()
            # This process's own Chroma, under the writer lock: whole.
            return commit_difference(self.log, known, self.index.store, show_progress)


def commit_difference(log: CommitLog, known: set[str], store: ChromaStatementStore, show_progress: bool = False) -> int:
    """Commit, as one generation of ``log`` (which holds ``known``), the statements ``store`` has beyond it, with
    their vectors while the store is small enough for the exact search, and forget those it no longer has."""
    stored = store.all_ids()
    missing, extra = sorted(stored - known), sorted(known - stored)
    limit = store.exact.max_vectors
    vectors = None
    if missing and limit > 0 and len(stored) <= limit:
        found = store.vectors(missing)
        missing = [statement_id for statement_id in missing if statement_id in found]
        vectors = np.stack([found[statement_id] for statement_id in missing]) if missing else None
    if show_progress:
        logger.info("commit log: %d statements committed, %d forgotten", len(missing), len(extra))
    return log.commit(missing, vectors, extra)


class CommittedStatementsStore:
    """The commit log as one of the index's derived stores (``rag-app status`` and ``repair`` list it). The index
    commits each write itself, after every other store has it, so it follows no write here; a catch-up commits
    what Chroma holds beyond it."""

    name = "committed statements"

    def __init__(self, commits: CommittedGenerations) -> None:
        self.commits = commits

    def kept(self) -> bool:
        return True

    def follows(self, lexical_in_step: bool) -> bool:
        return False  # committed by StatementIndex._written, after the others

    def add(self, records: Sequence[StatementRecord], vectors: np.ndarray) -> None:
        """Committed by the index once every store holds the write."""

    def remove(self, ids: Sequence[str], removed: Sequence[StatementRecord]) -> None:
        """Committed by the index once every store has forgotten them."""

    def ids(self) -> set[str]:
        return self.commits.log.ids()

    def count(self) -> int:
        return self.commits.log.count()

    @property
    def catch_up(self) -> Callable[..., None]:
        return self.commits.catch_up
