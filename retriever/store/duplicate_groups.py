"""Duplicate groups: one statement said in several places (a survey restating a lemma, notes copying a
textbook, an answer quoting a theorem), found at ingest and kept beside the index.

Two statements of different papers (MSE: different threads) are duplicates when

- their normalized text is equal (case, spacing, spacing inside formulas, labels, articles, numbers
  outside formulas such as "Lemma 29.2" against "Lemma 13.2", and final punctuation do not count), or
- their formulas are equal (as a multiset, spacing ignored), their embeddings' cosine is at least
  ``threshold`` and their words outside formulas differ by at most ``max_word_difference`` (calibrated
  on the development corpus, docs/retrieval-and-evaluation.md, "Duplicate statements": the word check
  keeps "a proper scheme" and "a proper algebraic space", which embed almost alike, apart).

Every statement stays in the index; searches show one result per group (see
:mod:`retriever.search.duplicate_collapsing_searcher`). Groups live in a small SQLite table in the index
directory: a lookup by statement id or by text key is an indexed read at any corpus size, and the
near-duplicate check is one batched vector query per batch of new statements.
"""

from __future__ import annotations

import hashlib
import re
import sqlite3
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from contextlib import closing
from pathlib import Path
from typing import Protocol

import numpy as np

from ingestion.records import StatementRecord, paper_key
from retriever.storage.sqlite_file import SqliteStore, named_errors
from retriever.types import DuplicatePlace, ScoredId

DUPLICATES_DB = "duplicates.sqlite"
_LABEL = re.compile(r"\\label\{[^{}]*\}")
_MATH = re.compile(r"\$\$.+?\$\$|\$.+?\$", re.DOTALL)
_SPACE = re.compile(r"\s+")
_WORD = re.compile(r"[^\W_]+(?:[-'][^\W_]+)*")
_ARTICLES = frozenset({"a", "an", "the"})
# Shorter texts without formulas ("See above.", "Exercise.") are equal without saying the same thing.
MIN_WORDS = 4


