"""A BM25 index that is updated in place: added documents become a new segment, deletions are marked.

The scores are those of bm25s' Lucene variant (the library this index replaced, kept as the reference
in the tests): ``idf(t) = ln(1 + (N - df + 0.5) / (df + 0.5))`` times
``tf / (tf + k1 * (1 - b + b * length / average length))``, summed over the query terms. They are
computed at query time from term frequencies and document lengths, so adding a batch never rewrites
the postings of the documents already indexed, as a precomputed score matrix would (bm25s has to be
rebuilt from every text, which at a million statements took longer than the ingest it followed).

As in Lucene, segments of similar size are merged as they accumulate (``MERGE_FACTOR`` at a time, so
each document is rewritten about log(N) times over its life), and a merge drops deleted documents.
Until then a deleted document still counts in N and in the document frequencies, as in Lucene.

Layout of the directory::

    lexical.sqlite          vocabulary (term -> id), live documents (id -> segment, row), deleted
                            rows, the segment list and a generation counter that readers watch
    segments/NAME/*.npy     one directory per segment (see :mod:`retriever.storage.bm25_segment`)

One process writes at a time (as with Chroma's embedded store); readers in other processes see a
write once it is committed, at their next search.

The same class serves in memory (``directory=None``) for short-lived indexes (hard negatives).
"""

from __future__ import annotations

import functools
import math
import shutil
import sqlite3
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TypeVar

import numpy as np

from retriever.storage import sqlite_file
from retriever.storage.bm25_scoring import BM25Parameters, LiveSegment, top_rows
from retriever.storage.bm25_segment import REPAIR, BM25Segment, BM25SegmentError
from retriever.text.math_tokenizer import tokenize
from retriever.types import ScoredId

