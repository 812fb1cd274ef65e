"""The statement graph: the labels each statement references, and what they resolve to.

Kept beside Chroma in ``DIRECTORY/graph.sqlite``, derived from the records' ``references`` and ``citations``
(read at ingest, :mod:`ingestion.latex_references`, :mod:`ingestion.latex_citations`), so that a repair
rebuilds it from Chroma alone. Six tables:

- ``statement``: every statement it holds, with its paper, kind and label (its ids, for health checks);
- ``label``: every label a statement carries, also as ``paper-label`` (the Stacks project's chapters
  are papers of one book, and reference each other as ``algebra-lemma-NAK``); ``section_label``: the
  same for the labels of the sections statements sit in;
- ``reference``: one row per label a statement references, with the statement (or section) its own
  paper resolved it to at ingest;
- ``citation``: one row per bibliography key a statement cites, with the arXiv id its paper's
  bibliography gives it; ``statement_arxiv``: the arXiv id of each statement's paper (arXiv papers only).
  A citation whose id is a paper of the index is a paper-level edge.

Edges are read by query, not stored: a reference another paper resolves (a chapter ingested later)
counts as soon as that paper is in, with nothing rewritten. Every lookup is an indexed read.
"""

from __future__ import annotations

import functools
import sqlite3
from collections.abc import Iterable, Sequence
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ingestion.latex_citations import normalized_arxiv_id
from ingestion.latex_sources import parse_arxiv_name
from ingestion.records import StatementRecord
from retriever.storage import citing_text
from retriever.storage.atomic_files import file_stamp
from retriever.storage.citing_text import UNIQUE_FULL_LABEL, CitingTexts, terms_of
from retriever.storage.sqlite_file import SqliteStore, connect, named_errors

GRAPH_DB = "graph.sqlite"
_SCHEMA_VERSION = 2  # 1: citations and the statements' arXiv ids; 2: each reference's citing sentence
_TABLES = ("statement", "label", "section_label", "reference", "citation", "statement_arxiv")
# Each (statement, statement it uses) of the statements in {marks}: resolved by its paper, or by another.
# The unary + keeps SQLite off the target_id index for `target_id = ''` (most references: a scan of them all,
# 47 ms a search on the development index); the ids asked for drive the join instead.
_USES = (
    "SELECT id, target_id AS t FROM reference WHERE id IN ({marks}) AND target_id != '' "
    "UNION SELECT r.id, l.id FROM reference r JOIN label l ON l.full_label = r.label "
    f"WHERE r.id IN ({{marks}}) AND +r.target_id = '' AND +r.section = '' AND {UNIQUE_FULL_LABEL}"
)
_USES_OF = "SELECT id, COUNT(DISTINCT t) FROM (" + _USES + ") WHERE t != id GROUP BY id"
_USED_BY_OF = (
    "SELECT target, COUNT(DISTINCT source) FROM ("
    "SELECT target_id AS target, id AS source FROM reference WHERE target_id IN ({marks}) "
    "UNION SELECT l.id, r.id FROM label l JOIN reference r ON r.label = l.full_label "
    f"WHERE l.id IN ({{marks}}) AND +r.target_id = '' AND +r.section = '' AND {UNIQUE_FULL_LABEL}"
    ") WHERE target != source GROUP BY target"
)

@dataclass(frozen=True, slots=True)
class Edge:
    """One reference of a statement: the label, where it was made (statement or proof), and what it
    resolved to: a statement id, a section's name, or neither (unresolved)."""

    source_id: str
    label: str
    where: str
    target_id: str = ""
    section: str = ""

    @property
    def resolved(self) -> bool:
        return bool(self.target_id or self.section)


