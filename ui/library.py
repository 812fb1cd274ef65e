"""What the index holds: sources, papers, statements by kind, categories, dates, models.

Shown on the chat's library page and used to offer filter choices (only categories that exist).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import date

from ingestion.records import StatementKind
from retriever.search_filter import metadata_categories, metadata_date
from retriever.store.statement_index import StatementIndex


@dataclass
class LibraryStats:
    statements: int = 0
    statements_by_source: Counter[str] = field(default_factory=Counter)
    papers_by_source: Counter[str] = field(default_factory=Counter)
    statements_by_kind: Counter[str] = field(default_factory=Counter)
    categories: Counter[str] = field(default_factory=Counter)  # statements per arXiv category
    first_date: date | None = None
    last_date: date | None = None
    last_ingest: str = ""  # when the index last changed (ISO time), "" when never
    embedder: str = ""

    @property
    def papers(self) -> int:
        return sum(self.papers_by_source.values())

    def kinds(self) -> list[str]:
        """Kinds present, in the canonical order (theorem, lemma, ...)."""
        order = [kind.value for kind in StatementKind]
        return sorted(self.statements_by_kind, key=lambda k: order.index(k) if k in order else len(order))


def library_stats(index: StatementIndex) -> LibraryStats:
    """Read every record's source, kind, paper and metadata (no texts, no vectors) and count."""
    stats = LibraryStats()
    papers: dict[str, set[str]] = {}
    dates: list[date] = []
    for summary in index.store.iter_summaries():
        stats.statements += 1
        stats.statements_by_source[summary.source] += 1
        stats.statements_by_kind[summary.kind] += 1
        papers.setdefault(summary.source, set()).add(summary.paper_id)
        when = metadata_date(summary.metadata)
        if when is not None:
            dates.append(when)
        stats.categories.update(metadata_categories(summary.metadata))
    stats.papers_by_source = Counter({source: len(ids) for source, ids in papers.items()})
    if dates:
        stats.first_date, stats.last_date = min(dates), max(dates)
    manifest = index.manifest()
    stats.last_ingest = str(manifest.get("updated", ""))
    stats.embedder = str(manifest.get("embedder", index.embedder.identity))
    return stats
