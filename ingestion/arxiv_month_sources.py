"""The e-prints of one arXiv month in a source directory: bulk tars and per-paper files.

Bulk tars (``arXiv_src_2301_001.tar``) are streamed member by member into a staging directory, so
a month never needs its whole uncompressed size on disk. Of several versions of one paper given as
separate files (``2301.01234v1.tar.gz``, ``2301.01234v2.gz``) only the latest is ingested.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ingestion.ingest_limits import IngestLimits
from ingestion.latex_sources import ArxivName, bulk_tar_members, is_bulk_tar, parse_arxiv_name, safe_paper_dir_name
from ingestion.problems import IngestProblem, Severity

_MONTH = re.compile(r"^(?P<year>\d{4})-(?P<month>0[1-9]|1[0-2])$")


def month_prefix(month: str) -> str:
    """``2023-01`` to ``2301``, the prefix of that month's arXiv ids and bulk tar names."""
    match = _MONTH.match(month)
    if not match:
        raise ValueError(f"month must be YYYY-MM, got {month!r}")
    return match.group("year")[2:] + match.group("month")


def id_in_month(arxiv_id: str, prefix: str) -> bool:
    if "/" in arxiv_id:  # old style: math/0501001
        return arxiv_id.split("/", 1)[1].startswith(prefix)
    return arxiv_id.startswith(prefix + ".")


def _version_number(name: ArxivName) -> int:
    return int(name.version[1:]) if name.version else 0


@dataclass(frozen=True, slots=True)
class EprintFile:
    path: Path  # readable file: the user's own, or a staged bulk member
    origin: str  # what to call it in messages
    name: ArxivName
    staged: bool = False  # a bulk member copied to the staging directory (delete after use)


def month_eprints(
    source: Path, month: str, staging: Path, limits: IngestLimits | None = None
) -> Iterator[EprintFile | IngestProblem]:
    """Each e-print of ``month`` under ``source`` (or a problem naming it)."""
    limits = limits or IngestLimits()
    prefix = month_prefix(month)
    if not source.is_dir():
        yield IngestProblem(str(source), "source is not a directory")
        return
    files = sorted(p for p in source.rglob("*") if p.is_file() and not p.is_symlink())
    latest: dict[str, EprintFile] = {}
    bulk: list[Path] = []
    for file in files:
        if is_bulk_tar(file):
            if file.name.startswith(f"arXiv_src_{prefix}_"):
                bulk.append(file)
            continue
        name = parse_arxiv_name(file.name)
        if name is None or not id_in_month(name.arxiv_id, prefix):
            continue
        previous = latest.get(name.arxiv_id)
        if previous is None or _version_number(name) > _version_number(previous.name):
            latest[name.arxiv_id] = EprintFile(file, str(file), name)
    for eprint in sorted(latest.values(), key=lambda e: e.name.arxiv_id):
        if eprint.path.suffix.lower() == ".pdf":
            yield IngestProblem(eprint.origin, "PDF-only submission: no LaTeX source", Severity.WARNING)
        else:
            yield eprint
    staging.mkdir(parents=True, exist_ok=True)

    def wanted(name: ArxivName | None) -> bool:
        return name is not None and id_in_month(name.arxiv_id, prefix) and name.arxiv_id not in latest

    for tar_path in bulk:
        # A PDF-only paper is skipped, not failed, in a month's summary.
        for member in bulk_tar_members(tar_path, staging, limits, wanted, pdf_severity=Severity.WARNING):
            if isinstance(member, IngestProblem):
                yield member
            else:
                assert member.name is not None
                yield EprintFile(member.path, member.origin, member.name, staged=True)


__all__ = ["EprintFile", "id_in_month", "month_eprints", "month_prefix", "safe_paper_dir_name"]