class StatementGraph(SqliteStore):
    """Which statements reference which, kept in ``DIRECTORY/graph.sqlite``."""

    def __init__(self, directory: Path) -> None:
        super().__init__(directory / GRAPH_DB)
        self.citing_text = CitingTexts(self.path, self._reads)  # how others cite each statement

    def _create(self) -> None:
        with closing(self._connect()) as db, db:
            had_citing_text = db.execute("SELECT 1 FROM sqlite_master WHERE name = 'citing_text'").fetchone()
            db.executescript(
                """
                CREATE TABLE IF NOT EXISTS statement (
                    id TEXT PRIMARY KEY, paper_id TEXT NOT NULL, kind TEXT NOT NULL, label TEXT NOT NULL
                );
                CREATE TABLE IF NOT EXISTS label (
                    id TEXT NOT NULL, paper_id TEXT NOT NULL, label TEXT NOT NULL, full_label TEXT NOT NULL
                );
                CREATE INDEX IF NOT EXISTS label_id ON label (id);
                CREATE INDEX IF NOT EXISTS label_paper ON label (paper_id, label);
                CREATE INDEX IF NOT EXISTS label_full ON label (full_label);
                CREATE TABLE IF NOT EXISTS section_label (
                    id TEXT NOT NULL, paper_id TEXT NOT NULL, label TEXT NOT NULL, full_label TEXT NOT NULL,
                    section TEXT NOT NULL
                );
                CREATE INDEX IF NOT EXISTS section_label_id ON section_label (id);
                CREATE INDEX IF NOT EXISTS section_label_full ON section_label (full_label);
                CREATE TABLE IF NOT EXISTS reference (
                    id TEXT NOT NULL, position INTEGER NOT NULL, label TEXT NOT NULL, location TEXT NOT NULL,
                    target_id TEXT NOT NULL, section TEXT NOT NULL, paper_id TEXT NOT NULL,
                    sentence TEXT NOT NULL DEFAULT '', sentence_terms TEXT NOT NULL DEFAULT ''
                );
                CREATE INDEX IF NOT EXISTS reference_id ON reference (id);
                CREATE INDEX IF NOT EXISTS reference_target ON reference (target_id);
                CREATE INDEX IF NOT EXISTS reference_label ON reference (label);
                CREATE TABLE IF NOT EXISTS citation (
                    id TEXT NOT NULL, position INTEGER NOT NULL, key TEXT NOT NULL, location TEXT NOT NULL,
                    arxiv_id TEXT NOT NULL, paper_id TEXT NOT NULL
                );
                CREATE INDEX IF NOT EXISTS citation_id ON citation (id);
                CREATE INDEX IF NOT EXISTS citation_arxiv ON citation (arxiv_id);
                CREATE TABLE IF NOT EXISTS statement_arxiv (id TEXT PRIMARY KEY, arxiv_id TEXT NOT NULL);
                CREATE INDEX IF NOT EXISTS statement_arxiv_id ON statement_arxiv (arxiv_id);
                """
            )
            version = db.execute("PRAGMA user_version").fetchone()[0]
            columns = {row[1] for row in db.execute("PRAGMA table_info(reference)")}
            if "sentence" not in columns:
                # A graph written before citing sentences were kept: its references have none until
                # their statements are ingested again (a record's field, like every other).
                db.execute("ALTER TABLE reference ADD COLUMN sentence TEXT NOT NULL DEFAULT ''")
                db.execute("ALTER TABLE reference ADD COLUMN sentence_terms TEXT NOT NULL DEFAULT ''")
            if version < 1:
                # A graph written before citations were kept: its statements' papers get their arXiv
                # ids now, so that new papers' citations of them resolve (their own citations come with
                # a re-ingest, as every record field does).
                rows = db.execute("SELECT id, paper_id FROM statement").fetchall()
                db.executemany(
                    "INSERT OR IGNORE INTO statement_arxiv VALUES (?, ?)",
                    [(i, arxiv) for i, paper in rows if (arxiv := paper_arxiv_id(paper))],
                )
            db.execute(citing_text.CREATE_TABLE)
            if not had_citing_text:
                citing_text.rebuild(db)  # a graph from before the table: made from its references
            if version < _SCHEMA_VERSION:
                db.execute(f"PRAGMA user_version = {_SCHEMA_VERSION}")


    # ----------------------------------------------------------------- writing
    @named_errors
    def add(self, records: Sequence[StatementRecord]) -> None:
        """Hold ``records`` (already in Chroma) with their labels and references; adding again replaces."""
        if not records:
            return
        ids = [record.id for record in records]
        with closing(self._connect()) as db, db:
            before = self._citing_text_touched(db, ids)  # whom their old versions cited
            self._delete(db, ids)
            db.executemany(
                "INSERT INTO statement VALUES (?, ?, ?, ?)",
                [(r.id, r.paper_id, r.kind.value, r.label) for r in records],
            )
            db.executemany(
                "INSERT INTO label VALUES (?, ?, ?, ?)",
                [(r.id, r.paper_id, label, f"{r.paper_id}-{label}") for r in records for label in _labels(r)],
            )
            db.executemany(
                "INSERT INTO section_label VALUES (?, ?, ?, ?, ?)",
                [(r.id, r.paper_id, label, f"{r.paper_id}-{label}", section) for r in records
                 for label, section in _section_labels(r)],
            )  # fmt: skip
            db.executemany(
                "INSERT INTO reference (id, position, label, location, target_id, section, paper_id, sentence, "
                "sentence_terms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    (r.id, position, ref.label, ref.where, ref.statement_id, ref.section, r.paper_id, ref.sentence,
                     terms_of(ref.sentence))
                    for r in records
                    for position, ref in enumerate(r.references)
                ],
            )
            db.executemany(
                "INSERT INTO citation VALUES (?, ?, ?, ?, ?, ?)",
                [(r.id, position, c.key, c.where, c.arxiv_id, r.paper_id) for r in records
                 for position, c in enumerate(r.citations)],
            )  # fmt: skip
            db.executemany(
                "INSERT INTO statement_arxiv VALUES (?, ?)",
                [(r.id, arxiv) for r in records if (arxiv := paper_arxiv_id(r.paper_id))],
            )
            citing_text.refresh(db, before | self._citing_text_touched(db, ids))

    @named_errors
    def remove(self, ids: Iterable[str]) -> None:
        ids = list(ids)
        with closing(self._connect()) as db, db:
            touched = self._citing_text_touched(db, ids)
            self._delete(db, ids)
            citing_text.refresh(db, touched - set(ids))

    @named_errors
    def clear(self) -> None:
        with closing(self._connect()) as db, db:
            for table in _TABLES:
                db.execute(f"DELETE FROM {table}")
            db.execute("DELETE FROM citing_text")

    @staticmethod
    def _delete(db: sqlite3.Connection, ids: list[str]) -> None:
        for start in range(0, len(ids), 500):
            batch = ids[start : start + 500]
            marks = ",".join("?" * len(batch))
            rowids = [row[0] for row in db.execute(f"SELECT rowid FROM statement WHERE id IN ({marks})", batch)]
            citing_text.forget(db, rowids)
            for table in _TABLES:
                db.execute(f"DELETE FROM {table} WHERE id IN ({marks})", batch)

    @staticmethod
    def _citing_text_touched(db: sqlite3.Connection, ids: list[str]) -> set[str]:
        """The statements whose citing text changes when ``ids`` are written or removed: they themselves
        (cited by earlier statements), what they reference, and those sharing a label with them (a
        second bearer makes a label ambiguous: it resolves to neither)."""
        touched = set(ids)
        for start in range(0, len(ids), 400):
            batch = ids[start : start + 400]
            marks = ",".join("?" * len(batch))
            touched.update(row[1] for row in db.execute(_USES.format(marks=marks), [*batch, *batch]))
            touched.update(row[0] for row in db.execute(
                f"SELECT other.id FROM label mine JOIN label other ON other.full_label = mine.full_label "
                f"WHERE mine.id IN ({marks})", batch))  # fmt: skip
        return touched

    # ----------------------------------------------------------------- reading
    @named_errors
    def uses(self, statement_id: str, include_self: bool = False) -> list[Edge]:
        """What ``statement_id`` references, in order: each label resolved by its own paper at ingest,
        else by another paper that defines it (``paper-label``), else unresolved. A reference to its
        own label or equation is left out unless ``include_self``."""
        with closing(self._connect()) as db:
            return _uses_in(db, statement_id, include_self)

    @named_errors
    def uses_of_many(self, ids: Sequence[str]) -> dict[str, list[Edge]]:
        """:meth:`uses` of each of ``ids``, read over one connection (a walk of the graph asks for a whole
        frontier at once instead of opening the file once per statement)."""
        with closing(self._connect()) as db:
            return {statement_id: _uses_in(db, statement_id, False) for statement_id in dict.fromkeys(ids)}

    @named_errors
    def used_by(self, statement_id: str) -> list[str]:
        """The statements that reference ``statement_id`` (its label, an equation in it, or as
        ``paper-label`` from another paper, where no other statement carries that name), each once, in
        id order."""
        with closing(self._connect()) as db:
            rows = db.execute(
                """
                SELECT id FROM reference WHERE target_id = ?
                UNION
                SELECT r.id FROM reference r JOIN label l ON r.label = l.full_label
                WHERE l.id = ? AND r.target_id = '' AND r.section = ''
                  AND (SELECT COUNT(*) FROM label other WHERE other.full_label = l.full_label) = 1
                """,
                (statement_id, statement_id),
            ).fetchall()
        return sorted({row[0] for row in rows} - {statement_id})

    @named_errors
    def counts(self, ids: Sequence[str]) -> dict[str, tuple[int, int]]:
        """For each of ``ids``: how many statements it uses and how many use it (as :meth:`uses` and
        :meth:`used_by` resolve them), in two queries whatever the number of ids."""
        ids = list(dict.fromkeys(ids))
        if not ids:
            return {}
        marks = ",".join("?" * len(ids))
        with self._reads.reading() as db:
            uses = dict(db.execute(_USES_OF.format(marks=marks), [*ids, *ids]).fetchall())
            used_by = dict(db.execute(_USED_BY_OF.format(marks=marks), [*ids, *ids]).fetchall())
        return {i: (int(uses.get(i, 0)), int(used_by.get(i, 0))) for i in ids}

    @named_errors
    def links_among(self, ids: Sequence[str]) -> set[tuple[str, str]]:
        """The (user, used) pairs of statements both in ``ids``, in one query."""
        ids = list(dict.fromkeys(ids))
        if not ids:
            return set()
        marks = ",".join("?" * len(ids))
        query = f"SELECT id, t FROM ({_USES.format(marks=marks)}) WHERE t != id AND t IN ({marks})"
        with self._reads.reading() as db:
            return {(row[0], row[1]) for row in db.execute(query, [*ids, *ids, *ids])}

    @named_errors
    def paper_pagerank(self, ids: Sequence[str]) -> dict[str, float]:
        """For each of ``ids``, its PageRank within its own paper's graph (uses edges resolved at ingest),
        times the paper's statement count: 1.0 is an average statement of that paper, more is one its
        paper leans on. Computed once per paper while the graph file is unchanged."""
        ids = list(dict.fromkeys(ids))
        if not ids:
            return {}
        marks = ",".join("?" * len(ids))
        with closing(self._connect()) as db:
            papers = dict(db.execute(f"SELECT id, paper_id FROM statement WHERE id IN ({marks})", ids).fetchall())
        wal = file_stamp(self.path.with_name(self.path.name + "-wal"))
        # an empty WAL file comes and goes with every reader's connection: it changes nothing
        stamp = (file_stamp(self.path), wal if wal[1] else (0, 0))
        found = {}
        for paper_id in set(papers.values()):
            found.update(_paper_pagerank(str(self.path), paper_id, stamp))
        return {i: found.get(i, 1.0) for i in ids}

    @named_errors
    def kinds(self, ids: Sequence[str]) -> dict[str, str]:
        """The kind of each statement of ``ids`` the graph holds."""
        found: dict[str, str] = {}
        with closing(self._connect()) as db:
            for start in range(0, len(ids), 500):
                batch = list(ids[start : start + 500])
                marks = ",".join("?" * len(batch))
                query = f"SELECT id, kind FROM statement WHERE id IN ({marks})"
                found.update(dict(db.execute(query, batch).fetchall()))
        return found

    @named_errors
    def citations(self, statement_id: str) -> list[CitedPaper]:
        """The keys ``statement_id`` cites, in order, each with its arXiv id and, when that paper is in the
        index, its paper id, how many statements it has there and one of them (for its title)."""
        with closing(self._connect()) as db:
            rows = db.execute(
                "SELECT key, location, arxiv_id FROM citation WHERE id = ? ORDER BY position", (statement_id,)
            ).fetchall()
            cited = []
            for key, where, arxiv_id in rows:
                found = (
                    db.execute(
                        "SELECT s.paper_id, COUNT(*), MIN(s.id) FROM statement_arxiv a JOIN statement s ON s.id = a.id "
                        "WHERE a.arxiv_id = ? GROUP BY s.paper_id ORDER BY COUNT(*) DESC LIMIT 1",
                        (arxiv_id,),
                    ).fetchone()
                    if arxiv_id
                    else None
                )
                paper_id, statements, one = found if found else ("", 0, "")
                cited.append(CitedPaper(key, where, arxiv_id, paper_id, int(statements), one))
            return cited

    @named_errors
    def citing(self, statement_id: str, limit: int = 50) -> tuple[list[str], int]:
        """Statements of other papers that cite the paper ``statement_id`` is in (by its arXiv id): the
        first ``limit`` ids (in id order) and how many there are."""
        with closing(self._connect()) as db:
            row = db.execute("SELECT arxiv_id FROM statement_arxiv WHERE id = ?", (statement_id,)).fetchone()
            if row is None:
                return [], 0
            query = (
                "SELECT DISTINCT c.id FROM citation c JOIN statement s ON s.id = ? "
                "WHERE c.arxiv_id = ? AND c.paper_id != s.paper_id ORDER BY c.id"
            )
            ids = [found[0] for found in db.execute(query, (statement_id, row[0]))]
        return ids[:limit], len(ids)

    @named_errors
    def by_label(self, label: str, paper_id: str | None = None) -> list[str]:
        """The statements carrying ``label`` (in ``paper_id``, or as ``paper-label`` anywhere, or as a
        bare label in any paper)."""
        with closing(self._connect()) as db:
            if paper_id is not None:
                rows = db.execute("SELECT id FROM label WHERE paper_id = ? AND label = ?", (paper_id, label))
            else:
                rows = db.execute("SELECT id FROM label WHERE full_label = ? OR label = ?", (label, label))
            return list(dict.fromkeys(row[0] for row in rows))


