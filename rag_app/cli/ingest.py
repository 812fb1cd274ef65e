"""`rag-app ingest`: LaTeX files, directories and archives; arXiv months; Stack Exchange dumps."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Annotated, Optional

import typer

from ingestion import ingest_sources
from ingestion.arxiv_month_sources import month_prefix
from ingestion.mse_records import MseFilters
from ingestion.problems import Severity
from rag_app.cli.common import (
    EXIT_REFUSED,
    ConfigOption,
    IndexOption,
    JsonOption,
    _err,
    _overridden,
    _settings,
    app,
    input_files,
)
from rag_app.indexing.arxiv_month import download_arxiv_months
from rag_app.indexing.dask_ingest import ClusterError

# Exit codes (README, "Exit codes"): scripts tell these apart.
from rag_app.indexing.low_priority import lower_priority
from rag_app.pipeline import MathRAG, demo_corpus_path, latex_ingestor
from rag_app.settings import Settings
from retriever.types import record_to_dict


@app.command()
def ingest(
    paths: Annotated[
        Optional[list[Path]],
        typer.Argument(help="LaTeX files, directories or archives; `arxiv` with --month; `mse` and a Posts.xml"),
    ] = None,
    index: IndexOption = None,
    demo: Annotated[bool, typer.Option("--demo", help="also ingest the demo corpus shipped with the app")] = False,
    as_json: JsonOption = False,
    parse_only: Annotated[
        bool, typer.Option("--parse-only", help="print the statements that would be ingested; store nothing")
    ] = False,
    month: Annotated[
        Optional[list[str]], typer.Option("--month", help="with `arxiv`: the month, YYYY-MM (repeat for several)")
    ] = None,
    source: Annotated[
        Optional[Path], typer.Option("--source", help="with `arxiv`: directory of bulk tars or per-paper e-prints")
    ] = None,
    metadata: Annotated[
        Optional[Path],
        typer.Option("--metadata", help="with `arxiv`: arXiv metadata snapshot (JSON lines)", callback=input_files),
    ] = None,
    download: Annotated[
        bool, typer.Option("--download", help="with `arxiv`: fetch the month's listing and e-prints into --source")
    ] = False,
    workers: Annotated[
        Optional[int], typer.Option("--workers", min=1, help="parser processes (with --dask: local Dask workers)")
    ] = None,
    dask: Annotated[
        bool, typer.Option("--dask", help="with `arxiv`: parse and embed on a Dask cluster (a local one by default)")
    ] = False,
    dask_scheduler: Annotated[
        Optional[str],
        typer.Option("--dask-scheduler", help="with `arxiv --dask`: a running scheduler, tcp://HOST:PORT"),
    ] = None,
    min_score: Annotated[
        Optional[int], typer.Option("--min-score", help="with `mse`: keep posts scoring at least N")
    ] = None,
    until: Annotated[
        Optional[str], typer.Option("--until", help="with `mse`: keep posts created up to this date (YYYY-MM-DD)")
    ] = None,
    tags: Annotated[
        Optional[list[str]],
        typer.Option("--tags", help="with `mse`: keep threads with one of these tags (repeat or comma-separate)"),
    ] = None,
    config: ConfigOption = None,
) -> None:
    """Extract theorem-like statements and index them (idempotent: unchanged input adds nothing).

    `ingest arxiv --month 2023-01 --source DIR [--metadata FILE] [--download]` ingests one month of
    arXiv e-prints (bulk `arXiv_src_2301_*.tar` files or per-paper files), resumably; repeat --month
    for several. `--dask` parses and embeds on a Dask cluster (`--dask-scheduler`, or a local one).
    `ingest mse Posts.xml [--min-score N] [--until DATE] [--tags T]` ingests a Math StackExchange dump.
    """
    settings = _settings(config, index)
    if workers is not None or dask or dask_scheduler:
        settings = _overridden(settings, {
            "ingestion.dask.enabled": settings.ingestion.dask.enabled or dask or bool(dask_scheduler),
            "ingestion.dask.workers": workers, "ingestion.dask.scheduler": dask_scheduler or None,
            "ingestion.workers": workers,
        })  # fmt: skip
    lower_priority(settings.ingestion.nice)
    if paths and str(paths[0]) == "arxiv" and not paths[0].exists():
        _ingest_arxiv_month(settings, paths[1:], month, source, metadata, download, as_json)
        return
    if paths and str(paths[0]) == "mse" and not paths[0].exists():
        _ingest_mse(settings, paths[1:], min_score, until, tags, as_json)
        return
    if month or source or metadata or download or dask or dask_scheduler:
        raise typer.BadParameter("--month, --source, --metadata, --download and --dask go with `ingest arxiv`")
    if min_score is not None or until or tags:
        raise typer.BadParameter("--min-score, --until and --tags go with `ingest mse`")
    sources = [*(paths or []), *([demo_corpus_path()] if demo else [])]
    if not sources:
        raise typer.BadParameter("give at least one PATH, or --demo")
    # A directory holding no file at all (say, an empty one named like a file) yields nothing: said, and
    # refused (exit 1), rather than an ingest of nothing that exits 0 in silence.
    empty = [path for path in sources if path.is_dir() and not any(p.is_file() for p in path.rglob("*"))]
    for path in empty:
        _err(f"{path}: an empty directory: nothing to ingest")
    sources = [path for path in sources if path not in empty]
    if not sources:
        raise typer.Exit(EXIT_REFUSED)
    if parse_only:
        _parse_only(settings, sources, as_json)
        if empty:
            raise typer.Exit(EXIT_REFUSED)
        return
    rag = MathRAG(settings)
    report = rag.ingest(sources, show_progress=not as_json)
    if as_json:
        typer.echo(json.dumps(report.to_dict(), ensure_ascii=False))
    else:
        for problem in report.problems:
            _err(str(problem))
        typer.echo(f"{report.summary()}; index: {rag.settings.resolved_index_dir} ({rag.index.count()} statements)")
    if report.errors or empty:
        raise typer.Exit(EXIT_REFUSED)


def _parse_only(settings: Settings, sources: list[Path], as_json: bool) -> None:
    """Statement records as JSON lines (the fields of `search --json`), problems on stderr; each paper
    parsed under the same per-paper time limit as `ingest`."""
    count = refused = empty = 0
    for paper in ingest_sources(sources, latex_ingestor(settings.ingestion)):
        for problem in paper.problems:
            _err(str(problem))
        refused += any(problem.severity is Severity.ERROR for problem in paper.problems)
        empty += any(problem.severity is Severity.NOTE for problem in paper.problems)
        for record in paper.records:
            count += 1
            if as_json:
                typer.echo(json.dumps(record_to_dict(record), ensure_ascii=False))
            else:
                typer.echo(f"{record.paper_id}  {record.display_name}  {record.label}")
                typer.echo(f"    {' '.join(record.text.split())[:240]}")
    if not as_json:
        typer.echo(
            f"{count} statements (nothing stored)"
            + (f"; {refused} inputs refused" if refused else "")
            + (f"; {empty} with no statements" if empty else "")
        )
    if refused:
        raise typer.Exit(EXIT_REFUSED)


def _ingest_mse(
    settings: Settings,
    dumps: list[Path],
    min_score: int | None,
    until: str | None,
    tags: list[str] | None,
    as_json: bool,
) -> None:
    if not dumps:
        raise typer.BadParameter("`ingest mse` needs the path of a Posts.xml (plain, .gz or .7z)")
    if until is not None and not re.fullmatch(r"\d{4}-\d{2}-\d{2}", until):
        raise typer.BadParameter(f"--until must be YYYY-MM-DD, got {until!r}")
    input_files(dumps)  # missing, a directory, unreadable: exit 2 with the path and why
    wanted = frozenset(tag.strip() for value in tags or [] for tag in value.split(",") if tag.strip())
    filters = MseFilters(min_score=min_score, until=until, tags=wanted)
    rag = MathRAG(settings)
    refused = False
    for dump in dumps:
        report = rag.ingest_mse(dump, filters, show_progress=not as_json)
        refused = refused or bool(report.problems) or not report.complete
        if as_json:
            typer.echo(json.dumps(report.to_dict(), ensure_ascii=False))
            continue
        for problem in report.problems:
            _err(str(problem))
        typer.echo(f"{report.summary()}; index: {rag.settings.resolved_index_dir} ({rag.index.count()} statements)")
    if refused:
        raise typer.Exit(EXIT_REFUSED)


def _ingest_arxiv_month(
    settings: Settings,
    extra: list[Path],
    months: list[str] | None,
    source: Path | None,
    metadata: Path | None,
    download: bool,
    as_json: bool,
) -> None:
    if extra:
        raise typer.BadParameter(f"`ingest arxiv` takes no paths (got {', '.join(map(str, extra))}); use --source")
    if not months or source is None:
        raise typer.BadParameter("`ingest arxiv` needs --month YYYY-MM and --source DIR")
    for month in months:
        try:
            month_prefix(month)
        except ValueError as error:
            raise typer.BadParameter(str(error)) from error
    rag = MathRAG(settings)
    if download:
        for month, fetched in zip(months, download_arxiv_months(settings, months, source), strict=True):
            _err(
                f"{month}: downloaded {fetched.downloaded} e-prints ({fetched.already_present} already present, "
                f"{len(fetched.failed)} failed) of {fetched.listed} listed in {fetched.seconds:.1f} s"
            )
            for arxiv_id, reason in fetched.failed:
                _err(f"error: {arxiv_id}: download failed: {reason}")
        metadata = metadata or source / "metadata.jsonl"
    if not source.is_dir():
        raise typer.BadParameter(f"--source {source}: not a directory")
    if metadata is not None and not metadata.is_file():
        raise typer.BadParameter(f"--metadata {metadata}: no such file")
    refused = False
    try:
        for report in rag.ingest_arxiv_months(months, source, metadata, show_progress=not as_json, on_cluster=_err):
            refused = refused or bool(report.failed)
            if as_json:  # one JSON object per month, one per line
                typer.echo(json.dumps(report.to_dict(), ensure_ascii=False))
                continue
            for problem in report.problems:
                _err(str(problem))
            for paper, reason in report.failed:
                _err(f"failed: {paper}: {reason}")
            typer.echo(f"{report.summary()}; index: {rag.settings.resolved_index_dir} ({rag.index.count()} statements)")
    except ClusterError as error:
        _err(f"error: {error}")
        raise typer.Exit(EXIT_REFUSED) from error
    if refused:
        raise typer.Exit(EXIT_REFUSED)
