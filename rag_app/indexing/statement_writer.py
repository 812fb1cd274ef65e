"""The one ingest loop's writing half: papers' statements into the index, a batch at a time.

Every ingester (LaTeX files and archives, arXiv months, Math StackExchange dumps) reads its own
sources and hands each paper (an MSE post is a paper) to a :class:`StatementWriter`, which:

- writes ``ingestion.batch_statements`` statements at a time (embedded together, one Chroma upsert);
- makes the store hold exactly a paper's new statements: those it no longer has are removed in the
  same step as the new ones are added, so a kill between two batches leaves whole papers;
- records the papers' manifest entries (``ingest arxiv``) only after their statements are stored,
  so a rerun redoes exactly the papers without an entry;
- ends by checking that the lexical indexes, the duplicate groups and the second model's vectors are in
  step with the store (no-ops unless a write was interrupted).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ingestion.records import StatementRecord
from retriever.store.paper_manifest import PaperEntry, PaperManifest
from retriever.store.statement_index import AddResult, StatementIndex


@dataclass
class PendingPaper:
    """One paper's statements, waiting for the next write."""

    paper_id: str
    records: Sequence[StatementRecord]
    vectors: np.ndarray | None = None  # embedded elsewhere (a Dask worker): one row per record
    entry: PaperEntry | None = None  # its manifest row, recorded once the statements are stored


@dataclass
class WriteCounts:
    added: int = 0
    unchanged: int = 0  # statements already in the store (same content id, same name, label, ...)
    updated: int = 0  # statements stored before whose name, label or other shown fields changed
    removed: int = 0  # statements a re-ingested paper no longer has


class StatementWriter:
    """Writes papers into ``index`` by batches of ``batch_statements``; call :meth:`finish` at the end."""

    def __init__(
        self,
        index: StatementIndex,
        batch_statements: int,
        manifest: PaperManifest | None = None,
        show_progress: bool = False,
    ) -> None:
        self.index = index
        self.batch_statements = batch_statements
        self.manifest = manifest
        self.show_progress = show_progress
        self.counts = WriteCounts()
        # Papers already replaced in this run: a paper met again (a CSV's rows out of order) only adds,
        # or its first part would count as stale. Ids only, so a whole MSE dump fits in memory.
        self.papers_written: set[str] = set()
        self._pending: list[PendingPaper] = []
        self._pending_statements = 0

    def add(self, paper: PendingPaper) -> None:
        self._pending.append(paper)
        self._pending_statements += len(paper.records)
        if self._pending_statements >= self.batch_statements:
            self.flush()

    def flush(self) -> None:
        if not self._pending:
            return
        pending, self._pending, self._pending_statements = self._pending, [], 0
        embedded = [p for p in pending if p.vectors is not None]
        if embedded:  # vectors made by cluster workers are stored as they are
            records = [r for p in embedded for r in p.records]
            vectors = np.vstack([p.vectors for p in embedded if p.vectors is not None])
            self._count(self.index.add_embedded(records, vectors))
        to_embed = [r for p in pending if p.vectors is None for r in p.records]
        if to_embed:
            self._count(self.index.add(to_embed, self.show_progress))
        ids_by_paper: dict[str, set[str]] = {}
        for paper in pending:
            if paper.paper_id not in self.papers_written:
                ids_by_paper.setdefault(paper.paper_id, set()).update(r.id for r in paper.records)
        self.counts.removed += self.index.remove_stale(ids_by_paper)
        self.papers_written.update(p.paper_id for p in pending)
        if self.manifest is not None:
            self.manifest.record(p.entry for p in pending if p.entry is not None)

    def finish(self) -> WriteCounts:
        """Write what is pending and bring the lexical indexes in step; the run's counts."""
        self.flush()
        # No-ops unless a write was interrupted (a kill between the Chroma upsert and the rest):
        # every store derived from the statements is caught up from Chroma, the source of truth.
        self.index.catch_up(quick=True, show_progress=self.show_progress)
        return self.counts

    def _count(self, result: AddResult) -> None:
        self.counts.added += result.added
        self.counts.unchanged += result.unchanged
        self.counts.updated += result.updated
