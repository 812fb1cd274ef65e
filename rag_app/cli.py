"""The ``rag-app`` command line: ingest, search, ask, eval, ui, llm serve.

Command names, flags and JSON fields here are contracts that scripts rely on: add, don't rename.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from importlib import resources
from pathlib import Path
from typing import Annotated, Optional

import click
import typer
from typer.core import TyperGroup

from ingestion import ingest_sources
from ingestion.arxiv_month_sources import month_prefix
from ingestion.mse_records import MseFilters
from ingestion.problems import Severity
from rag_app.answer import AnswerStatus
from rag_app.dask_ingest import ClusterError
from rag_app.evaluation import EvalRequest, Protocol, QuerySetError, TrecFormatError, run_evaluation
from rag_app.evaluation.dev_sets import write_dev_sets
from rag_app.evaluation.retrievers import DEFAULT_RETRIEVERS, UnknownRetrieverError
from rag_app.llm_server import STATE_FILE, LLMServerError, running_server_url, server_from_settings
from rag_app.packaged_models import PACKAGED_GGUFS, PackagedModelError
from rag_app.pipeline import MathRAG, demo_corpus_path, latex_ingestor
from rag_app.settings import Settings, SettingsOverrideError
from retriever import IndexMismatchError, PaperHit, SearchFilter, SearchHit, SearchMode
from retriever.bm25_segment import BM25SegmentError
from retriever.cross_encoder_reranker import RerankerModelError
from retriever.embedding_registry import EmbedderSpecError
from retriever.formulas.marf_encoder import FormulaModelError
from retriever.formulas.marf_index import MarfIndexError
from retriever.hnsw_files import VectorIndexDamagedError
from retriever.index_health import IndexHealth, StoreState
from retriever.index_lock import exclusive
from retriever.learned_ranker import LearnedRankerError
from retriever.query_adapter import QueryAdapterError
from retriever.statement_index import MANIFEST, PAPERS, IndexDamagedError
from retriever.types import record_to_dict

# Exit codes (README, "Exit codes"): scripts tell these apart.
EXIT_REFUSED = 1  # some input was refused (each with its file, line or record and reason); the rest is in
EXIT_USAGE = 2  # a bad option, a missing file, an index that is not there, a model that does not fit
EXIT_DAMAGED = 3  # a file of the index cannot be read: named, with what to run; nothing was written


class _Commands(TyperGroup):
    """Every command's known failures become one sentence on stderr and an exit code, not a traceback
    (here rather than in ``main`` so that the tests' CliRunner sees the same codes)."""

    def invoke(self, ctx: click.Context) -> object:
        try:
            return super().invoke(ctx)
        except (IndexMismatchError, PackagedModelError, EmbedderSpecError, MarfIndexError, FormulaModelError,
                QueryAdapterError, LearnedRankerError) as error:  # fmt: skip
            _err(f"error: {error}")
            raise typer.Exit(EXIT_USAGE) from None
        except (IndexDamagedError, BM25SegmentError, VectorIndexDamagedError) as error:
            _err(f"error: {error}")
            raise typer.Exit(EXIT_DAMAGED) from None


app = typer.Typer(
    cls=_Commands,
    help="Ask questions of mathematics: LaTeX papers in, cited answers out.",
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,
)
llm_app = typer.Typer(help="The LLM server that writes answers.", no_args_is_help=True)
app.add_typer(llm_app, name="llm")
train_app = typer.Typer(
    help="Fine-tune the math embedding, train the reranker, generate training questions.", no_args_is_help=True
)
app.add_typer(train_app, name="train")

ConfigOption = Annotated[Optional[Path], typer.Option("--config", help="settings TOML file", envvar="RAG_APP_CONFIG")]
IndexOption = Annotated[Optional[Path], typer.Option("--index", help="index directory (default from settings)")]
KOption = Annotated[Optional[int], typer.Option("--k", "-k", min=1, help="number of statements")]
JsonOption = Annotated[bool, typer.Option("--json", help="machine-readable output")]
RerankOption = Annotated[
    Optional[bool],
    typer.Option("--rerank/--no-rerank", help="rescore the fused top N with the cross-encoder (default: settings)"),
]


def _settings(config: Path | None, index: Path | None = None) -> Settings:
    try:
        settings = Settings.load(config)
    except FileNotFoundError as error:
        raise typer.BadParameter(str(error)) from error
    if index is not None:
        if index.expanduser().is_file():
            _err(f"error: --index {index} is a file; give a directory (a new one is created by `ingest`)")
            raise typer.Exit(EXIT_USAGE)
        settings = _overridden(settings, {"index_dir": index.expanduser()})
    return settings


def _overridden(settings: Settings, changes: dict[str, object]) -> Settings:
    """Options applied to the settings and validated as the TOML file's values are (None: not given)."""
    try:
        return settings.with_overrides(changes)
    except SettingsOverrideError as error:
        _err(f"error: {error}")
        raise typer.Exit(EXIT_USAGE) from error


def _searched_settings(config: Path | None, index: Path | None) -> Settings:
    """Settings for a command that reads an index: a ``--index`` that holds none is a usage error, not a
    new empty index (a mistyped path would otherwise answer "no statements found")."""
    settings = _settings(config, index)
    if index is not None and not (settings.resolved_index_dir / MANIFEST).is_file():
        where = settings.resolved_index_dir  # not a file: `_settings` refused that
        what = "holds no index" if where.is_dir() else "does not exist"
        _err(f"error: --index {where} {what}; `rag-app ingest --index {where} PATHS` builds one there")
        raise typer.Exit(EXIT_USAGE)
    return settings


def _err(message: str) -> None:
    typer.echo(message, err=True)


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
        Optional[Path], typer.Option("--metadata", help="with `arxiv`: arXiv metadata snapshot (JSON lines)")
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
    _lower_priority(settings.ingestion.nice)
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
    if parse_only:
        _parse_only(settings, sources, as_json)
        return
    rag = MathRAG(settings)
    report = rag.ingest(sources, show_progress=not as_json)
    if as_json:
        typer.echo(json.dumps(report.to_dict(), ensure_ascii=False))
    else:
        for problem in report.problems:
            _err(str(problem))
        typer.echo(f"{report.summary()}; index: {rag.settings.resolved_index_dir} ({rag.index.count()} statements)")
    if report.errors:
        raise typer.Exit(EXIT_REFUSED)


def _lower_priority(nice: int) -> None:
    """An ingest gives way to the chat's LLM server on the same CPUs: llama.cpp's threads wait for each
    other at every layer, so one descheduled thread stalls the rest (the quoting answer took 13 s idle
    and 41 s beside an ingest on 2 CPUs). A process's nice value alone did not help (41 s): Linux
    shares the CPUs between sessions first ("autogroups"), and the LLM server runs in a session of its
    own. So the ingest continues in a child in a new session whose group is niced; the parent waits,
    passes on the signals a terminal sends, and exits with the child's status. Parser processes
    inherit the priority. Without autogroups (or off Linux) the process's own nice value is lowered."""
    if nice <= 0 or not hasattr(os, "nice"):
        return
    autogroup = Path("/proc/self/autogroup")
    if not autogroup.exists():
        os.nice(nice)
        return
    child = os.fork()
    if child == 0:
        _die_with_parent()  # a kill -9 of the command a user started stops the ingest too
        os.setsid()
        with contextlib.suppress(OSError):
            autogroup.write_text(str(nice))
        os.nice(nice)
        return
    for number in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(number, lambda received, _frame: os.kill(child, received))
    while True:
        try:
            _, status = os.waitpid(child, 0)
            break
        except InterruptedError:
            continue
    sys.stdout.flush()
    os._exit(os.waitstatus_to_exitcode(status))


def _die_with_parent() -> None:
    """Linux's PR_SET_PDEATHSIG: this process gets SIGKILL when its parent dies (the parent cannot pass
    on a SIGKILL)."""
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # 1: PR_SET_PDEATHSIG


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
    for dump in dumps:
        if not dump.is_file():
            raise typer.BadParameter(f"{dump}: no such file")
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
        for month, fetched in zip(months, rag.download_arxiv_months(months, source), strict=True):
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


def _print_hits(hits: list[SearchHit]) -> None:
    if not hits:
        typer.echo("no statements found")
    for hit in hits:
        record = hit.record
        where = f"{record.paper_id}:{record.label}" if record.label else record.paper_id
        typer.echo(f"{hit.rank:>2}. {hit.score:.4f}  {record.display_name}  [{where}]")
        text = " ".join(record.text.split())
        typer.echo(f"    {text[:240]}{' …' if len(text) > 240 else ''}")


def _print_papers(papers: list[PaperHit]) -> None:
    if not papers:
        typer.echo("no papers found")
    for paper in papers:
        byline = f" — {paper.authors}" if paper.authors else ""
        title = paper.title or (paper.hits[0].record.source_title if paper.hits else paper.paper_id)
        typer.echo(f"{paper.rank:>2}. {paper.score:.4f}  {title}{byline}  [{paper.paper_id}]")
        if paper.url:
            typer.echo(f"    {paper.url}")
        for hit in paper.hits:
            text = " ".join(hit.record.text.split())
            typer.echo(f"    - {hit.record.display_name}: {text[:160]}{' …' if len(text) > 160 else ''}")


@app.command()
def search(
    query: Annotated[Optional[str], typer.Argument(help="the question or formula")] = None,
    k: KOption = None,
    mode: Annotated[Optional[SearchMode], typer.Option("--mode", help="retriever")] = None,
    formula: Annotated[
        bool, typer.Option("--formula", help="the query is a formula: find statements with equal or similar ones")
    ] = False,
    queries: Annotated[
        Optional[Path], typer.Option("--queries", help="file with one query per line ('-': stdin)")
    ] = None,
    rerank: RerankOption = None,
    papers: Annotated[
        bool, typer.Option("--papers", help="rank papers (MSE: threads) by their statements, each with its best ones")
    ] = False,
    sources: Annotated[
        Optional[list[str]], typer.Option("--source", help="only these sources: arxiv, mse, local (repeatable)")
    ] = None,
    kinds: Annotated[
        Optional[list[str]], typer.Option("--kind", help="only these kinds: theorem, lemma, ... (repeatable)")
    ] = None,
    index: IndexOption = None,
    as_json: JsonOption = False,
    config: ConfigOption = None,
) -> None:
    """Search the index. With --queries, run many queries in one process (JSON lines out).

    --rerank rescores the fused top N with the cross-encoder (default: the setting rerank.search).

    --papers answers "which paper proves this?": papers ranked by their best statement, each with
    `hits` (its best statements, in the shape of `search --json`). Works with --formula too.

    With --formula the query is one formula (`\\int \\frac{dx}{(x^2+1)^n}`, delimiters optional): statements
    holding it, an equivalent rewrite or a similar formula come first.
    """
    if (query is None) == (queries is None):
        raise typer.BadParameter("give either QUERY or --queries FILE")
    if formula and mode is not None:
        raise typer.BadParameter("--formula searches formulas only; leave out --mode")
    rag = MathRAG(_searched_settings(config, index))
    where = SearchFilter(sources=frozenset(sources or ()), kinds=frozenset(kinds or ()))

    def run(text: str) -> list[SearchHit] | list[PaperHit]:
        try:
            if papers:
                return rag.search_papers(text, k, where, mode, formula=formula, rerank=rerank)
            if formula:
                return rag.search_formula(text, k, where)
            return rag.search(text, k, mode, where, rerank=rerank)
        except RerankerModelError as error:
            _err(f"error: {error}")
            raise typer.Exit(2) from error

    def show(results: list[SearchHit] | list[PaperHit]) -> None:
        if papers:
            _print_papers([r for r in results if isinstance(r, PaperHit)])
        else:
            _print_hits([r for r in results if isinstance(r, SearchHit)])

    if queries is None:
        results = run(query or "")
        if as_json:
            typer.echo(json.dumps([result.to_dict() for result in results], ensure_ascii=False))
        else:
            show(results)
        return
    lines = sys.stdin.read().splitlines() if str(queries) == "-" else queries.read_text(encoding="utf-8").splitlines()
    for line in lines:
        if not line.strip():
            continue
        results = run(line.strip())
        if as_json:
            typer.echo(
                json.dumps({"query": line.strip(), "results": [r.to_dict() for r in results]}, ensure_ascii=False)
            )
        else:
            typer.echo(f"# {line.strip()}")
            show(results)


@app.command()
def ask(
    question: Annotated[str, typer.Argument(help="a question, LaTeX welcome")],
    k: KOption = None,
    rerank: RerankOption = None,
    index: IndexOption = None,
    as_json: JsonOption = False,
    config: ConfigOption = None,
) -> None:
    """Answer from the indexed statements, citing them by number (sources reranked: the setting rerank.ask)."""
    with MathRAG(_searched_settings(config, index)) as rag:
        try:
            stream = rag.ask_stream(question, k, rerank=rerank)
        except RerankerModelError as error:
            _err(f"error: {error}")
            raise typer.Exit(2) from error
        if as_json:
            typer.echo(json.dumps(stream.result().to_dict(), ensure_ascii=False))
            return
        for chunk in stream:
            typer.echo(chunk, nl=False)
        answer = stream.result()
        if answer.llm_error:
            typer.echo(answer.text)
        else:
            typer.echo("")
        if answer.text != answer.raw_text.strip() and answer.answered_by_llm and answer.style != "quote":
            typer.echo(f"\nChecked answer:\n{answer.text}")
        if answer.invalid_citations:
            _err(f"removed citations to sources that were not given: {answer.invalid_citations}")
        for sentence in answer.sentences:
            if sentence.claim and not sentence.supported:
                why = f" ({'; '.join(sentence.problems[:3])})" if sentence.problems else ""
                _err(f"not stated by the sources it cites{why}: {sentence.text}")
        if answer.repeated_sentences or answer.truncated:
            cut = "; its last sentence was cut off and removed" if answer.truncated else ""
            _err(f"repaired: {answer.repeated_sentences} repeated sentences dropped{cut}")
        if answer.status is AnswerStatus.UNSUPPORTED:
            _err("no sentence of this answer is supported by the sources: read it with care")
        typer.echo("\nSources:")
        for number, hit in enumerate(answer.sources, start=1):
            record = hit.record
            cited = "*" if number in answer.cited else " "
            link = f"  {record.url}" if record.url else ""
            typer.echo(f"{cited}[{number}] {record.display_name} — {record.source_title}{link}")


@app.command()
def status(index: IndexOption = None, as_json: JsonOption = False, config: ConfigOption = None) -> None:
    """What is indexed, whether every store derived from Chroma is in step with it, and where answers come from."""
    rag = MathRAG(_searched_settings(config, index))
    stores = IndexHealth(rag.index).check()
    if as_json:
        summary = {"index": str(rag.settings.resolved_index_dir), "stores": [state.to_dict() for state in stores],
                   "in_step": all(state.in_step for state in stores)}  # fmt: skip
        typer.echo(json.dumps(summary, ensure_ascii=False))
    else:
        _print_status(rag, stores)
    if any(state.problem for state in stores):
        raise typer.Exit(EXIT_DAMAGED)  # a file is damaged (named above)
    if not all(state.in_step for state in stores):
        raise typer.Exit(EXIT_REFUSED)  # a store is behind: `repair` catches it up


def _print_status(rag: MathRAG, stores: list[StoreState]) -> None:
    manifest = rag.index.manifest()
    typer.echo(f"index:      {rag.settings.resolved_index_dir}")
    typer.echo(f"statements: {stores[0].statements if stores[0].statements is not None else 'unreadable'}")
    for state in stores:
        typer.echo(f"  {'ok    ' if state.in_step else 'BEHIND'} {state.describe()}")
    if not all(state.in_step for state in stores):
        typer.echo("  run `rag-app repair` to rebuild what is behind from Chroma (no re-embedding)")
    typer.echo(f"embedder:   {manifest.get('embedder', rag.settings.embedding.model)}")
    typer.echo(f"updated:    {manifest.get('updated', 'never')}")
    if (rag.index.directory / PAPERS).exists():
        papers = rag.index.papers()
        counts = ", ".join(f"{papers.count(state)} {state}" for state in ("ok", "skipped", "failed"))
        papers.close()
        typer.echo(f"papers:     {counts} (from `ingest arxiv`)")
    typer.echo(f"llm:        {rag.llm_status()}")


@app.command()
def repair(index: IndexOption = None, as_json: JsonOption = False, config: ConfigOption = None) -> None:
    """Rebuild every store derived from Chroma that is behind or damaged (BM25, the formula index, the duplicate
    groups, the second model's vectors, the manifest), from Chroma, without re-embedding the statements; damaged
    vector index files (Chroma keeps no other copy of the vectors) are moved aside and the statements embedded
    again from their stored text. A second repair waits for the first."""
    settings = _searched_settings(config, index)

    def wait() -> None:
        _err("another `rag-app repair` is working on this index; waiting for it to finish ...")

    with exclusive(settings.resolved_index_dir, on_wait=wait):
        before = IndexHealth(MathRAG(settings).index).repair(show_progress=not as_json)
        after = IndexHealth(MathRAG(settings).index).check()  # opened again: a re-embedding changes its collection
    if as_json:
        typer.echo(json.dumps({"before": [s.to_dict() for s in before], "after": [s.to_dict() for s in after]}))
    else:
        found = {state.name: state for state in before}
        for new in after:
            old = found.get(new.name, before[0])  # a store not reached before (Chroma unreadable) was not in step
            change = "repaired" if not old.in_step and new.in_step else "ok" if new.in_step else "STILL BEHIND"
            typer.echo(f"{change:>12}  {new.describe()}")
    if not all(state.in_step for state in after):
        raise typer.Exit(EXIT_DAMAGED)


def _reembed_if_the_default_changed(settings: Settings) -> None:
    """The quick start keeps working when a new release ships another default embedder."""
    from rag_app.embedder_factory import make_embedder
    from retriever.reindex import reindex as reindex_statements

    try:
        MathRAG(settings).index  # noqa: B018 (opening checks the embedder)
    except IndexMismatchError:
        embedder = make_embedder(settings)
        typer.echo(f"The index was built with another embedder: re-embedding it with {embedder.identity} ...")
        reindex_statements(
            settings.resolved_index_dir, embedder, show_progress=True, connection=settings.store.connection()
        )


def _catch_up_second_embedding(rag: MathRAG) -> None:
    """The quick start's index gets the second model's vectors it lacks (built before the model was on)."""
    second = rag.companion_index()
    statements = int(rag.index.manifest().get("statements", 0) or 0)
    if second is None or statements == 0:
        return
    if second.built_by_configured_model() and second.statements() >= statements:
        return
    typer.echo(f"Embedding the index with the second model ({second.embedder.identity}) ...")
    rag.build_companion(show_progress=True)


@app.command()
def ui(
    port: Annotated[int, typer.Option(help="port for the chat")] = 8501,
    host: Annotated[str, typer.Option(help="address to listen on")] = "127.0.0.1",
    demo: Annotated[bool, typer.Option("--demo", help="ingest the demo corpus first if the index is empty")] = False,
    index: IndexOption = None,
    config: ConfigOption = None,
) -> None:
    """Start the Streamlit chat on localhost (and the local LLM server, when none is configured)."""
    settings = _settings(config, index)
    rag = MathRAG(settings)
    if demo:
        _reembed_if_the_default_changed(settings)
    if demo and rag.index.count() == 0:
        typer.echo("The index is empty: ingesting the demo corpus ...")
        typer.echo(rag.ingest_demo(show_progress=True).summary())
    if demo:
        _catch_up_second_embedding(rag)
    env = dict(os.environ)
    env["RAG_APP_INDEX_DIR"] = str(settings.resolved_index_dir)
    if config is not None:
        env["RAG_APP_CONFIG"] = str(config)
    server = None
    if not settings.llm.base_url and not running_server_url(settings.data_dir):
        typer.echo(f"Starting the local LLM server ({settings.llm.local_model}) ...")
        try:
            server = server_from_settings(settings)
            server.start()
            server.write_state(settings.data_dir)  # `ask` and `status` reuse it meanwhile
            env["RAG_APP_LLM__BASE_URL"] = server.base_url
        except (PackagedModelError, LLMServerError) as error:
            _err(f"LLM unavailable, the chat will show retrieved statements only: {error}")
    app_file = Path(str(resources.files("ui") / "chat_app.py"))
    command = [
        sys.executable, "-m", "streamlit", "run", str(app_file),
        "--server.port", str(port), "--server.address", host, "--server.headless", "true",
        "--browser.gatherUsageStats", "false",
        # An unexpected error shows its type and message; the traceback goes to this console only.
        "--client.showErrorDetails", "type",
    ]  # fmt: skip
    typer.echo(f"Chat running at http://{host}:{port}  (Ctrl-C to stop)")
    _stop_on_signals()
    chat = subprocess.Popen(command, env=env)
    try:
        chat.wait()
    except KeyboardInterrupt:
        pass
    finally:
        # Neither the chat nor the LLM server may outlive this command (they run in other processes).
        if chat.poll() is None:
            chat.terminate()
            try:
                chat.wait(timeout=20)
            except subprocess.TimeoutExpired:
                chat.kill()
        if server is not None:
            server.stop()
            (settings.data_dir / STATE_FILE).unlink(missing_ok=True)


def _stop_on_signals() -> None:
    """Ctrl-C and SIGTERM both end a long-running command through its cleanup (``finally``).

    Explicit handlers: a process started in the background inherits an ignored SIGINT, and service
    managers (and scripts) stop with SIGTERM, whose default kills Python without any cleanup.
    """

    def stop(signum: int, _frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)


@app.command("eval")
def eval_command(
    sets: Annotated[Optional[list[Path]], typer.Argument(help="query set files (eval/sets/*.jsonl)")] = None,
    dev: Annotated[
        bool, typer.Option("--dev", help="build the development sets from ../shared and evaluate them all")
    ] = False,
    retriever: Annotated[
        Optional[list[str]],
        typer.Option("--retriever", "-r", help="retriever by name (bm25, dense, hybrid, ...) or run:PATH; repeatable"),
    ] = None,
    qrels: Annotated[Optional[Path], typer.Option("--qrels", help="TREC qrels file (ARQMath judgments)")] = None,
    topics: Annotated[Optional[Path], typer.Option("--topics", help="ARQMath topic XML giving the query texts")] = None,
    run: Annotated[Optional[list[Path]], typer.Option("--run", help="TREC run file to score; repeatable")] = None,
    protocol: Annotated[
        Optional[Protocol], typer.Option("--protocol", help="measures for --qrels (default arqmath)")
    ] = None,
    seen_papers: Annotated[
        Optional[Path], typer.Option("--seen-papers", help="papers seen in training, one id per line")
    ] = None,
    split: Annotated[
        Optional[Path],
        typer.Option("--split", help="split.json of a fine-tuned embedding: trained / seen / unseen groups"),
    ] = None,
    embedder: Annotated[
        Optional[list[str]],
        typer.Option("--embedder", "-e", help="embedder spec to compare (one index each); repeatable"),
    ] = None,
    query_adapter: Annotated[
        Optional[list[str]],
        typer.Option("--query-adapter", help="query adapter to compare (`none`: the base vectors); repeatable"),
    ] = None,
    k: Annotated[Optional[int], typer.Option("--k", "-k", min=1, max=1000, help="results per query")] = None,
    limit: Annotated[Optional[int], typer.Option("--limit", min=1, help="only the first N queries of each set")] = None,
    out: Annotated[Optional[Path], typer.Option("--out", help="report directory (default from settings)")] = None,
    ingest_corpus: Annotated[
        Optional[bool],
        typer.Option(
            "--ingest-corpus/--no-ingest-corpus", help="ingest the sets' corpus first (default: only without --index)"
        ),
    ] = None,
    index: IndexOption = None,
    as_json: JsonOption = False,
    config: ConfigOption = None,
) -> None:
    """Score retrievers side by side on query sets; write JSON, markdown, a PNG chart and TREC runs."""
    settings = _settings(config)
    specs = list(retriever or ([] if run else DEFAULT_RETRIEVERS)) + [f"run:{path}" for path in run or []]
    if dev:
        try:
            sets = [*(sets or []), *write_dev_sets(settings.evaluation.shared_dir, settings.evaluation.sets_dir)]
        except FileNotFoundError as error:
            _err(f"error: {error}")
            raise typer.Exit(2) from error
    request = EvalRequest(
        sets=list(sets or []),
        retrievers=specs,
        qrels=qrels,
        topics=topics,
        protocol=protocol,
        seen_papers=seen_papers,
        split=split,
        embedders=list(embedder or []),
        query_adapters=list(query_adapter or []),
        k=k,
        limit=limit,
        ingest_corpus=ingest_corpus,
    )
    try:
        report = run_evaluation(request, settings, index.expanduser() if index else None, show_progress=not as_json)
    except (QuerySetError, TrecFormatError, UnknownRetrieverError, FileNotFoundError, ValueError) as error:
        _err(f"error: {error}")
        raise typer.Exit(2) from error
    paths = report.write(out or settings.evaluation.out_dir)
    if as_json:
        typer.echo(json.dumps(report.to_dict(), ensure_ascii=False))
    else:
        report.print()
        typer.echo(f"report: {paths['markdown']}  ({paths['json'].name}, {paths['png'].name}, runs/)")


@llm_app.command("serve")
def llm_serve(
    model: Annotated[
        Optional[str], typer.Option(help="packaged model name or .gguf path (llama.cpp); a model dir or id (vLLM)")
    ] = None,
    port: Annotated[Optional[int], typer.Option(help="port (default from settings; 0 picks one)")] = None,
    config: ConfigOption = None,
) -> None:
    """Run an OpenAI-compatible server until Ctrl-C (vLLM if llm.server asks and it is installed, else
    llama.cpp); ask and ui reuse it."""
    settings = _settings(config)
    notes: list[str] = []
    try:
        server = server_from_settings(settings, model, port, notes)
        for note in notes:
            _err(note)
        typer.echo(f"Starting the {server.kind} server ({server.model_alias}) ...")
        server.start()
    except (PackagedModelError, LLMServerError) as error:
        _err(str(error))
        raise typer.Exit(1) from error
    state = server.write_state(settings.data_dir)
    typer.echo(f"{server.kind} server ({server.model_alias}) at {server.base_url}  (Ctrl-C to stop)")

    _stop_on_signals()
    try:
        while server.running:
            time.sleep(1)
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
        state.unlink(missing_ok=True)


@llm_app.command("models")
def llm_models() -> None:
    """The chat models that ship as packages."""
    for spec in PACKAGED_GGUFS.values():
        parts = f", split in {len(spec.parts)} parts" if spec.parts else ""
        typer.echo(f"{spec.name}  ({spec.size / 1e6:,.0f} MB{parts})")


@train_app.command("embed")
def train_embed(
    index: IndexOption = None,
    name: Annotated[Optional[str], typer.Option("--name", help="registry name (a new version each run)")] = None,
    base: Annotated[Optional[str], typer.Option("--base", help="embedder spec to fine-tune")] = None,
    lora: Annotated[
        Optional[bool], typer.Option("--lora/--full", help="train a LoRA adapter or the whole model")
    ] = None,
    llm_questions: Annotated[
        Optional[bool], typer.Option("--llm-questions/--no-llm-questions", help="add LLM-generated questions")
    ] = None,
    hard_negatives: Annotated[Optional[bool], typer.Option("--hard-negatives/--no-hard-negatives")] = None,
    max_pairs: Annotated[Optional[int], typer.Option("--max-pairs", min=2, help="seeded sample of the pairs")] = None,
    max_steps: Annotated[Optional[int], typer.Option("--max-steps", min=1, help="stop after N steps")] = None,
    epochs: Annotated[Optional[int], typer.Option("--epochs", min=1)] = None,
    learning_rate: Annotated[Optional[float], typer.Option("--learning-rate", min=0)] = None,
    device: Annotated[Optional[str], typer.Option("--device", help="cpu, cuda, ... (default from settings)")] = None,
    resume: Annotated[bool, typer.Option("--resume/--restart", help="continue from the last checkpoint")] = True,
    as_json: JsonOption = False,
    config: ConfigOption = None,
) -> None:
    """Fine-tune the embedding on an ingested index and register the result as a new version.

    Then compare it with the base: `rag-app eval --dev --embedder BASE --embedder registry:NAME --split
    DATA_DIR/models/embeddings/NAME/vN/split.json`, and use it with `embedding.model = "registry:NAME"`
    (`rag-app reindex` re-embeds an existing index).
    """
    from rag_app.training.train_embedding import TrainEmbedJob

    settings = _searched_settings(config, index)
    overrides = {
        "name": name, "base_model": base, "lora": lora, "llm_questions": llm_questions,
        "hard_negatives": hard_negatives, "max_pairs": max_pairs, "max_steps": max_steps, "epochs": epochs,
        "learning_rate": learning_rate, "device": device,
    }  # fmt: skip
    settings = _overridden(settings, {f"training.embed.{key}": value for key, value in overrides.items()})
    job = TrainEmbedJob(settings, settings.resolved_index_dir)
    try:
        report = job.run(resume=resume, show_progress=not as_json, log=_err)
    except (FileNotFoundError, ValueError) as error:
        _err(f"error: {error}")
        raise typer.Exit(2) from error
    model = report.model
    summary = {
        "model": f"registry:{model.name}@v{model.version}",
        "directory": str(model.directory),
        "base_model": model.base_model,
        "kind": model.kind,
        "pairs": report.pairs,
        "split": report.split,
        "questions": report.questions,
        "examples": report.run.examples,
        "steps": report.run.steps,
        "seconds": report.run.seconds,
        "resumed_from": report.run.resumed_from,
        "final_loss": report.run.final_loss,
    }
    if as_json:
        typer.echo(json.dumps(summary, ensure_ascii=False))
        return
    typer.echo(f"trained {summary['model']} ({model.kind} on {model.base_model}) in {report.run.seconds:.0f} s")
    typer.echo(f"  pairs {report.pairs}, {report.run.examples} examples, {report.run.steps} steps")
    typer.echo(f"  split {report.split}")
    typer.echo(f"  {model.directory}")


@train_app.command("rerank")
def train_rerank(
    index: IndexOption = None,
    name: Annotated[
        Optional[str], typer.Option("--name", help="directory name under DATA_DIR/models/rerankers")
    ] = None,
    out: Annotated[Optional[Path], typer.Option("--out", help="write the reranker here instead")] = None,
    max_queries: Annotated[Optional[int], typer.Option("--max-queries", min=2, help="training queries")] = None,
    max_steps: Annotated[Optional[int], typer.Option("--max-steps", min=1, help="stop after N steps")] = None,
    epochs: Annotated[Optional[int], typer.Option("--epochs", min=1)] = None,
    device: Annotated[Optional[str], typer.Option("--device", help="cpu, cuda, ... (default from settings)")] = None,
    publish: Annotated[
        bool, typer.Option("--publish", help="also ship it in the package (rerank.model = packaged)")
    ] = False,
    resume: Annotated[bool, typer.Option("--resume/--restart", help="continue from the last checkpoint")] = True,
    mine_only: Annotated[
        bool,
        typer.Option("--mine-only", help="stop after mining the examples (train them elsewhere, then rerun to resume)"),
    ] = False,
    as_json: JsonOption = False,
    config: ConfigOption = None,
) -> None:
    """Train the cross-encoder reranker on an ingested index (hard negatives from our own retriever).

    Use it with `rerank.model = "DIR"` (the directory printed), or --publish to make it the packaged one;
    compare with `rag-app eval --dev -r hybrid-formula -r hybrid-formula+rerank`.
    """
    from rag_app.training.train_rerank import TrainRerankJob, publish_reranker

    settings = _searched_settings(config, index)
    overrides = {"name": name, "max_queries": max_queries, "max_steps": max_steps, "epochs": epochs, "device": device}
    settings = _overridden(settings, {f"training.rerank.{key}": value for key, value in overrides.items()})
    job = TrainRerankJob(settings, settings.resolved_index_dir, out.expanduser() if out else None)
    try:
        report = job.run(resume=resume, show_progress=not as_json, log=_err, mine_only=mine_only)
    except (FileNotFoundError, ValueError) as error:
        _err(f"error: {error}")
        raise typer.Exit(2) from error
    if report is None:  # --mine-only
        summary_dir = {"work_dir": str(job.work_dir), "mined_only": True}
        typer.echo(json.dumps(summary_dir) if as_json else f"mined examples in {job.work_dir}")
        return
    published = str(publish_reranker(report.directory)) if publish else None
    summary = {
        "directory": str(report.directory),
        "published": published,
        "queries": report.pairs,
        "split": report.split,
        "steps": report.run.steps,
        "seconds": report.run.seconds,
        "resumed_from": report.run.resumed_from,
        "reused_examples": report.reused_examples,
        "final_loss": report.run.final_loss,
    }
    if as_json:
        typer.echo(json.dumps(summary, ensure_ascii=False))
        return
    typer.echo(f"trained reranker in {report.run.seconds:.0f} s: {report.run.steps} steps, queries {report.pairs}")
    typer.echo(f"  {report.directory}" + (f" (published to {published})" if published else ""))


@train_app.command("ranker")
def train_ranker(
    index: IndexOption = None,
    out: Annotated[Optional[Path], typer.Option("--out", help="write the ranker here instead")] = None,
    max_queries: Annotated[
        Optional[int], typer.Option("--max-queries", min=1, help="training queries of each kind at most")
    ] = None,
    publish: Annotated[
        bool, typer.Option("--publish", help="also ship it in the package (ranker.model = packaged or auto)")
    ] = False,
    reuse: Annotated[
        bool, typer.Option("--reuse/--recompute", help="reuse the features of the same corpus and settings")
    ] = True,
    as_json: JsonOption = False,
    config: ConfigOption = None,
) -> None:
    """Train the learned ranker (LightGBM LambdaMART) over the first stage's top candidates (minutes on a CPU).

    Use it with `ranker.model = "DIR"` (the directory printed), or --publish to make it the packaged one;
    compare with `rag-app eval SETS -r hybrid-formula -r hybrid-formula+ltr`.
    """
    from rag_app.training.train_ranker import TrainRankerJob, publish_ranker
    from retriever.learned_ranker import LearnedRankerError

    settings = _searched_settings(config, index)
    settings = _overridden(settings, {"training.ranker.max_queries_per_kind": max_queries})
    job = TrainRankerJob(settings, settings.resolved_index_dir, out.expanduser() if out else None)
    try:
        report = job.run(show_progress=not as_json, log=_err, reuse=reuse)
        published = str(publish_ranker(report.directory)) if publish else None
    except (FileNotFoundError, ValueError, LearnedRankerError) as error:
        _err(f"error: {error}")
        raise typer.Exit(2) from error
    card = report.ranker.card
    summary = {
        "directory": str(report.directory),
        "published": published,
        "embedder": report.ranker.embedder,
        "queries": report.queries,
        "seconds": report.seconds,
        "reused_features": report.reused_features,
        "cost": card.get("cost", {}),
        "held_out": card.get("metrics", {}).get("held_out", {}),
    }
    if as_json:
        typer.echo(json.dumps(summary, ensure_ascii=False))
        return
    held_out = summary["held_out"]
    typer.echo(f"trained learned ranker in {report.seconds:.0f} s ({card['cost']['trees']} trees) on queries "
               f"{report.queries}")  # fmt: skip
    if held_out.get("queries"):
        before, after = held_out["first_stage"], held_out["ranker"]
        mrr = f"MRR@10 {before['mrr@10']:.3f} -> {after['mrr@10']:.3f}"
        hit = f"Hit@10 {before['hit@10']:.3f} -> {after['hit@10']:.3f}"
        typer.echo(f"  held-out ({held_out['queries']} queries): {mrr}, {hit}")
    typer.echo(f"  {report.directory}" + (f" (published to {published})" if published else ""))


@train_app.command("query-adapter")
def train_query_adapter(
    index: IndexOption = None,
    out: Annotated[Optional[Path], typer.Option("--out", help="write the adapter here instead")] = None,
    epochs: Annotated[Optional[int], typer.Option("--epochs", min=1)] = None,
    publish: Annotated[
        bool, typer.Option("--publish", help="also ship it in the package (retrieval.query_adapter = packaged)")
    ] = False,
    second_embedding: Annotated[
        bool,
        typer.Option(
            "--second-embedding",
            help="train for the second embedding model's vectors (second_embedding.model; built by build-dense2)",
        ),
    ] = False,
    as_json: JsonOption = False,
    config: ConfigOption = None,
) -> None:
    """Train a query adapter: the dense channel's query vectors tuned to the index's statements (a minute on a CPU).

    Use it with `retrieval.query_adapter = "DIR"` (the directory printed), or --publish to make it the packaged one.
    With --second-embedding it is trained for the second model (`second_embedding.query_adapter = "DIR"`).
    """
    from rag_app.embedder_factory import make_embedder
    from rag_app.training.train_query_adapter import TrainQueryAdapterJob, publish_query_adapter
    from retriever.companion_index import CompanionIndexError

    settings = _searched_settings(config, index)
    settings = _overridden(settings, {"training.query_adapter.epochs": epochs})
    job = TrainQueryAdapterJob(settings, settings.resolved_index_dir, out.expanduser() if out else None)
    try:
        if second_embedding:
            second = MathRAG(settings).companion_index()
            if second is None:
                raise ValueError(
                    "the second embedding model is off: set second_embedding.model (e.g. packaged:all-mpnet-base-v2) "
                    "and build its vectors with `rag-app build-dense2`"
                )
            report = job.run(second.embedder, show_progress=not as_json, log=_err, second=second)
        else:
            report = job.run(make_embedder(settings), show_progress=not as_json, log=_err)
    except (FileNotFoundError, ValueError, CompanionIndexError, QueryAdapterError) as error:
        _err(f"error: {error}")
        raise typer.Exit(2) from error
    published = str(publish_query_adapter(report.directory)) if publish else None
    card = report.adapter.card
    summary = {
        "directory": str(report.directory),
        "published": published,
        "embedder": report.adapter.embedder,
        "pairs": report.pairs,
        "seconds": report.seconds,
        "losses": card.get("losses", []),
        "held_out": card.get("metrics", {}).get("held_out", {}),
    }
    if as_json:
        typer.echo(json.dumps(summary, ensure_ascii=False))
        return
    typer.echo(f"trained query adapter in {report.seconds:.0f} s on pairs {report.pairs}")
    for kind, hit in summary["held_out"].get("hit@10", {}).items():
        typer.echo(f"  held-out {kind}: Hit@10 {hit['base']:.3f} -> {hit['adapted']:.3f} ({hit['queries']} queries)")
    typer.echo(f"  {report.directory}" + (f" (published to {published})" if published else ""))


@train_app.command("questions")
def train_questions(
    index: IndexOption = None,
    out: Annotated[
        Optional[Path], typer.Option("--out", help="questions file (default DATA_DIR/training/questions.jsonl)")
    ] = None,
    limit: Annotated[Optional[int], typer.Option("--limit", min=1, help="at most N new questions this run")] = None,
    license_note: Annotated[
        Optional[str], typer.Option("--license", help="the corpus's license, recorded in the file's header")
    ] = None,
    background: Annotated[bool, typer.Option("--background", help="run detached; progress goes to OUT.log")] = False,
    exclude_set: Annotated[
        Optional[list[Path]],
        typer.Option("--exclude-set", help="a query set whose judged statements get no question (repeatable)"),
    ] = None,
    as_json: JsonOption = False,
    config: ConfigOption = None,
) -> None:
    """Generate one LLM question per training statement into a versioned file that reruns extend.

    Uses the configured LLM (vLLM in production, the local llama.cpp server here). Statements the file
    already has are skipped, so a rerun, here or on another machine with a copy of the file, goes on.
    """
    from rag_app.training.train_questions import generate_questions

    settings = _searched_settings(config, index)
    path = (out.expanduser() if out else None) or _default_questions_path(settings)
    if background:
        log_path = path.with_suffix(".log")
        path.parent.mkdir(parents=True, exist_ok=True)
        argv = [a for a in sys.argv[1:] if a != "--background"]
        with log_path.open("a") as log_file:
            process = subprocess.Popen(
                [sys.executable, "-m", "rag_app.cli", *argv], stdout=log_file, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL, start_new_session=True,
            )  # fmt: skip
        typer.echo(f"generating in the background (pid {process.pid}); progress: {log_path}; file: {path}")
        return
    try:
        report = generate_questions(settings, settings.resolved_index_dir, path, limit, license_note,
                                    show_progress=not as_json, log=_err, exclude_sets=exclude_set or [])  # fmt: skip
    except (FileNotFoundError, ValueError, QuerySetError, LLMServerError, PackagedModelError) as error:
        _err(f"error: {error}")
        raise typer.Exit(2) from error
    summary = {"file": str(report.path), "existing": report.existing, "added": report.added,
               "failed": report.failed, "remaining": report.remaining, "seconds": round(report.seconds, 1)}  # fmt: skip
    typer.echo(json.dumps(summary) if as_json else
               f"{report.added} questions added ({report.existing} before, {report.failed} failed, "
               f"{report.remaining} statements to go) in {report.seconds:.0f} s: {report.path}")  # fmt: skip


def _default_questions_path(settings: Settings) -> Path:
    from rag_app.training.train_questions import default_questions_file

    return default_questions_file(settings)


@train_app.command("list")
def train_list(as_json: JsonOption = False, config: ConfigOption = None) -> None:
    """The registered embedding models (trained here, and shipped with the package)."""
    from retriever.embedding_registry import EmbeddingRegistry, packaged_registry

    settings = _settings(config)
    rows = []
    for registry in (packaged_registry(), EmbeddingRegistry(settings.resolved_registry_dir)):
        for model_name in registry.names():
            for model in registry.versions(model_name):
                rows.append(
                    {
                        "model": f"{registry.prefix}{model.name}@v{model.version}",
                        "kind": model.kind,
                        "base_model": model.base_model,
                        "created": model.card.get("created"),
                        "directory": str(model.directory),
                        "metrics": model.metrics,
                    }
                )
    if as_json:
        typer.echo(json.dumps(rows, ensure_ascii=False))
        return
    if not rows:
        typer.echo("no fine-tuned embeddings yet; train one with `rag-app train embed`")
    for row in rows:
        typer.echo(f"{row['model']}  {row['kind']} on {row['base_model']}  ({row['created']})  {row['directory']}")


@app.command()
def reindex(
    index: IndexOption = None,
    force: Annotated[bool, typer.Option("--force", help="re-embed even if the embedder is unchanged")] = False,
    as_json: JsonOption = False,
    config: ConfigOption = None,
) -> None:
    """Re-embed every statement of an index with the configured embedder (resumable; BM25 unchanged)."""
    from rag_app.embedder_factory import make_embedder
    from retriever.reindex import reindex as reindex_statements

    settings = _searched_settings(config, index)
    try:
        result = reindex_statements(
            settings.resolved_index_dir,
            make_embedder(settings),
            force=force,
            show_progress=not as_json,
            connection=settings.store.connection(),
        )
    except FileNotFoundError as error:
        _err(f"error: {error}")
        raise typer.Exit(2) from error
    data = {"previous": result.previous, "embedder": result.current, "embedded": result.embedded,
            "statements": result.statements}  # fmt: skip
    if as_json:
        typer.echo(json.dumps(data))
    elif result.previous == result.current and not force:
        typer.echo(f"already embedded with {result.current}; nothing to do (--force re-embeds)")
    else:
        typer.echo(
            f"re-embedded {result.embedded} of {result.statements} statements: {result.previous} -> {result.current}"
        )


@app.command("build-fusion")
def build_fusion(
    index: IndexOption = None,
    rebuild: Annotated[bool, typer.Option("--rebuild", help="drop the fusion vectors and embed everything")] = False,
    as_json: JsonOption = False,
    config: ConfigOption = None,
) -> None:
    """Build or update the formula-fusion vectors of an index (modes fusion, fusion-maxsim; formula search).

    Only statements without fusion vectors are embedded, so a rerun after a crash or an ingest resumes.
    The models are `formula.models` (`packaged`, or a directory from `rag-app train formula`).
    """
    with MathRAG(_searched_settings(config, index)) as rag:
        update = rag.build_fusion(rebuild=rebuild, show_progress=not as_json)
        data = {**update.to_dict(), "models": rag.index.marf_encoder().identity,
                "bytes": rag.index.marf_index().bytes_on_disk()}  # fmt: skip
    if as_json:
        typer.echo(json.dumps(data))
    else:
        typer.echo(f"fusion vectors: {update.describe()}")


@app.command("build-dense2")
def build_dense2(
    index: IndexOption = None,
    rebuild: Annotated[bool, typer.Option("--rebuild", help="drop the second model's vectors and embed all")] = False,
    as_json: JsonOption = False,
    config: ConfigOption = None,
) -> None:
    """Build or update the second embedding model's vectors of an index (the `dense2` channel of ask and chat).

    Ingestion keeps them in step once built; this catches up an index ingested before the model was
    configured (only statements without vectors are embedded: a rerun resumes). The model is
    `second_embedding.model` (off by default; `packaged:all-mpnet-base-v2` is the one that ships).
    """
    with MathRAG(_searched_settings(config, index)) as rag:
        try:
            update = rag.build_companion(rebuild=rebuild, show_progress=not as_json)
        except ValueError as error:
            _err(f"error: {error}")
            raise typer.Exit(2) from error
        second = rag.companion_index()
        model = second.embedder.identity if second is not None else ""
    data = {**update.to_dict(), "model": model}
    if as_json:
        typer.echo(json.dumps(data))
    else:
        typer.echo(f"second-model vectors ({model}): {update.describe()}")


@app.command("duplicates")
def duplicates(
    index: IndexOption = None,
    rebuild: Annotated[
        bool, typer.Option("--rebuild", help="recompute every group from the stored statements")
    ] = False,
    show: Annotated[int, typer.Option("--show", help="print this many groups")] = 0,
    as_json: JsonOption = False,
    config: ConfigOption = None,
) -> None:
    """Duplicate groups: one statement in several papers or posts (found at ingest; searches show it once).

    --rebuild recomputes them for an index ingested before groups existed, or after a change of
    `duplicates.threshold`.
    """
    with MathRAG(_searched_settings(config, index)) as rag:
        started = time.perf_counter()
        joined = rag.rebuild_duplicates(show_progress=not as_json) if rebuild else None
        groups = rag.duplicate_groups()
        found = list(groups.groups())
        data: dict[str, object] = {
            "statements": groups.count(),
            "groups": len(found),
            "statements_in_groups": sum(len(group) for group in found),
            "largest_group": max((len(group) for group in found), default=0),
        }
        if joined is not None:
            data["seconds"] = round(time.perf_counter() - started, 1)
        shown = [[record_to_dict(r) for r in rag.index.store.get(group)] for group in found[:show]]
    if as_json:
        typer.echo(json.dumps({**data, "shown": shown}, ensure_ascii=False))
        return
    typer.echo(
        f"{data['groups']} duplicate groups holding {data['statements_in_groups']} of {data['statements']} statements"
        f" (largest: {data['largest_group']})"
    )
    for group in shown:
        typer.echo("---")
        for record in group:
            text = " ".join(str(record["text"]).split())
            typer.echo(f"  [{record['paper_id']}] {record['display_name']}: {text[:160]}")


@train_app.command("formula")
def train_formula(
    index: IndexOption = None,
    out: Annotated[
        Optional[Path], typer.Option("--out", help="model directory (default DATA_DIR/models/formula/TIME)")
    ] = None,
    device: Annotated[Optional[str], typer.Option("--device", help="cpu, cuda, ... (default from settings)")] = None,
    as_json: JsonOption = False,
    config: ConfigOption = None,
) -> None:
    """Train the formula encoder (sympy rewrites) and the MaRF fusion layer on an ingested index.

    Prints the held-out equivalence check (encoder vs BM25 over formula tokens). Use the result with
    `formula.models = "DIR"`, then `rag-app build-fusion`; `scripts/build_formula_models.sh` ships it.
    """
    from rag_app.training.train_formula import TrainFormulaJob

    settings = _searched_settings(config, index)
    settings = _overridden(settings, {"formula.device": device or None})
    try:
        report = TrainFormulaJob(settings, settings.resolved_index_dir, out).run(show_progress=not as_json, log=_err)
    except (FileNotFoundError, ValueError) as error:
        _err(f"error: {error}")
        raise typer.Exit(2) from error
    encoder = report.card["encoder"]
    data = {"directory": str(report.directory), "identity": report.card["identity"],
            "equivalence_check": encoder["equivalence_check"], "fusion": report.card["fusion"]}  # fmt: skip
    if as_json:
        typer.echo(json.dumps(data))
        return
    typer.echo(f"trained {report.card['identity']} into {report.directory}")
    for method, scores in encoder["equivalence_check"].items():
        if not method.startswith("_"):
            typer.echo(f"  held-out rewrites, {method}: Hit@1 {scores['Hit@1']:.3f}  MRR@10 {scores['MRR@10']:.3f}")


def main() -> None:
    app()


if __name__ == "__main__":
    main()
