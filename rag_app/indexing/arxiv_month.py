"""``ingest arxiv --month``: one month of arXiv e-prints into the index, resumable and parallel.

Each e-print is parsed in a worker process with a time limit (pebble kills a worker that runs
over). Papers whose content hash is already in the manifest are skipped, so a rerun changes
nothing. Statements reach the store before their manifest entry, one batch at a time, and a
paper's stale statements are removed in the same step; after a kill at any point, a rerun redoes
exactly the papers without an entry and ends with the store an uninterrupted run would have made.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
from tqdm import tqdm

from ingestion.arxiv_download import ArxivDownloader, DownloadReport
from ingestion.arxiv_metadata import ArxivMetadata, read_arxiv_metadata
from ingestion.arxiv_month_sources import EprintFile, id_in_month, month_eprints, month_prefix
from ingestion.ingest_limits import IngestLimits
from ingestion.latex_ingestor import PaperStatements, arxiv_abs_url
from ingestion.paper_pool import parse_in_pool
from ingestion.paper_worker import parse_eprint
from ingestion.problems import IngestProblem, Severity, refused_parts_by_source
from ingestion.records import Source, StatementRecord
from rag_app.indexing.dask_ingest import DaskEprintParser
from rag_app.indexing.statement_writer import PendingPaper, StatementWriter
from rag_app.settings import Settings
from retriever.store.paper_manifest import PaperEntry, PaperManifest
from retriever.store.statement_index import StatementIndex


@dataclass
class MonthReport:
    """The summary of one month run (``--json`` prints :meth:`to_dict`)."""

    month: str
    papers_ok: int = 0
    unchanged: int = 0
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (paper, reason)
    failed: list[tuple[str, str]] = field(default_factory=list)
    statements_by_kind: Counter[str] = field(default_factory=Counter)
    added: int = 0
    removed: int = 0
    updated: int = 0  # statements whose name, label or other shown fields changed in a new version
    seconds: float = 0.0
    problems: list[IngestProblem] = field(default_factory=list)
    references: int = 0  # labels the statements and proofs reference
    unresolved_references: int = 0  # of those, labels their paper does not define (another paper may)
    citations: int = 0  # bibliography keys the statements and proofs cite
    arxiv_citations: int = 0  # of those, keys their paper's bibliography gives an arXiv id

    @property
    def statements(self) -> int:
        return sum(self.statements_by_kind.values())

    def summary(self) -> str:
        kinds = ", ".join(f"{kind} {count}" for kind, count in self.statements_by_kind.most_common())
        refused = refused_parts_by_source(self.problems)
        return (
            f"arXiv {self.month}: {self.papers_ok} papers ingested, {self.unchanged} unchanged, "
            f"{len(self.skipped)} skipped, {len(self.failed)} failed; {self.statements} statements "
            f"({self.added} added, {self.removed} removed"
            + (f", {self.updated} updated" if self.updated else "")
            + f") in {self.seconds:.1f} s"
            + (f"; {kinds}" if kinds else "")
            + (f"; {sum(refused.values())} parts refused in {len(refused)} papers" if refused else "")
        )

    def to_dict(self) -> dict[str, object]:
        return {
            "month": self.month,
            "papers_ok": self.papers_ok,
            "unchanged": self.unchanged,
            "skipped": [{"paper": p, "reason": r} for p, r in self.skipped],
            "failed": [{"paper": p, "reason": r} for p, r in self.failed],
            "statements": self.statements,
            "statements_by_kind": dict(self.statements_by_kind),
            "added": self.added,
            "updated": self.updated,
            "removed": self.removed,
            "seconds": round(self.seconds, 3),
            "problems": [problem.to_dict() for problem in self.problems],
            "refused_parts": refused_parts_by_source(self.problems),
            "references": self.references,
            "unresolved_references": self.unresolved_references,
            "citations": self.citations,
            "arxiv_citations": self.arxiv_citations,
        }


def content_hash(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


@dataclass
class _Parsed:
    eprint: EprintFile
    digest: str
    result: PaperStatements | None
    error: str = ""
    vectors: np.ndarray | None = None  # embedded by a cluster worker, one row per statement
    retry: bool = False  # the cluster, not the paper, failed: no manifest entry, so a rerun tries again


class ArxivMonthIngest:
    """Runs one month into one index."""

    def __init__(
        self,
        index: StatementIndex,
        limits: IngestLimits,
        workers: int | None = None,
        metadata_file: Path | None = None,
        batch_statements: int = 512,
        cluster: DaskEprintParser | None = None,
    ) -> None:
        self.index = index
        self.limits = limits
        self.workers = workers or os.cpu_count() or 1
        self.metadata_file = metadata_file
        self.batch_statements = batch_statements
        self.cluster = cluster  # parse and embed there (an entered DaskEprintParser); None: local processes

    def run(self, month: str, source: Path, show_progress: bool = False) -> MonthReport:
        started = time.perf_counter()
        prefix = month_prefix(month)
        report = MonthReport(month)
        metadata: dict[str, ArxivMetadata] = {}
        if self.metadata_file is not None:
            metadata = read_arxiv_metadata(self.metadata_file, lambda i: id_in_month(i, prefix), report.problems)
        manifest = self.index.papers()
        try:
            writer = StatementWriter(self.index, self.batch_statements, manifest)
            with tempfile.TemporaryDirectory(prefix="rag-app-month-") as staging:
                progress = tqdm(desc=f"arXiv {month}", unit="paper", disable=not show_progress)
                for parsed in self._parse_all(self._changed(source, month, Path(staging), manifest, report)):
                    progress.update(1)
                    paper = self._take(parsed, metadata, manifest, report)
                    if paper is not None:
                        writer.add(paper)
                progress.close()
            written = writer.finish()
            report.added, report.removed, report.updated = written.added, written.removed, written.updated
        finally:
            manifest.close()
        report.seconds = time.perf_counter() - started
        return report

    # ------------------------------------------------------------------ stages
    def _changed(
        self, source: Path, month: str, staging: Path, manifest: PaperManifest, report: MonthReport
    ) -> Iterator[tuple[EprintFile, str]]:
        """E-prints whose content is not yet in the manifest (the others are counted unchanged)."""
        for item in month_eprints(source, month, staging, self.limits):
            if isinstance(item, IngestProblem):
                report.problems.append(item)
                bucket = report.skipped if item.severity is Severity.WARNING else report.failed
                bucket.append((item.path, item.reason))
                continue
            digest = content_hash(item.path)
            entry = manifest.get(item.name.arxiv_id)
            if entry is not None and entry.content_hash == digest:
                report.unchanged += 1
                if item.staged:
                    item.path.unlink(missing_ok=True)
                continue
            yield item, digest

    def _parse_all(self, eprints: Iterator[tuple[EprintFile, str]]) -> Iterator[_Parsed]:
        """Parse in worker processes with the per-paper time limit, results in submission order."""
        if self.cluster is not None:
            for remote in self.cluster.parse((item, item[0].path, item[0].origin) for item in eprints):
                eprint, digest = remote.item
                if eprint.staged:
                    eprint.path.unlink(missing_ok=True)
                yield _Parsed(eprint, digest, remote.result, remote.error, remote.vectors, remote.retry)
            return

        def task(item: tuple[EprintFile, str]) -> tuple[Callable[..., PaperStatements], tuple[object, ...]]:
            return parse_eprint, (str(item[0].path), item[0].origin, self.limits)

        for outcome in parse_in_pool(eprints, task, self.workers, self.limits.paper_timeout_s):
            eprint, digest = outcome.item
            if eprint.staged:
                eprint.path.unlink(missing_ok=True)
            yield _Parsed(eprint, digest, outcome.result, outcome.error)

    def _take(
        self,
        parsed: _Parsed,
        metadata: dict[str, ArxivMetadata],
        manifest: PaperManifest,
        report: MonthReport,
    ) -> PendingPaper | None:
        """The parsed paper ready to write, or None (a failed or empty paper is recorded as such)."""
        arxiv_id, version = parsed.eprint.name.arxiv_id, parsed.eprint.name.version
        result = parsed.result
        if result is not None:
            report.problems.extend(result.problems)
        info = metadata.get(arxiv_id)
        if result is None or not result.records:
            reasons = [p.reason for p in (result.problems if result else []) if p.severity is Severity.ERROR]
            reason = parsed.error or (reasons[0] if reasons else "no theorem-like statements found")
            skipped = "PDF-only" in reason or "POSTSCRIPT-only" in reason or "no theorem" in reason
            (report.skipped if skipped else report.failed).append((arxiv_id, reason))
            if parsed.error:
                report.problems.append(IngestProblem(parsed.eprint.origin, parsed.error))
            previous = manifest.get(arxiv_id)
            if not parsed.retry and (previous is None or previous.status != "ok"):
                # Known-bad content is not parsed again; a good earlier version is kept as it is.
                manifest.record(
                    [
                        PaperEntry(
                            arxiv_id,
                            version,
                            parsed.digest,
                            "skipped" if skipped else "failed",
                            reason=reason,
                            source=parsed.eprint.origin,
                        )
                    ]
                )
            return None
        records = [self._with_metadata(record, arxiv_id, result, info) for record in result.records]
        vectors = parsed.vectors
        changed = zip(records, result.records, strict=True)
        if vectors is not None and any(a.search_text() != b.search_text() for a, b in changed):
            vectors = None  # the metadata changed what is embedded: the driver embeds these itself
        entry = PaperEntry(
            paper_id=arxiv_id,
            version=version or (info.latest_version if info else ""),
            content_hash=parsed.digest,
            status="ok",
            statements=len(records),
            title=records[0].title,
            authors="; ".join(result.authors) or (info.authors if info else ""),
            abstract=result.abstract or (info.abstract if info else ""),
            categories=" ".join(info.categories) if info else "",
            published=info.published if info else "",
            source=parsed.eprint.origin,
        )
        report.papers_ok += 1
        report.statements_by_kind.update(record.kind.value for record in records)
        report.references += result.references
        report.unresolved_references += result.unresolved_references
        report.citations += result.citations
        report.arxiv_citations += result.arxiv_citations
        return PendingPaper(arxiv_id, records, vectors, entry)

    @staticmethod
    def _with_metadata(
        record: StatementRecord, arxiv_id: str, result: PaperStatements, info: ArxivMetadata | None
    ) -> StatementRecord:
        metadata = dict(record.metadata)
        if info is not None:
            metadata.update(info.record_metadata())
            if "authors" not in metadata and info.authors:
                metadata["authors"] = info.authors
        if result.version:
            metadata["arxiv_version"] = result.version
        return replace(
            record,
            source=Source.ARXIV,
            url=record.url or arxiv_abs_url(arxiv_id),
            title=record.title or (info.title if info else ""),
            metadata=metadata,
        )


@contextlib.contextmanager
def month_ingest(
    index: StatementIndex,
    settings: Settings,
    metadata_file: Path | None = None,
    on_cluster: Callable[[str], None] | None = None,
) -> Iterator[ArxivMonthIngest]:
    """The month ingest ``settings.ingestion`` describes: local parser processes, or a Dask cluster
    (``ingestion.dask.enabled``) entered here and closed on leaving, so that several months share it.
    ``on_cluster`` hears where the cluster runs (its dashboard). A cluster that cannot start raises
    :class:`rag_app.indexing.dask_ingest.ClusterError`."""
    ingestion = settings.ingestion
    with contextlib.ExitStack() as stack:
        cluster = None
        if ingestion.dask.enabled:
            cluster = DaskEprintParser(
                index.embedder,
                ingestion.limits,
                ingestion.dask.scheduler,
                ingestion.dask.workers,
                ingestion.dask.chunk_papers,
                settings.embedding.device,
            )
            stack.enter_context(cluster)
            if on_cluster is not None:
                where = ingestion.dask.scheduler or f"a local cluster of {ingestion.dask.workers} workers"
                on_cluster(f"parsing and embedding on Dask: {where} (dashboard {cluster.dashboard or 'off'})")
        yield ArxivMonthIngest(
            index, ingestion.limits, ingestion.workers, metadata_file, ingestion.batch_statements, cluster
        )


def download_arxiv_months(
    settings: Settings, months: Sequence[str], source: str | Path, progress: Callable[[str], None] | None = None
) -> Iterator[DownloadReport]:
    """Fetch each month's listing and e-prints into ``source``, one request per ``arxiv.request_interval_s``
    across all of them, skipping files already there (``ingest arxiv --download``); yields each month's report.
    Nothing runs until iterated. A function, not a method of ``MathRAG``: it reads no index."""
    arxiv = settings.arxiv
    downloader = ArxivDownloader(
        arxiv.oai_url,
        arxiv.eprint_url,
        arxiv.set_spec,
        arxiv.request_interval_s,
        arxiv.timeout_s,
        arxiv.retries,
        arxiv.user_agent,
    )
    try:
        for month in months:
            yield downloader.download_month(month, Path(source).expanduser(), progress)
    finally:
        downloader.close()
