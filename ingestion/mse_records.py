"""Math StackExchange posts to statement records: one per answer (with its question as context),
and one per question (for duplicate-question search).

Answers come after their questions in the dump but interleaved with other threads, so the questions
are read first into a SQLite table on disk (title, text excerpt, tags, accepted answer) and the
answers joined to it in a second pass: memory stays flat however large the dump.
"""

from __future__ import annotations

import json
import sqlite3
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from ingestion.mse_html import Formula, convert_post
from ingestion.mse_posts import MsePost, read_posts, read_rows
from ingestion.problems import IngestProblem
from ingestion.records import Source, StatementKind, StatementRecord, statement_id

MSE_ANSWER_URL = "https://math.stackexchange.com/a/{id}"
MSE_QUESTION_URL = "https://math.stackexchange.com/q/{id}"
CONTEXT_CHARS = 600  # how much of the question an answer carries as context


@dataclass(frozen=True, slots=True)
class MseFilters:
    """Which posts to keep. ``until`` is an ISO date: ARQMath searches only posts up to a cutoff."""

    min_score: int | None = None
    until: str | None = None
    tags: frozenset[str] = field(default_factory=frozenset)

    def keep(self, post: MsePost, tags: tuple[str, ...]) -> bool:
        if self.min_score is not None and post.score < self.min_score:
            return False
        if self.until is not None and post.creation_date[:10] > self.until:
            return False
        return not self.tags or bool(self.tags.intersection(tags))


def paper_id_for(post_id: int) -> str:
    """Each post is its own unit of replacement: an edit replaces it, a deletion removes it."""
    return f"mse-{post_id}"


@dataclass(frozen=True, slots=True)
class _Question:
    title: str
    text: str
    tags: tuple[str, ...]
    accepted_answer_id: int | None
    formulas: list[Formula]

    @property
    def excerpt(self) -> str:
        return self.text[:CONTEXT_CHARS]


