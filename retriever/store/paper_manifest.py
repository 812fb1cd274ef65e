"""Which papers an index holds, at which version and content hash (SQLite, in the index directory).

The manifest is written after a paper's statements are in the store, in one transaction per batch,
so after a crash at any point a rerun redoes exactly the papers whose entry is missing or stale.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, fields
from pathlib import Path

from retriever.storage.sqlite_file import connect

SCHEMA = """
CREATE TABLE IF NOT EXISTS papers (
    paper_id     TEXT PRIMARY KEY,
    version      TEXT NOT NULL DEFAULT '',
    content_hash TEXT NOT NULL,
    status       TEXT NOT NULL,           -- ok | skipped | failed
    statements   INTEGER NOT NULL DEFAULT 0,
    reason       TEXT NOT NULL DEFAULT '',
    title        TEXT NOT NULL DEFAULT '',
    authors      TEXT NOT NULL DEFAULT '',
    abstract     TEXT NOT NULL DEFAULT '',
    categories   TEXT NOT NULL DEFAULT '',
    published    TEXT NOT NULL DEFAULT '',
    source       TEXT NOT NULL DEFAULT '',
    ingested_at  TEXT NOT NULL
)
"""


@dataclass(frozen=True, slots=True)
class PaperEntry:
    paper_id: str
    version: str
    content_hash: str
    status: str
    statements: int = 0
    reason: str = ""
    title: str = ""
    authors: str = ""
    abstract: str = ""
    categories: str = ""
    published: str = ""
    source: str = ""
    ingested_at: str = ""


_COLUMNS = [f.name for f in fields(PaperEntry)]


class PaperManifest:
    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._db = connect(path, durable=True)
        self._db.execute(SCHEMA)
        self._db.commit()

    def get(self, paper_id: str) -> PaperEntry | None:
        row = self._db.execute(f"SELECT {', '.join(_COLUMNS)} FROM papers WHERE paper_id = ?", (paper_id,)).fetchone()
        return PaperEntry(*row) if row else None

    def record(self, entries: Iterable[PaperEntry]) -> None:
        """Insert or replace ``entries`` in one transaction."""
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        rows = [{**asdict(entry), "ingested_at": entry.ingested_at or stamp} for entry in entries]
        if not rows:
            return
        placeholders = ", ".join(f":{name}" for name in _COLUMNS)
        with self._db:
            self._db.executemany(f"INSERT OR REPLACE INTO papers ({', '.join(_COLUMNS)}) VALUES ({placeholders})", rows)

    def entries(self) -> Iterator[PaperEntry]:
        for row in self._db.execute(f"SELECT {', '.join(_COLUMNS)} FROM papers ORDER BY paper_id"):
            yield PaperEntry(*row)

    def count(self, status: str | None = None) -> int:
        if status is None:
            return self._db.execute("SELECT COUNT(*) FROM papers").fetchone()[0]
        return self._db.execute("SELECT COUNT(*) FROM papers WHERE status = ?", (status,)).fetchone()[0]

    def close(self) -> None:
        self._db.close()