DATABASE = "lexical.sqlite"
SEGMENTS = "segments"
# Segments of one size class are merged when this many have accumulated.
MERGE_FACTOR = 4
# A segment of fewer documents than this is in the smallest size class.
SMALLEST_SEGMENT = 1000
# A segment with this share of its rows deleted is rewritten without them.
DELETED_SHARE = 0.3
_T = TypeVar("_T")
_SQL_VARIABLES = 900  # rows per IN (...) query, under SQLite's variable limit on any build

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS vocabulary (term TEXT PRIMARY KEY, id INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS segments (name TEXT PRIMARY KEY, documents INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS documents (id TEXT PRIMARY KEY, segment TEXT NOT NULL, row INTEGER NOT NULL)
    WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS deleted (segment TEXT NOT NULL, row INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS deleted_by_segment ON deleted (segment);
"""


class BM25CatalogueError(BM25SegmentError):
    """The catalogue (``lexical.sqlite``) of a BM25 index is damaged: the message names the file."""


def _names_damage(method: Callable[..., _T]) -> Callable[..., _T]:
    """SQLite's "database disk image is malformed" or "file is not a database", raised anywhere in
    ``method``, becomes one sentence naming the catalogue and what to run (exit 3 in the CLI). A busy
    or locked database is not damage: it is raised as it is."""

    @functools.wraps(method)
    def named(self: BM25Index, *args: object, **kwargs: object) -> _T:
        try:
            return method(self, *args, **kwargs)
        except sqlite3.OperationalError as error:
            if not _is_damage(error):
                raise
            raise self._damaged(error) from error
        except sqlite3.DatabaseError as error:
            raise self._damaged(error) from error

    return named


def _is_damage(error: sqlite3.OperationalError) -> bool:
    text = str(error).lower()
    return not any(word in text for word in ("locked", "busy", "readonly", "read-only", "interrupted"))


class BM25Index:
    """BM25 over documents cut into terms, with the document ids kept beside it."""

    def __init__(self, directory: Path | None = None, k1: float = 1.2, b: float = 0.75) -> None:
        self.directory = directory
        self.k1 = k1
        self.b = b
        self._files = _SegmentFiles(directory)
        self._db = self._connect()
        self._lock = threading.RLock()
        self._generation = -1
        self._seen: tuple[int, int] | None = None  # (data_version, total_changes) at the last refresh
        self._segments: list[LiveSegment] = []
        self._documents = 0  # live documents
        self._total = 0  # documents including the deleted ones not yet merged away (BM25's N)
        self._total_length = 0.0

    @property
    def database_path(self) -> str:
        return str(self.directory / DATABASE) if self.directory is not None else ":memory:"

    @_names_damage
    def _connect(self) -> sqlite3.Connection:
        if self.directory is None:
            db = sqlite3.connect(":memory:", check_same_thread=False)
        else:
            self.directory.mkdir(parents=True, exist_ok=True)
            # the chat app searches from Streamlit's script threads; the lock serializes them
            db = sqlite_file.connect(self.directory / DATABASE, shared_by_threads=True)
        db.executescript(_SCHEMA)
        return db

    def _damaged(self, error: sqlite3.Error) -> BM25CatalogueError:
        return BM25CatalogueError(f"{self.database_path} is damaged ({type(error).__name__}: {error}); {REPAIR}")

    # ------------------------------------------------------------------ building
    @classmethod
    def build(cls, ids: Sequence[str], texts: Sequence[str], k1: float = 1.2, b: float = 0.75) -> BM25Index:
        """An in-memory index of texts cut by the math-aware word tokenizer."""
        return cls.build_from_tokens(ids, [tokenize(text) for text in texts], k1, b)

    @classmethod
    def build_from_tokens(
        cls, ids: Sequence[str], documents: Sequence[list[str]], k1: float = 1.2, b: float = 0.75
    ) -> BM25Index:
        """An in-memory index of documents already cut into terms."""
        index = cls(None, k1, b)
        index.add(ids, documents)
        return index

    @classmethod
    def load(cls, directory: Path, k1: float = 1.2, b: float = 0.75) -> BM25Index:
        return cls(directory, k1, b)

    @_names_damage
    def clear(self) -> None:
        """Forget every document (a full rebuild starts from here)."""
        with self._lock, self._db:
            for table in ("vocabulary", "segments", "documents", "deleted"):
                self._db.execute(f"DELETE FROM {table}")
            _bump_generation(self._db)
        self._files.drop_all()

    # ------------------------------------------------------------------ writing
    @_names_damage
    def add(self, ids: Sequence[str], documents: Sequence[Sequence[str]]) -> None:
        """Index documents (a document already indexed under the same id is replaced)."""
        if len(ids) != len(documents):
            raise ValueError(f"{len(ids)} ids but {len(documents)} documents")
        with self._lock:
            self._add(ids, documents)

    def _add(self, ids: Sequence[str], documents: Sequence[Sequence[str]]) -> None:
        latest = {doc_id: position for position, doc_id in enumerate(ids)}  # a repeated id: the last wins
        if not latest:
            return
        self.delete(list(latest))
        self._files.remove_orphans({name for (name,) in self._db.execute("SELECT name FROM segments")})
        ids = list(latest)
        documents = [documents[position] for position in latest.values()]
        term_ids = self._term_ids({term for terms in documents for term in terms}, create=True)
        arrays = [np.array([term_ids[term] for term in terms], dtype=np.int64) for terms in documents]
        name = f"{_next(self._db, 'segment'):08d}"
        segment = BM25Segment.from_documents(name, ids, arrays)
        self._files.write(segment)
        with self._db:
            self._db.execute("INSERT INTO segments VALUES (?, ?)", (name, segment.size))
            self._db.executemany(
                "INSERT INTO documents VALUES (?, ?, ?)", ((doc_id, name, row) for row, doc_id in enumerate(ids))
            )
            _bump_generation(self._db)
        self._merge_when_due()

    @_names_damage
    def delete(self, ids: Iterable[str]) -> int:
        """Mark documents deleted; returns how many were indexed."""
        with self._lock:
            return self._delete(list(ids))

    def _delete(self, ids: list[str]) -> int:
        found: list[tuple[str, str, int]] = []
        for chunk in _chunks(ids, _SQL_VARIABLES):
            marks = ",".join("?" * len(chunk))
            found += self._db.execute(f"SELECT id, segment, row FROM documents WHERE id IN ({marks})", chunk).fetchall()
        if found:
            with self._db:
                self._db.executemany("INSERT INTO deleted VALUES (?, ?)", ((s, r) for _, s, r in found))
                self._db.executemany("DELETE FROM documents WHERE id = ?", ((i,) for i, _, _ in found))
                _bump_generation(self._db)
            self._merge_when_due()
        return len(found)

    def _merge_when_due(self) -> None:
        """Merge size classes that have ``MERGE_FACTOR`` segments; rewrite segments mostly deleted."""
        while True:
            self._refresh()
            by_class: dict[int, list[LiveSegment]] = {}
            for live in self._segments:
                remaining = live.segment.size - len(live.deleted)
                if remaining == 0 or len(live.deleted) >= DELETED_SHARE * live.segment.size:
                    by_class.setdefault(-1, []).append(live)  # rewritten (or dropped) on their own
                    continue
                size_class = int(math.log(max(remaining, 1) / SMALLEST_SEGMENT, MERGE_FACTOR)) if (
                    remaining >= SMALLEST_SEGMENT) else 0  # fmt: skip
                by_class.setdefault(size_class, []).append(live)
            due = by_class.get(-1, [])[:1] or next(
                (group for _, group in sorted(by_class.items()) if len(group) >= MERGE_FACTOR), []
            )
            if not due:
                return
            self._merge(due)

    def _merge(self, group: Sequence[LiveSegment]) -> None:
        old = [live.segment.name for live in group]
        name = f"{_next(self._db, 'segment'):08d}"
        merged = BM25Segment.merge(name, [live.segment for live in group], [live.deleted for live in group])
        if merged.size:
            self._files.write(merged)
        marks = ",".join("?" * len(old))
        with self._db:
            self._db.execute(f"DELETE FROM segments WHERE name IN ({marks})", old)
            self._db.execute(f"DELETE FROM deleted WHERE segment IN ({marks})", old)
            if merged.size:
                self._db.execute("INSERT INTO segments VALUES (?, ?)", (merged.name, merged.size))
                self._db.executemany(
                    "UPDATE documents SET segment = ?, row = ? WHERE id = ?",
                    ((merged.name, row, doc_id.decode()) for row, doc_id in enumerate(merged.ids)),
                )
            _bump_generation(self._db)
        for name in old:
            self._files.drop(name)

    # ------------------------------------------------------------------ reading
    @_names_damage
    def __len__(self) -> int:
        with self._lock:
            self._refresh()
            return self._documents

    @property
    @_names_damage
    def ids(self) -> list[str]:
        """Every live document id (for checks; a full scan)."""
        return [row[0] for row in self._db.execute("SELECT id FROM documents")]

    @_names_damage
    def verify(self) -> None:
        """Load every segment again from disk, its arrays checked against each other
        (``BM25SegmentError`` names a damaged one)."""
        with self._lock:
            self._generation = -1
            self._segments = []
            self._refresh()

    @property
    @_names_damage
    def segment_count(self) -> int:
        with self._lock:
            self._refresh()
            return len(self._segments)

    def search(self, query: str, k: int) -> list[ScoredId]:
        return self.search_terms(tokenize(query), k)

    @_names_damage
    def postings_of(self, terms: Sequence[str]) -> int:
        """How many postings these terms have: what an exhaustive search would read (benchmarks)."""
        with self._lock:
            self._refresh()
            known = np.array(sorted(set(self._term_ids(set(terms), create=False).values())), dtype=np.int64)
            return sum(
                int(live.segment.document_frequencies(live.segment.locate(known)).sum()) for live in self._segments
            )

    @_names_damage
    def search_terms(self, terms: Sequence[str], k: int) -> list[ScoredId]:
        """The ``k`` best documents for the terms (a term given twice counts twice, as in bm25s)."""
        with self._lock:
            self._refresh()
            if k <= 0 or self._documents == 0:
                return []
            known = self._term_ids(set(terms), create=False)
            counts = Counter(known[term] for term in terms if term in known)
            if not counts:
                return []
            query = np.array(list(counts), dtype=np.int64)
            weights = np.array(list(counts.values()), dtype=np.float32)
            bm25 = BM25Parameters(self.k1, self.b, self._total, self._total_length / max(self._total, 1))
            best = top_rows(self._segments, query, weights, k, bm25)
            return [ScoredId(self._segments[number].segment.ids[row].decode(), score) for score, number, row in best]

    # ------------------------------------------------------------------ state
    def _refresh(self) -> None:
        """Reload the segment list when another write (here or in another process) committed."""
        # SQLite's data_version moves when another connection commits, total_changes when this one writes:
        # while neither moves there is nothing to read again (a search then skips a read transaction).
        seen = (self._db.execute("PRAGMA data_version").fetchone()[0], self._db.total_changes)
        if seen == self._seen and self._generation != -1:
            return
        for attempt in range(3):
            self._db.execute("BEGIN")  # one read snapshot of the generation, segments and deletions
            try:
                row = self._db.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()
                generation = row[0] if row else 0
                if generation == self._generation:
                    self._seen = seen
                    return
                names = [name for (name,) in self._db.execute("SELECT name FROM segments ORDER BY name")]
                deleted: dict[str, list[int]] = {name: [] for name in names}
                for name, row_number in self._db.execute("SELECT segment, row FROM deleted"):
                    deleted.setdefault(name, []).append(row_number)
            finally:
                self._db.execute("COMMIT")
            previous = {live.segment.name: live.segment for live in self._segments}
            try:
                segments = [previous.get(name) or self._files.read(name) for name in names]
            except FileNotFoundError:  # another process merged it away after our snapshot: read again
                if attempt == 2:
                    raise
                continue
            self._segments = [
                LiveSegment(segment, np.array(sorted(deleted[segment.name]), dtype=np.int64)) for segment in segments
            ]
            self._total = sum(live.segment.size for live in self._segments)
            self._documents = self._total - sum(len(live.deleted) for live in self._segments)
            self._total_length = sum(live.segment.total_length for live in self._segments)
            self._generation = generation
            self._seen = seen
            return

    def _term_ids(self, terms: set[str], create: bool) -> dict[str, int]:
        found: dict[str, int] = {}
        for chunk in _chunks(sorted(terms), _SQL_VARIABLES):
            marks = ",".join("?" * len(chunk))
            query = f"SELECT term, id FROM vocabulary WHERE term IN ({marks})"
            found.update(self._db.execute(query, chunk))
        missing = sorted(terms - found.keys())
        if create and missing:
            first = _next(self._db, "term", len(missing))
            new = {term: first + offset for offset, term in enumerate(missing)}
            with self._db:
                self._db.executemany("INSERT INTO vocabulary VALUES (?, ?)", new.items())
            found.update(new)
        return found

    def close(self) -> None:
        self._db.close()


class _SegmentFiles:
    """Where segments live: ``segments/NAME/`` under the index directory, or a dict for an in-memory index."""

    def __init__(self, directory: Path | None) -> None:
        self.directory = directory / SEGMENTS if directory is not None else None
        self.memory: dict[str, BM25Segment] = {}

    def write(self, segment: BM25Segment) -> None:
        if self.directory is None:
            self.memory[segment.name] = segment
        else:
            segment.save(self.directory / segment.name)

    def read(self, name: str) -> BM25Segment:
        if self.directory is None:
            return self.memory[name]
        return BM25Segment.load(self.directory / name)

    def drop(self, name: str) -> None:
        if self.directory is None:
            self.memory.pop(name, None)
        else:  # a reader that still maps its files keeps reading them until it refreshes (POSIX unlink)
            shutil.rmtree(self.directory / name, ignore_errors=True)

    def drop_all(self) -> None:
        if self.directory is None:
            self.memory.clear()
        else:
            shutil.rmtree(self.directory, ignore_errors=True)

    def remove_orphans(self, registered: set[str]) -> None:
        """Segment directories a crash left unregistered (written, never committed)."""
        if self.directory is None or not self.directory.exists():
            return
        for path in self.directory.iterdir():
            if path.name not in registered:
                shutil.rmtree(path, ignore_errors=True)


def _next(db: sqlite3.Connection, counter: str, count: int = 1) -> int:
    """The next ``count`` numbers of a counter kept in the database (term ids, segment names)."""
    with db:
        row = db.execute("SELECT value FROM meta WHERE key = ?", (counter,)).fetchone()
        first = row[0] if row else 0
        db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (counter, first + count))
    return first


def _bump_generation(db: sqlite3.Connection) -> None:
    db.execute("INSERT INTO meta VALUES ('generation', 1) ON CONFLICT(key) DO UPDATE SET value = value + 1")


def _chunks(items: list[str], size: int) -> Iterable[list[str]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]
