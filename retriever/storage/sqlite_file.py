"""The one way the index's SQLite stores (duplicate groups, the statement graph) open their file, and the
one place their errors are told apart: a file that is *busy* (another process holds its lock past the
timeout: wait, never rebuild) from a file that is *damaged* (truncated, zeroed, not a database: named, and
``rag-app repair`` rebuilds it from Chroma)."""

from __future__ import annotations

import contextlib
import functools
import os
import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import closing
from pathlib import Path
from typing import Any, TypeVar

BUSY_TIMEOUT_S = 60


# Both are sqlite3.DatabaseError, so that the code that already goes on past a store's failure (an ingest
# never fails on the statement graph) still does; what tells them apart is whether to rebuild.
class StoreFileDamagedError(sqlite3.DatabaseError):
    """A derived store's SQLite file cannot be read; the message names it and what to run."""


class StoreFileBusyError(sqlite3.DatabaseError):
    """Another process has held a derived store's SQLite file past the timeout: the file is fine."""


F = TypeVar("F", bound=Callable[..., Any])


def connect(path: Path, *, shared_by_threads: bool = False, durable: bool = False) -> sqlite3.Connection:
    """A connection in WAL mode (readers never block the writer), waiting up to a minute for a lock: the one
    set-up of every SQLite file of the index.

    ``shared_by_threads``: one connection that several threads use under their own lock (the BM25 catalogue);
    ``durable``: every commit synced to disk before it returns (the paper manifest, which says what is done)."""
    db = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, check_same_thread=not shared_by_threads)
    # WAL mode is kept in the file; setting it again cost half a millisecond on each of a search's three
    # connections, so it is set only on a file not (yet) in it. The mode is read through SQLite, never by
    # opening the file: closing any descriptor of a file drops every POSIX lock the process holds on it, the
    # locks of this process's other connections included, and a reader that lost its lock read pages a
    # checkpoint was overwriting ("database disk image is malformed", beside an ingest).
    if db.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
        db.execute("PRAGMA journal_mode=WAL")
    if durable:
        db.execute("PRAGMA synchronous=FULL")
    return db


class ReadConnections:
    """A store's read connection, kept open per thread between reads.

    A search reads three of these files. Opening and closing a connection for each read cost about 1.2 ms
    of a 25 ms search (bench/results/search_profile.md). A connection is kept only while the file on disk
    is the one it opened: a file removed, rebuilt (``rag-app repair``) or replaced by another process has a
    new inode or change time, and the next read opens the new one. An error drops the connection. Reads
    only: a kept connection never holds a transaction between reads, so it blocks no writer.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._local = threading.local()  # sqlite3 connections belong to the thread that opened them

    @contextlib.contextmanager
    def reading(self) -> Iterator[sqlite3.Connection]:
        stamp = _file_identity(self.path)  # taken before connecting: a file replaced meanwhile reads as changed
        held: tuple[tuple[int, int, int] | None, sqlite3.Connection] | None = getattr(self._local, "held", None)
        if held is not None and held[0] != stamp:
            self.drop()
            held = None
        if held is None:
            held = self._local.held = (stamp, connect(self.path))
        try:
            yield held[1]
        except sqlite3.Error:
            self.drop()
            raise

    def drop(self) -> None:
        """Close this thread's kept connection, if any."""
        held = getattr(self._local, "held", None)
        self._local.held = None
        if held is not None:
            held[1].close()


def _file_identity(path: Path) -> tuple[int, int, int] | None:
    """Which file is at ``path`` (device, inode, change time); None for none. Unlike
    :func:`retriever.storage.atomic_files.file_stamp` (a file's content changed), this tells files apart."""
    try:
        status = os.stat(path)
    except OSError:
        return None
    return (status.st_dev, status.st_ino, status.st_ctime_ns)


def is_busy(error: BaseException) -> bool:
    """Whether a SQLite error says another connection holds the lock (not that the file is damaged)."""
    text = str(error).lower()
    return isinstance(error, sqlite3.OperationalError) and ("locked" in text or "busy" in text)


def described(path: Path, error: sqlite3.Error) -> StoreFileDamagedError | StoreFileBusyError:
    """``error`` as one of the two things it can mean for a derived store's file, in words."""
    reason = " ".join(str(error).split())[:200] or type(error).__name__
    if is_busy(error):
        return StoreFileBusyError(
            f"{path} is busy: another process has held it for over {BUSY_TIMEOUT_S} s ({reason}); "
            "try again when it is done (the file is not damaged)"
        )
    return StoreFileDamagedError(f"{path} is damaged ({reason}); `rag-app repair` rebuilds it from Chroma")


def named_errors(method: F) -> F:
    """A store method whose SQLite errors come out as :func:`described` (the store has ``path``)."""

    @functools.wraps(method)
    def guarded(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except (StoreFileDamagedError, StoreFileBusyError):
            raise
        except sqlite3.DatabaseError as error:
            raise described(self.path, error) from error

    return guarded  # type: ignore[return-value]


def remove_damaged(path: Path) -> None:
    """Delete a damaged store file with its ``-wal`` and ``-shm`` (only ever after :func:`described` said
    damaged: a busy file is another process's, and is never removed)."""
    for suffix in ("", "-wal", "-shm"):
        path.with_name(path.name + suffix).unlink(missing_ok=True)


class SqliteStore:
    """A derived store kept in one SQLite file, set up in one place for all of them (the commit log, the statement
    graph, the duplicate groups, the ranking profiles): its tables made on opening, its reads on a connection
    kept per thread, and a damaged file replaced by an empty store that a repair fills again. A subclass gives
    ``_create`` (its tables; run on opening and after a recreate) and ``TABLE``, the table of one row per statement
    that ``ids`` and ``count`` read (what `rag-app status` compares with Chroma)."""

    TABLE = "statement"

    def __init__(self, path: Path) -> None:
        self.path = path
        self._reads = ReadConnections(path)  # the reads a search makes, on a connection kept per thread
        # A damaged or busy file: opening the index still works; `rag-app status` names it, reads raise
        # StoreFileDamagedError / StoreFileBusyError, and `repair` rebuilds a damaged one.
        with contextlib.suppress(sqlite3.DatabaseError):
            self._create()

    def recreate(self) -> None:
        """An empty store in place of a damaged file or one of another version (a repair fills it again)."""
        self._reads.drop()
        remove_damaged(self.path)
        self._create()

    def _create(self) -> None:
        raise NotImplementedError

    def _connect(self) -> sqlite3.Connection:
        return connect(self.path)

    @named_errors
    def ids(self) -> set[str]:
        """Every statement the store holds a row for."""
        with closing(self._connect()) as db:
            return {row[0] for row in db.execute(f"SELECT id FROM {self.TABLE}")}

    @named_errors
    def count(self) -> int:
        with closing(self._connect()) as db:
            return int(db.execute(f"SELECT COUNT(*) FROM {self.TABLE}").fetchone()[0])