class MseRecordReader:
    """Reads one ``Posts.xml`` (plain, ``.gz`` or ``.7z``) into records, reporting bad rows in ``problems``."""

    def __init__(self, path: Path, filters: MseFilters | None = None) -> None:
        self.path = path
        self.filters = filters or MseFilters()
        self.problems: list[IngestProblem] = []
        self.posts_read = 0

    def records(self) -> Iterator[StatementRecord]:
        with tempfile.TemporaryDirectory(prefix="rag-app-mse-") as workdir:
            questions = sqlite3.connect(Path(workdir) / "questions.sqlite")
            questions.execute(
                "CREATE TABLE q (id INTEGER PRIMARY KEY, title TEXT, text TEXT, tags TEXT, acc INTEGER, formulas TEXT)"
            )
            self._store_questions(questions)
            self._store_side_files(questions)
            for post in read_posts(self.path, []):  # the first pass reported the row problems already
                self.posts_read += 1
                record = self._record(post, questions)
                if record is not None:
                    yield record
            questions.close()

    def _store_questions(self, db: sqlite3.Connection) -> None:
        batch = []
        for post in read_posts(self.path, self.problems):
            if post.post_type != "question":
                continue
            converted = self._convert(post)
            if converted is None:
                continue
            text, formulas = converted
            encoded = json.dumps([[f.formula_id, f.latex] for f in formulas])
            batch.append((post.post_id, post.title, text, "|".join(post.tags), post.accepted_answer_id, encoded))
            if len(batch) >= 10_000:
                db.executemany("INSERT OR REPLACE INTO q VALUES (?, ?, ?, ?, ?, ?)", batch)
                batch.clear()
        db.executemany("INSERT OR REPLACE INTO q VALUES (?, ?, ?, ?, ?, ?)", batch)
        db.commit()

    def _store_side_files(self, db: sqlite3.Connection) -> None:
        """``PostLinks.xml`` (duplicates, LinkTypeId 3) and ``Users.xml`` (names) beside the posts, when there."""
        db.execute("CREATE TABLE duplicate (post INTEGER, target INTEGER)")
        db.execute("CREATE TABLE user (id INTEGER PRIMARY KEY, name TEXT)")
        links = self.path.with_name("PostLinks.xml")
        if links.is_file():
            rows = read_rows(links, self.problems)
            pairs = ((r["PostId"], r["RelatedPostId"]) for r in rows if r.get("LinkTypeId") == "3" and "PostId" in r)
            db.executemany("INSERT INTO duplicate VALUES (?, ?)", pairs)
            db.execute("CREATE INDEX duplicate_post ON duplicate (post)")
        users = self.path.with_name("Users.xml")
        if users.is_file():
            rows = read_rows(users, self.problems)
            db.executemany(
                "INSERT OR REPLACE INTO user VALUES (?, ?)",
                ((r["Id"], r.get("DisplayName", "")) for r in rows if "Id" in r),
            )
        db.commit()

    def _question(self, db: sqlite3.Connection, question_id: int) -> _Question | None:
        row = db.execute("SELECT title, text, tags, acc, formulas FROM q WHERE id = ?", (question_id,)).fetchone()
        if row is None:
            return None
        formulas = [Formula(formula_id, latex) for formula_id, latex in json.loads(row[4])]
        return _Question(row[0], row[1], tuple(t for t in row[2].split("|") if t), row[3], formulas)

    def _convert(self, post: MsePost) -> tuple[str, list[Formula]] | None:
        try:
            return convert_post(post.body_html, post.post_id)
        except Exception as error:  # broken HTML that the parser cannot take: report the post, go on
            self.problems.append(IngestProblem(f"{self.path}#post-{post.post_id}", f"unreadable body: {error}"))
            return None

    def _record(self, post: MsePost, db: sqlite3.Connection) -> StatementRecord | None:
        question_id = post.post_id if post.post_type == "question" else post.parent_id
        assert question_id is not None
        question = self._question(db, question_id)
        if question is None:
            if post.post_type == "answer":
                self.problems.append(
                    IngestProblem(f"{self.path}#post-{post.post_id}", f"answer to unknown question {question_id}")
                )
            return None
        if not self.filters.keep(post, question.tags):
            return None
        if post.post_type == "question":
            text, formulas = question.text, question.formulas
        else:
            converted = self._convert(post)
            if converted is None:
                return None
            text, formulas = converted
        if not text:
            return None
        is_answer = post.post_type == "answer"
        metadata: dict[str, str | int | float | bool] = {
            "docno": str(post.post_id),
            "post_type": post.post_type,
            "question_id": question_id,
            "score": post.score,
            "created": post.creation_date,
            "tags": " ".join(question.tags),
            "formula_ids": " ".join(f.formula_id for f in formulas),
        }
        if post.last_edit_date:
            metadata["edited"] = post.last_edit_date
        if post.owner_user_id is not None:
            author = db.execute("SELECT name FROM user WHERE id = ?", (post.owner_user_id,)).fetchone()
            if author and author[0]:
                metadata["author"] = author[0]
        if post.post_type == "question":
            targets = db.execute("SELECT target FROM duplicate WHERE post = ?", (post.post_id,)).fetchall()
            if targets:
                metadata["duplicate_of"] = " ".join(str(t[0]) for t in targets)
        if is_answer:
            metadata["accepted"] = question.accepted_answer_id == post.post_id
            metadata["context"] = question.excerpt
        kind = StatementKind.ANSWER if is_answer else StatementKind.QUESTION
        paper_id = paper_id_for(post.post_id)
        return StatementRecord(
            id=statement_id(Source.MSE.value, paper_id, kind.value, text),
            source=Source.MSE,
            kind=kind,
            text=text,
            paper_id=paper_id,
            name=question.title,
            formulas=tuple(f.latex for f in formulas),
            section=question.title,
            url=(MSE_ANSWER_URL if is_answer else MSE_QUESTION_URL).format(id=post.post_id),
            title=question.title,
            metadata=metadata,
        )