@dataclass(frozen=True, slots=True)
class CitedPaper:
    """One key a statement cites: where, the arXiv id its paper's bibliography gives it, and the paper of
    the index with that id (``paper_id`` "" when none), with its statement count and one statement."""

    key: str
    where: str
    arxiv_id: str = ""
    paper_id: str = ""
    statements: int = 0
    one_statement_id: str = ""


def paper_arxiv_id(paper_id: str) -> str:
    """The arXiv id (without version) of a paper id that is one (``2501.01947v2``, ``math/0601001``), else ""."""
    name = parse_arxiv_name(paper_id)
    return normalized_arxiv_id(name.arxiv_id) if name else ""


def _labels(record: StatementRecord) -> tuple[str, ...]:
    """The labels a reference to ``record`` may name; a statement split in parts is named by its first."""
    if int(record.metadata.get("part", 1)) != 1:
        return ()
    return record.labels or ((record.label,) if record.label else ())


def _section_labels(record: StatementRecord) -> list[tuple[str, str]]:
    """The labels of the section and subsection ``record`` sits in, with their names."""
    found = []
    for key, name in (("section_label", record.section), ("subsection_label", record.metadata.get("subsection", ""))):
        label = str(record.metadata.get(key, ""))
        if label:
            found.append((label, str(name)))
    return found


