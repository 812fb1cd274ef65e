"""Which statements each complete write of the index committed, by generation: what readers in other processes pin.

Embedded Chroma is one store per process over shared files. A writer's batch reaches Chroma's SQLite records
before another process's copy of the vector index has it, and before BM25, the statement graph and the other
derived stores have it; a reader that lists ids in Chroma and then reads their vectors ("Error finding id"),
or takes a BM25 hit the graph does not know yet, sees half a write. So every write ends with a commit here, in
one SQLite transaction, after Chroma and every derived store are written: the generation goes up by one, and
each statement row says in which generation it was added and (once deleted) removed. The manifest, rewritten
last, names the generation.

A reader pins the generation its Chroma client was opened at (``CommittedGenerations.pinned``) and sees
exactly the statements visible at it: ``added <= G`` and not ``removed <= G``. Every write before G is whole
in every store by construction (the commit came after them), and nothing of a later write is seen, however far
it has got. The exact dense search reads its vectors from here at G, not from Chroma: the matrix of one
generation, read in one transaction, is the state of one complete write.

Vectors are kept while the index is small enough to be searched exactly (``keep_vectors``): above that the HNSW
graph answers and the ids are filtered by the same visibility. Rows removed more than ``KEPT_GENERATIONS``
generations ago are purged; a reader pinned further back than that only misses a statement since deleted.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from contextlib import closing
from pathlib import Path

import numpy as np

from retriever.storage.sqlite_file import SqliteStore, connect, named_errors

COMMITS_DB = "committed.sqlite"
LAYOUT_VERSION = 1
KEPT_GENERATIONS = 1000  # removed rows kept this many generations for the readers still pinned before them
_SQL_VARIABLES = 900  # rows per IN (...) query, under SQLite's variable limit on any build

_VISIBLE = "added <= ? AND (removed IS NULL OR removed > ?)"


class CommitLog(SqliteStore):
    """The committed generations of one index, in ``DIRECTORY/committed.sqlite``."""

    TABLE = "statement"

    def __init__(self, directory: Path) -> None:
        super().__init__(directory / COMMITS_DB)

    def _create(self) -> None:
        with closing(connect(self.path)) as db, db:
            if int(db.execute("PRAGMA user_version").fetchone()[0]) not in (0, LAYOUT_VERSION):
                db.execute("DROP TABLE IF EXISTS statement")
                db.execute("DROP TABLE IF EXISTS meta")
            db.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL)")
            db.execute(
                "CREATE TABLE IF NOT EXISTS statement (id TEXT NOT NULL, added INTEGER NOT NULL, removed INTEGER, "
                "vector BLOB, PRIMARY KEY (id, added))"
            )
            db.execute("CREATE INDEX IF NOT EXISTS statement_removed ON statement (removed)")
            db.execute(f"PRAGMA user_version = {LAYOUT_VERSION}")

    # ----------------------------------------------------------------- writing (the writer lock held)
    @named_errors
    def commit(self, added_ids: Sequence[str], vectors: np.ndarray | None, removed_ids: Iterable[str] = ()) -> int:
        """One complete write: ``removed_ids`` leave and ``added_ids`` (with their ``vectors``, or none) enter,
        a statement added again replacing its row; returns the new generation."""
        with closing(connect(self.path)) as db, db:
            generation = _generation(db) + 1
            removed = list(dict.fromkeys([*removed_ids, *added_ids]))
            for start in range(0, len(removed), _SQL_VARIABLES):
                batch = removed[start : start + _SQL_VARIABLES]
                marks = ",".join("?" * len(batch))
                db.execute(
                    f"UPDATE statement SET removed = ? WHERE removed IS NULL AND id IN ({marks})", [generation, *batch]
                )
            rows = [
                (statement_id, generation, None if vectors is None else _blob(vectors[row]))
                for row, statement_id in enumerate(added_ids)
            ]
            db.executemany("INSERT OR REPLACE INTO statement (id, added, vector) VALUES (?, ?, ?)", rows)
            purged = generation - KEPT_GENERATIONS
            db.execute("DELETE FROM statement WHERE removed IS NOT NULL AND removed <= ?", [purged])
            db.execute("INSERT OR REPLACE INTO meta VALUES ('generation', ?)", [generation])
        return generation

    # ----------------------------------------------------------------- reading
    @named_errors
    def generation(self) -> int:
        """The last committed generation (0: nothing committed yet)."""
        with self._reads.reading() as db:
            return _generation(db)

    @named_errors
    def ids(self) -> set[str]:
        """The statements visible now (what `rag-app status` compares with Chroma)."""
        with self._reads.reading() as db:
            return {row[0] for row in db.execute("SELECT id FROM statement WHERE removed IS NULL")}

    @named_errors
    def count(self) -> int:
        with self._reads.reading() as db:
            return int(db.execute("SELECT COUNT(*) FROM statement WHERE removed IS NULL").fetchone()[0])

    @named_errors
    def visible(self, ids: Sequence[str], generation: int) -> set[str]:
        """Those of ``ids`` a reader pinned at ``generation`` sees."""
        found: set[str] = set()
        unique = list(dict.fromkeys(ids))
        with self._reads.reading() as db:
            for start in range(0, len(unique), _SQL_VARIABLES):
                batch = unique[start : start + _SQL_VARIABLES]
                marks = ",".join("?" * len(batch))
                query = f"SELECT id FROM statement WHERE id IN ({marks}) AND {_VISIBLE}"
                found.update(row[0] for row in db.execute(query, [*batch, generation, generation]))
        return found

    @named_errors
    def visible_count(self, generation: int) -> int:
        with self._reads.reading() as db:
            query = f"SELECT COUNT(*) FROM statement WHERE {_VISIBLE}"
            return int(db.execute(query, [generation, generation]).fetchone()[0])

    @named_errors
    def vectors_at(self, generation: int) -> tuple[list[str], np.ndarray] | None:
        """Every statement visible at ``generation`` with its vector, rows in id order (one read, so one
        complete write's state); None where some visible statement was committed without its vector (the
        index outgrew the exact search)."""
        with self._reads.reading() as db:
            query = f"SELECT id, vector FROM statement WHERE {_VISIBLE} ORDER BY id"
            rows = db.execute(query, [generation, generation]).fetchall()
        if any(vector is None for _id, vector in rows):
            return None
        if not rows:
            return [], np.zeros((0, 0), dtype=np.float32)
        return [row[0] for row in rows], np.vstack([np.frombuffer(row[1], dtype="<f4") for row in rows])


def _generation(db: sqlite3.Connection) -> int:
    found = db.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()
    return int(found[0]) if found else 0


def _blob(vector: np.ndarray) -> bytes:
    return np.asarray(vector, dtype="<f4").tobytes()


class CommittedState:
    """The index as a reader pinned at one generation sees it: which statements, and their vectors."""

    def __init__(self, log: CommitLog, generation: int) -> None:
        self.log = log
        self.generation = generation

    @property
    def key(self) -> tuple[str, int]:
        """What a matrix read at this state is kept under."""
        return ("committed", self.generation)

    def count(self) -> int:
        return self.log.visible_count(self.generation)

    def vectors(self) -> tuple[list[str], np.ndarray] | None:
        return self.log.vectors_at(self.generation)

    def visible(self, ids: Sequence[str]) -> set[str]:
        return self.log.visible(ids, self.generation)
