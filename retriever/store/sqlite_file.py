"""The one way the index's SQLite stores (duplicate groups, the statement graph) open their file."""

from __future__ import annotations

import sqlite3
from pathlib import Path


def connect(path: Path) -> sqlite3.Connection:
    """A connection in WAL mode (readers never block the writer), waiting up to a minute for a lock."""
    db = sqlite3.connect(path, timeout=60)
    db.execute("PRAGMA journal_mode=WAL")
    return db
