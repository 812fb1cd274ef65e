"""Restrict a search to some sources, statement kinds, arXiv categories or dates.

A filter is applied to the fused results of any retriever mode, searching deeper until enough
statements pass (see ``StatementIndex.search``), so every mode filters the same way.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date

from ingestion.records import StatementRecord

_SEPARATORS = re.compile(r"[\s;,]+")


@dataclass(frozen=True, slots=True)
class SearchFilter:
    """Which statements a search may return; an empty field does not restrict.

    ``categories`` match a record's arXiv categories (``math.AG``), or a whole archive (``math``).
    The dates bound the record's date (an arXiv paper's first version, an MSE post's creation) and
    are inclusive; a record without a date fails a date bound.
    """

    sources: frozenset[str] = field(default_factory=frozenset)
    kinds: frozenset[str] = field(default_factory=frozenset)
    categories: frozenset[str] = field(default_factory=frozenset)
    date_from: date | None = None
    date_to: date | None = None

    @property
    def active(self) -> bool:
        return bool(self.sources or self.kinds or self.categories or self.date_from or self.date_to)

    def matches(self, record: StatementRecord) -> bool:
        if self.sources and record.source.value not in self.sources:
            return False
        if self.kinds and record.kind.value not in self.kinds:
            return False
        if self.categories and not self._category_matches(record_categories(record)):
            return False
        if self.date_from or self.date_to:
            when = record_date(record)
            if when is None:
                return False
            if (self.date_from and when < self.date_from) or (self.date_to and when > self.date_to):
                return False
        return True

    def _category_matches(self, categories: list[str]) -> bool:
        return any(c in self.categories or c.split(".")[0] in self.categories for c in categories)

    def describe(self) -> str:
        """A short human description, e.g. ``source: arxiv; kind: theorem, lemma``."""
        parts = []
        for name, values in (("source", self.sources), ("kind", self.kinds), ("category", self.categories)):
            if values:
                parts.append(f"{name}: {', '.join(sorted(values))}")
        if self.date_from or self.date_to:
            parts.append(f"date: {self.date_from or '…'} to {self.date_to or '…'}")
        return "; ".join(parts) or "everything"


def record_categories(record: StatementRecord) -> list[str]:
    return metadata_categories(record.metadata)


def record_date(record: StatementRecord) -> date | None:
    return metadata_date(record.metadata)


def metadata_categories(metadata: Mapping[str, object]) -> list[str]:
    """The arXiv categories in a record's metadata (space- or semicolon-separated)."""
    value = str(metadata.get("categories", "") or metadata.get("primary_category", ""))
    return [c for c in _SEPARATORS.split(value) if c]


def metadata_date(metadata: Mapping[str, object]) -> date | None:
    """The paper's first publication (arXiv) or the post's creation (MSE), when the metadata has it."""
    for key in ("published", "created"):
        value = str(metadata.get(key, "") or "")
        if len(value) >= 10:
            try:
                return date.fromisoformat(value[:10])
            except ValueError:
                continue
    return None
