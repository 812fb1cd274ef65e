"""How others cite a statement, in the statement graph's file: the citing sentences gathered per statement,
and a full-text index of them that a search reads as one more lexical channel.

Every reference row of the graph keeps the sentence around it (:mod:`ingestion.citing_sentences`) and that
sentence's search terms. A statement's *citing text* is the terms of every sentence citing it (one per
citer), kept in the FTS5 table ``citing_text`` under the statement's row id, so that BM25 (SQLite's own,
``bm25()``) ranks the statements by what their citers say of them. The table lives in ``graph.sqlite``
and is written in the same transaction as the references, so it follows the graph: a statement ingested
later that cites one already indexed adds to its text, a re-ingest or a removed paper takes its sentences
away, and a repair of the graph rebuilds it.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

from ingestion.citing_sentences import UNRESOLVED
from retriever.storage.sqlite_file import ReadConnections, connect, named_errors
from retriever.text.math_tokenizer import tokenize

# A label another paper defines resolves only where one statement carries it as PAPER-LABEL.
UNIQUE_FULL_LABEL = "(SELECT COUNT(*) FROM label other WHERE other.full_label = l.full_label) = 1"

# Each (statement of {marks}, a statement referencing it, where, the sentence, its terms), one row per citer
# (its first sentence), as `StatementGraph.used_by` resolves references; ordered, so every process reads
# the same rows.
_CITING = (
    "SELECT target, source, MIN(location), MIN(sentence), MIN(terms) FROM ("
    "SELECT target_id AS target, id AS source, location, sentence, sentence_terms AS terms FROM reference "
    "WHERE target_id IN ({marks}) AND sentence != '' "
    "UNION ALL SELECT l.id, r.id, r.location, r.sentence, r.sentence_terms "
    "FROM label l JOIN reference r ON r.label = l.full_label "
    f"WHERE l.id IN ({{marks}}) AND +r.target_id = '' AND +r.section = '' AND r.sentence != '' AND {UNIQUE_FULL_LABEL}"
    ") WHERE target != source GROUP BY target, source ORDER BY target, source"
)
CREATE_TABLE = "CREATE VIRTUAL TABLE IF NOT EXISTS citing_text USING fts5(terms)"
_BATCH = 400


@dataclass(frozen=True, slots=True)
class CitingSentence:
    """One statement's sentence around its reference to another: ``source_id`` cites, ``where``
    (``statement`` or ``proof``), the readable ``sentence`` and its search ``terms``."""

    source_id: str
    sentence: str
    where: str = "proof"
    terms: str = ""


def terms_of(sentence: str) -> str:
    """The search terms of a citing sentence, once each, space-joined; the reference's own placeholder
    is no term."""
    return " ".join(dict.fromkeys(tokenize(sentence.replace(UNRESOLVED, " ")))) if sentence else ""


def citing_sentences(db: sqlite3.Connection, ids: Sequence[str]) -> dict[str, list[CitingSentence]]:
    """For each of ``ids`` a sentence cites, its citers' sentences, in citer order."""
    found: dict[str, list[CitingSentence]] = {}
    ids = list(dict.fromkeys(ids))
    for start in range(0, len(ids), _BATCH):
        batch = ids[start : start + _BATCH]
        marks = ",".join("?" * len(batch))
        for target, source, where, sentence, terms in db.execute(_CITING.format(marks=marks), [*batch, *batch]):
            found.setdefault(target, []).append(CitingSentence(source, sentence, where, terms))
    return found


def refresh(db: sqlite3.Connection, ids: Iterable[str]) -> None:
    """Write the citing text of ``ids`` again from the references (none: their rows removed)."""
    ids = sorted(set(ids))
    for start in range(0, len(ids), _BATCH):
        batch = ids[start : start + _BATCH]
        marks = ",".join("?" * len(batch))
        rows = dict(db.execute(f"SELECT id, rowid FROM statement WHERE id IN ({marks})", batch).fetchall())
        forget(db, rows.values())
        texts = [
            (rows[target], text)
            for target, sentences in citing_sentences(db, batch).items()
            if target in rows and (text := _text_of(sentences))
        ]
        db.executemany("INSERT INTO citing_text (rowid, terms) VALUES (?, ?)", texts)


