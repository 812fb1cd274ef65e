"""``ingest mse PATH``: a Math StackExchange dump into the index, incrementally.

Posts are keyed by id (each is its own "paper", ``mse-<id>``): an edited post gets a new content id
and replaces its old statement; a post the dump no longer has (deleted, or now outside the filters)
is removed at the end of a complete read. A dump that cannot be read to its end removes nothing.
A rerun of the same dump adds and removes nothing.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from tqdm import tqdm

from ingestion.mse_records import MseFilters, MseRecordReader
from ingestion.problems import IngestProblem
from ingestion.records import Source
from rag_app.indexing.statement_writer import PendingPaper, StatementWriter
from retriever.store.statement_index import StatementIndex


@dataclass
class MseReport:
    path: str
    posts_read: int = 0
    records_by_kind: Counter[str] = field(default_factory=Counter)
    added: int = 0
    updated: int = 0  # edited posts' statements whose shown fields changed (their text is their id)
    removed_posts: int = 0
    seconds: float = 0.0
    complete: bool = True  # False when the file could not be read to its end (nothing was removed)
    problems: list[IngestProblem] = field(default_factory=list)

    def summary(self) -> str:
        kinds = ", ".join(f"{count} {kind}s" for kind, count in sorted(self.records_by_kind.items()))
        note = "" if self.complete else " (file not read to its end: no posts removed)"
        return (
            f"Math StackExchange {self.path}: {self.posts_read} posts read, {kinds or 'no records'} kept "
            f"({self.added} added, {self.removed_posts} posts removed) in {self.seconds:.1f} s; "
            f"{len(self.problems)} problems{note}"
        )

    def to_dict(self) -> dict[str, object]:
        return {
            "path": self.path,
            "posts_read": self.posts_read,
            "records_by_kind": dict(self.records_by_kind),
            "added": self.added,
            "updated": self.updated,
            "removed_posts": self.removed_posts,
            "complete": self.complete,
            "seconds": round(self.seconds, 3),
            "problems": [problem.to_dict() for problem in self.problems],
        }


class MseIngest:
    def __init__(self, index: StatementIndex, batch_statements: int = 512) -> None:
        self.index = index
        self.batch_statements = batch_statements

    def run(self, path: Path, filters: MseFilters | None = None, show_progress: bool = False) -> MseReport:
        started = time.perf_counter()
        report = MseReport(str(path))
        reader = MseRecordReader(path, filters)
        writer = StatementWriter(self.index, self.batch_statements)  # an edited post: its old statement goes
        for record in tqdm(reader.records(), desc="Math StackExchange", unit="post", disable=not show_progress):
            report.records_by_kind[record.kind.value] += 1
            writer.add(PendingPaper(record.paper_id, [record]))
        writer.flush()
        report.added = writer.counts.added
        report.updated = writer.counts.updated
        report.posts_read = reader.posts_read
        report.problems = reader.problems
        # A problem naming the file itself (not one post) means the read stopped early.
        report.complete = not any(problem.path == str(path) for problem in reader.problems)
        if report.complete:
            gone = sorted(self.index.store.paper_ids(Source.MSE.value) - writer.papers_written)
            self.index.remove_papers(gone)
            report.removed_posts = len(gone)
        writer.finish()
        report.seconds = time.perf_counter() - started
        return report