@functools.lru_cache(maxsize=512)
def _paper_pagerank(path: str, paper_id: str, _stamp: object, damping: float = 0.85) -> dict[str, float]:
    """PageRank (power iteration, 50 rounds) over one paper's statements and the uses edges among them,
    scaled by the paper's statement count."""
    with closing(connect(Path(path))) as db:
        ids = [row[0] for row in db.execute("SELECT id FROM statement WHERE paper_id = ?", (paper_id,))]
        edges = db.execute(
            "SELECT id, target_id FROM reference WHERE paper_id = ? AND target_id != '' AND target_id != id",
            (paper_id,),
        ).fetchall()
    position = {statement_id: n for n, statement_id in enumerate(ids)}
    pairs = np.asarray([(position[a], position[b]) for a, b in edges if a in position and b in position], np.int64)
    count = len(ids)
    if count == 0:
        return {}
    out_degree = np.bincount(pairs[:, 0], minlength=count) if len(pairs) else np.zeros(count)
    rank = np.full(count, 1.0 / count)
    for _ in range(50):
        spread = np.zeros(count)
        if len(pairs):
            np.add.at(spread, pairs[:, 1], rank[pairs[:, 0]] / out_degree[pairs[:, 0]])
        dangling = rank[out_degree == 0].sum()  # a statement using nothing spreads its rank evenly
        rank = (1 - damping) / count + damping * (spread + dangling / count)
    return {statement_id: float(rank[n] * count) for statement_id, n in position.items()}


def _one(rows: sqlite3.Cursor) -> str:
    """The one id ``rows`` hold, or "" when none or several (an ambiguous label resolves to nothing)."""
    found = [row[0] for row in rows]
    return found[0] if len(found) == 1 else ""


def _uses_in(db: sqlite3.Connection, statement_id: str, include_self: bool) -> list[Edge]:
    rows = db.execute(
        "SELECT label, location, target_id, section FROM reference WHERE id = ? ORDER BY position", (statement_id,)
    ).fetchall()
    edges = []
    for label, where, target, section in rows:
        if not target and not section:  # another paper's statement, else another paper's section
            target = _one(db.execute("SELECT id FROM label WHERE full_label = ? LIMIT 2", (label,)))
            if not target:
                row = db.execute("SELECT section FROM section_label WHERE full_label = ?", (label,)).fetchone()
                section = row[0] if row else ""
        if target == statement_id and not include_self:
            continue  # a statement citing its own equation is not a use
        edges.append(Edge(statement_id, label, where, target, section))
    return edges
