"""What the learned ranker reads off each statement alone, made at ingest and kept beside the index.

A statement's ranking profile (:class:`retriever.text.statement_profile.StatementProfile`: its kind,
length and formula share, its fields' terms, its formula tokens) is the same for every query, and making
one costs about 0.25 ms (tokenizing its text): 25 ms for the 100 candidates of a search that meets them
for the first time (bench/results/search_profile.md, the cold columns). So each is made once, when its
statement is stored, and kept in ``DIRECTORY/ranking_profiles.sqlite``; a search reads its candidates'
profiles in one query (about 3 ms for 100) instead of making them.

The file is derived (``retriever.store.derived_stores.RankingProfilesStore``): written with every write of
the index, compared with Chroma by ``rag-app status`` and rebuilt by ``rag-app repair``. Its
``user_version`` is :data:`PROFILE_VERSION`; a file of another version (profiles made by other rules) is
emptied and made again from the statements.
"""

from __future__ import annotations

import json
import sqlite3
import sys
from collections.abc import Iterable, Sequence
from contextlib import closing
from pathlib import Path

from ingestion.records import StatementRecord
from retriever.storage.sqlite_file import SqliteStore, connect, named_errors
from retriever.text.statement_profile import PROFILE_RULES_VERSION, StatementProfile

PROFILES_DB = "ranking_profiles.sqlite"
# Changes with the rules that make a profile, and with this file's layout.
PROFILE_VERSION = 100 * PROFILE_RULES_VERSION + 1


class RankingProfiles(SqliteStore):
    """The statements' ranking profiles, kept in ``DIRECTORY/ranking_profiles.sqlite``."""

    TABLE = "profile"

    def __init__(self, directory: Path) -> None:
        super().__init__(directory / PROFILES_DB)

    def _create(self) -> None:
        with closing(connect(self.path)) as db, db:
            version = int(db.execute("PRAGMA user_version").fetchone()[0])
            if version not in (0, PROFILE_VERSION):  # made by other rules: made again
                db.execute("DROP TABLE IF EXISTS profile")
            db.execute("CREATE TABLE IF NOT EXISTS profile (id TEXT PRIMARY KEY, data TEXT NOT NULL)")
            db.execute(f"PRAGMA user_version = {PROFILE_VERSION}")

    # ----------------------------------------------------------------- writing
    @named_errors
    def add(self, records: Sequence[StatementRecord]) -> None:
        """Make and keep the profiles of ``records`` (already in Chroma); adding again replaces."""
        if not records:
            return
        rows = [(record.id, _dumps(StatementProfile.of(record))) for record in records]
        with closing(connect(self.path)) as db, db:
            db.executemany("INSERT OR REPLACE INTO profile VALUES (?, ?)", rows)

    @named_errors
    def remove(self, ids: Iterable[str]) -> None:
        batch_ids = list(ids)
        with closing(connect(self.path)) as db, db:
            for start in range(0, len(batch_ids), 500):
                batch = batch_ids[start : start + 500]
                db.execute(f"DELETE FROM profile WHERE id IN ({','.join('?' * len(batch))})", batch)

    # ----------------------------------------------------------------- reading
    def read(self, ids: Sequence[str]) -> dict[str, StatementProfile]:
        """The kept profiles of ``ids`` (those it lacks are left out). Never raises: a search makes what it
        cannot read (a missing or damaged file is for ``rag-app status`` to name, not for a search to fail on)."""
        if not ids:
            return {}
        try:
            with self._reads.reading() as db:
                marks = ",".join("?" * len(ids))
                rows = db.execute(f"SELECT id, data FROM profile WHERE id IN ({marks})", list(ids)).fetchall()
        except sqlite3.Error:
            return {}
        return {statement_id: _loads(data) for statement_id, data in rows}


def _dumps(profile: StatementProfile) -> str:
    return json.dumps(
        [list(profile.columns), [sorted(terms) for terms in profile.field_terms], sorted(profile.formula_tokens)],
        ensure_ascii=False,
        separators=(",", ":"),
    )


def _loads(data: str) -> StatementProfile:
    columns, fields, tokens = json.loads(data)
    intern = sys.intern
    return StatementProfile(
        tuple(float(value) for value in columns),
        tuple(frozenset(intern(term) for term in terms) for terms in fields),
        frozenset(intern(token) for token in tokens),
    )