def forget(db: sqlite3.Connection, rowids: Iterable[int]) -> None:
    """Drop the citing text kept under these statement row ids."""
    db.executemany("DELETE FROM citing_text WHERE rowid = ?", [(rowid,) for rowid in rowids])


def rebuild(db: sqlite3.Connection) -> None:
    """The whole table written again (a graph from before it, or one repaired)."""
    db.execute("DELETE FROM citing_text")
    cited = [row[0] for row in db.execute("SELECT DISTINCT target_id FROM reference WHERE target_id != ''")]
    named = "SELECT DISTINCT l.id FROM label l JOIN reference r ON r.label = l.full_label"
    cited += [row[0] for row in db.execute(named)]
    refresh(db, cited)


def out_of_step(db: sqlite3.Connection) -> set[str]:
    """The statements whose kept citing text differs from what their citers' sentences give (missing,
    stale or extra): empty when the table follows the references, as every write keeps it."""
    ids = [row[0] for row in db.execute("SELECT id FROM statement")]
    texts = {target: _text_of(sentences) for target, sentences in citing_sentences(db, ids).items()}
    expected = {target: text for target, text in texts.items() if text}
    kept = dict(db.execute(
        "SELECT s.id, c.terms FROM citing_text c JOIN statement s ON s.rowid = c.rowid").fetchall())  # fmt: skip
    return {i for i in expected.keys() | kept.keys() if expected.get(i) != kept.get(i)}


def best_matches(db: sqlite3.Connection, query: str, k: int) -> list[tuple[str, float]]:
    """The ``k`` statements whose citing text best matches ``query`` (BM25, higher is better)."""
    words = list(dict.fromkeys(_words(" ".join(tokenize(query))).split()))
    if not words or k <= 0:
        return []
    match = " OR ".join('"' + word.replace('"', '""') + '"' for word in words)
    rows = db.execute(
        "SELECT s.id, -bm25(citing_text) FROM citing_text JOIN statement s ON s.rowid = citing_text.rowid "
        "WHERE citing_text MATCH ? ORDER BY rank LIMIT ?",
        (match, k),
    ).fetchall()
    return [(statement_id, float(score)) for statement_id, score in rows]


def _text_of(sentences: Sequence[CitingSentence]) -> str:
    """A statement's citing text: the word terms of its citers' sentences ("" when none has a word)."""
    return " ".join(_words(s.terms) for s in sentences).strip()


def _words(terms: str) -> str:
    """The word terms of ``terms`` (LaTeX commands left out: the formula channel reads formulas)."""
    return " ".join(term for term in terms.split() if not term.startswith("\\"))


class CitingTexts:
    """The citing sentences and citing text of one statement graph's file (``StatementGraph.citing_text``); the
    graph writes them with its references, these are the reads and the repair."""

    def __init__(self, path: Path, reads: ReadConnections) -> None:
        self.path = path
        self._reads = reads

    @named_errors
    def sentences(self, ids: Sequence[str], limit: int | None = None) -> dict[str, list[CitingSentence]]:
        """For each of ``ids``, the sentences of the statements that reference it (resolved as
        ``StatementGraph.used_by`` resolves them), each citer once, in id order; at most ``limit`` a
        statement. A statement no sentence cites is left out."""
        with self._reads.reading() as db:
            found = citing_sentences(db, ids)
        return {target: cited[:limit] if limit is not None else cited for target, cited in found.items()}

    @named_errors
    def terms(self, ids: Sequence[str]) -> dict[str, list[frozenset[str]]]:
        """For each of ``ids`` that a sentence cites, the search terms of each citer's sentence, in citer
        order: what the learned ranker's citing features read."""
        with self._reads.reading() as db:
            found = citing_sentences(db, ids)
        return {target: [frozenset(s.terms.split()) for s in cited] for target, cited in found.items()}

    @named_errors
    def best(self, query: str, k: int) -> list[tuple[str, float]]:
        """The ``k`` statements whose citers' sentences best match ``query`` (the citing channel)."""
        with self._reads.reading() as db:
            return best_matches(db, query, k)

    @named_errors
    def out_of_step(self) -> set[str]:
        """The statements whose citing text is missing or stale (``rag-app status``; empty when in step)."""
        with closing(connect(self.path)) as db:
            return out_of_step(db)

    @named_errors
    def rebuild(self) -> None:
        """Every statement's citing text written again from the references (``rag-app repair``)."""
        with closing(connect(self.path)) as db, db:
            rebuild(db)