def _digest(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8"), digest_size=12).hexdigest()


def statement_words(record: StatementRecord) -> list[str]:
    """The statement's words outside formulas: lowercased, without articles, numbers or punctuation."""
    prose = _MATH.sub(" ", _LABEL.sub("", record.text)).lower()
    return [w for w in _WORD.findall(prose) if w not in _ARTICLES and not w[0].isdigit()]


def text_key(record: StatementRecord) -> str:
    """A key equal for statements whose text differs only in case, spacing, labels, articles, numbers
    outside formulas or punctuation; formulas count whole (spacing inside them aside)."""
    formulas = [_SPACE.sub("", m.group(0)) for m in _MATH.finditer(_LABEL.sub("", record.text))]
    return _digest(" ".join(statement_words(record)) + "\x1e" + "\x1f".join(formulas))


def formula_key(record: StatementRecord) -> str:
    """A key equal for statements holding the same formulas (a multiset, spacing ignored)."""
    return _digest("\x1f".join(sorted(_SPACE.sub("", f) for f in record.formulas)))


class VectorNeighbours(Protocol):
    def query_many(self, embeddings: np.ndarray, k: int) -> list[list[ScoredId]]: ...


class DuplicateGroups(SqliteStore):
    """Which stored statements say the same thing, kept in ``DIRECTORY/duplicates.sqlite``."""

    def __init__(
        self, directory: Path, threshold: float = 0.97, max_word_difference: int = 1, neighbours: int = 5
    ) -> None:
        self.threshold = threshold
        self.max_word_difference = max_word_difference
        self.neighbours = neighbours
        super().__init__(directory / DUPLICATES_DB)

    def _create(self) -> None:
        with closing(self._connect()) as db, db:
            db.executescript(
                """
                CREATE TABLE IF NOT EXISTS statement (
                    id TEXT PRIMARY KEY, grp TEXT NOT NULL, paper TEXT NOT NULL, text_key TEXT NOT NULL,
                    formula_key TEXT NOT NULL, words TEXT NOT NULL,
                    paper_id TEXT NOT NULL, title TEXT NOT NULL, url TEXT NOT NULL
                );
                CREATE INDEX IF NOT EXISTS statement_text ON statement (text_key);
                CREATE INDEX IF NOT EXISTS statement_group ON statement (grp);
                """
            )


    # ----------------------------------------------------------------- writing
    @named_errors
    def add(self, records: Sequence[StatementRecord], vectors: np.ndarray, index: VectorNeighbours) -> int:
        """Record new statements (already in the vector store) and join them to the groups they duplicate.

        Returns how many of them joined a group of statements from other papers.
        """
        if not records:
            return 0
        neighbours = index.query_many(np.asarray(vectors, dtype=np.float32), self.neighbours + 1)
        with closing(self._connect()) as db, db:
            db.executemany(
                "INSERT OR IGNORE INTO statement VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    (
                        r.id,
                        r.id,
                        paper_key(r),
                        text_key(r),
                        formula_key(r),
                        " ".join(statement_words(r)),
                        r.paper_id,
                        r.title,
                        r.url,
                    )
                    for r in records
                ],
            )
            joined = 0
            for record, found in zip(records, neighbours, strict=True):
                matches = self._matches(db, record, found)
                if matches:
                    joined += 1
                    self._merge(db, [record.id, *matches])
            return joined

    def _matches(self, db: sqlite3.Connection, record: StatementRecord, found: Sequence[ScoredId]) -> list[str]:
        paper = paper_key(record)
        same_text: list[tuple[str]] = []
        if len(statement_words(record)) >= MIN_WORDS or record.formulas or _MATH.search(record.text):
            # A group's members all share the key: a few of them are enough to join it.
            same_text = db.execute(
                "SELECT id FROM statement WHERE text_key = ? AND paper != ? AND id != ? LIMIT 8",
                (text_key(record), paper, record.id),
            ).fetchall()
        close = [hit.id for hit in found if hit.id != record.id and hit.score >= self.threshold]
        near: list[str] = []
        if close:
            marks = ",".join("?" * len(close))
            words = Counter(statement_words(record))
            rows = db.execute(
                f"SELECT id, words FROM statement WHERE id IN ({marks}) AND paper != ? AND formula_key = ?",
                (*close, paper, formula_key(record)),
            )
            for other, other_words in rows:
                bag = Counter(other_words.split())
                if sum(((words - bag) + (bag - words)).values()) <= self.max_word_difference:
                    near.append(other)
        return [row[0] for row in same_text] + near

    def _merge(self, db: sqlite3.Connection, ids: Sequence[str]) -> None:
        marks = ",".join("?" * len(ids))
        groups = sorted({row[0] for row in db.execute(f"SELECT grp FROM statement WHERE id IN ({marks})", ids)})
        if len(groups) < 2:
            return
        target, others = groups[0], groups[1:]
        db.execute(f"UPDATE statement SET grp = ? WHERE grp IN ({','.join('?' * len(others))})", (target, *others))

    @named_errors
    def remove(self, ids: Sequence[str]) -> None:
        """Forget deleted statements (a paper's old version, a deleted post)."""
        with closing(self._connect()) as db, db:
            for start in range(0, len(ids), 500):
                batch = list(ids[start : start + 500])
                db.execute(f"DELETE FROM statement WHERE id IN ({','.join('?' * len(batch))})", batch)

    @named_errors
    def clear(self) -> None:
        with closing(self._connect()) as db, db:
            db.execute("DELETE FROM statement")

    # ----------------------------------------------------------------- reading
    @named_errors
    def places(self, ids: Sequence[str]) -> dict[str, list[DuplicatePlace]]:
        """For each of ``ids`` in a group, every other member of its group (its own paper's left out)."""
        if not ids:
            return {}
        with self._reads.reading() as db:
            marks = ",".join("?" * len(ids))
            own = {
                row[0]: (row[1], row[2])
                for row in db.execute(f"SELECT id, grp, paper FROM statement WHERE id IN ({marks})", list(ids))
            }
            groups = sorted({grp for grp, _ in own.values()})
            members: dict[str, list[tuple[str, DuplicatePlace]]] = {}
            for start in range(0, len(groups), 500):
                batch = groups[start : start + 500]
                marks = ",".join("?" * len(batch))
                rows = db.execute(
                    f"SELECT grp, id, paper, paper_id, title, url FROM statement WHERE grp IN ({marks})", batch
                )
                for grp, member, paper, paper_id, title, url in rows:
                    members.setdefault(grp, []).append((paper, DuplicatePlace(member, paper_id, title, url)))
        result: dict[str, list[DuplicatePlace]] = {}
        for statement, (grp, paper) in own.items():
            others = [place for member_paper, place in members.get(grp, []) if member_paper != paper]
            if others:
                result[statement] = sorted(others, key=lambda place: (place.paper_id, place.id))
        return result

    @named_errors
    def groups_of(self, ids: Sequence[str]) -> dict[str, str]:
        """The group of each of ``ids`` that is known (a statement alone is its own group)."""
        found: dict[str, str] = {}
        with self._reads.reading() as db:
            for start in range(0, len(ids), 500):
                batch = list(ids[start : start + 500])
                marks = ",".join("?" * len(batch))
                found.update(db.execute(f"SELECT id, grp FROM statement WHERE id IN ({marks})", batch).fetchall())
        return found

    def groups(self) -> Iterator[list[str]]:
        """Every group of two or more statements (their ids)."""
        with closing(self._connect()) as db:
            rows = db.execute(
                "SELECT grp, id FROM statement WHERE grp IN "
                "(SELECT grp FROM statement GROUP BY grp HAVING COUNT(*) > 1) ORDER BY grp, id"
            )
            current: list[str] = []
            last = None
            for grp, statement in rows:
                if grp != last and current:
                    yield current
                    current = []
                last = grp
                current.append(statement)
            if current:
                yield current


def rebuild(
    groups: DuplicateGroups, batches: Iterable[tuple[Sequence[StatementRecord], np.ndarray]], index: VectorNeighbours
) -> int:
    """Recompute every group from the stored statements (an index built before groups existed)."""
    groups.clear()
    return sum(groups.add(records, vectors, index) for records, vectors in batches)
