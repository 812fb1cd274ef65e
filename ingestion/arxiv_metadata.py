"""arXiv metadata from the public snapshot's JSON-lines layout (one paper per line).

Fields used: ``id``, ``title``, ``authors``, ``abstract``, ``categories`` ("math.AG math.NT"),
``versions`` (``[{"version": "v1", "created": "Mon, 2 Apr 2007 19:18:42 GMT"}, ...]``), ``doi``,
``journal-ref`` and ``update_date``. The file is streamed; only the wanted papers are kept.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from pathlib import Path

from ingestion.problems import IngestProblem, Severity


@dataclass(frozen=True, slots=True)
class ArxivMetadata:
    arxiv_id: str
    title: str = ""
    authors: str = ""
    abstract: str = ""
    categories: tuple[str, ...] = ()
    published: str = ""  # date of v1, ISO
    updated: str = ""
    latest_version: str = ""
    doi: str = ""
    journal_ref: str = ""

    @property
    def primary_category(self) -> str:
        return self.categories[0] if self.categories else ""

    def record_metadata(self) -> dict[str, str]:
        """The fields each statement record of the paper carries."""
        values = {
            "categories": " ".join(self.categories),
            "primary_category": self.primary_category,
            "published": self.published,
            "updated": self.updated,
            "doi": self.doi,
            "journal_ref": self.journal_ref,
        }
        return {key: value for key, value in values.items() if value}


def _iso_date(created: str) -> str:
    try:
        return parsedate_to_datetime(created).date().isoformat()
    except (TypeError, ValueError):
        return ""


def parse_metadata_line(data: dict) -> ArxivMetadata:
    versions = data.get("versions") or []
    first = versions[0].get("created", "") if versions and isinstance(versions[0], dict) else ""
    latest = versions[-1].get("version", "") if versions and isinstance(versions[-1], dict) else ""
    return ArxivMetadata(
        arxiv_id=str(data["id"]).strip(),
        title=" ".join(str(data.get("title") or "").split()),
        authors=" ".join(str(data.get("authors") or "").split()),
        abstract=" ".join(str(data.get("abstract") or "").split()),
        categories=tuple(str(data.get("categories") or "").split()),
        published=_iso_date(first),
        updated=str(data.get("update_date") or ""),
        latest_version=latest,
        doi=str(data.get("doi") or ""),
        journal_ref=str(data.get("journal-ref") or ""),
    )


def read_arxiv_metadata(
    path: Path, wanted: Callable[[str], bool], problems: list[IngestProblem] | None = None
) -> dict[str, ArxivMetadata]:
    """Metadata of the papers whose id ``wanted`` accepts; bad lines are reported with their number."""
    found: dict[str, ArxivMetadata] = {}
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                data = json.loads(line)
                arxiv_id = str(data["id"]).strip()
            except (json.JSONDecodeError, KeyError, TypeError) as error:
                if problems is not None:
                    problems.append(IngestProblem(str(path), f"bad metadata line: {error}", Severity.WARNING, number))
                continue
            if wanted(arxiv_id):
                found[arxiv_id] = parse_metadata_line(data)
    return found
