"""The command line's shared parts: the app and its groups, common options, settings from options, and
the map from known errors to exit codes (README, "Exit codes")."""

from __future__ import annotations

import codecs
from pathlib import Path
from typing import Annotated, Optional

import click
import typer
from typer.core import TyperGroup

from rag_app.search.statement_links import AmbiguousLabelError, StatementNotFoundError
from rag_app.serving.packaged_models import PackagedModelError
from rag_app.settings import Settings, SettingsOverrideError
from retriever import IndexMismatchError
from retriever.formulas.formula_model_error import FormulaModelError
from retriever.formulas.marf_index import MarfIndexError
from retriever.models.embedding_registry import EmbedderSpecError
from retriever.models.learned_ranker import LearnedRankerError
from retriever.models.query_adapter import QueryAdapterError
from retriever.store.bm25_segment import BM25SegmentError
from retriever.store.hnsw_files import VectorIndexDamagedError
from retriever.store.index_lock import IndexWriterBusyError
from retriever.store.sqlite_file import StoreFileBusyError, StoreFileDamagedError
from retriever.store.statement_index import IndexDamagedError, IndexNotFoundError, require_index

# Exit codes (README, "Exit codes"): scripts tell these apart.
EXIT_REFUSED = 1  # some input was refused (each with its file, line or record and reason); the rest is in
EXIT_USAGE = 2  # a bad option, a missing file, an index that is not there, a model that does not fit
EXIT_DAMAGED = 3  # a file of the index cannot be read: named, with what to run; nothing was written
EXIT_NO_LLM = 4  # `ask`: the answer needed the language model and none could be had (sources still printed)
EXIT_BUSY = 5  # another process held a file of the index past the wait (a writer at work): try again
EXIT_WRITER_BUSY = 6  # another ingest was writing the index for longer than ingestion.writer_wait_s: run again

# Known failures, each one sentence naming what to do: the exit code each gets.
EXIT_CODES: tuple[tuple[tuple[type[Exception], ...], int], ...] = (
    ((IndexMismatchError, IndexNotFoundError, PackagedModelError, EmbedderSpecError, MarfIndexError,
      FormulaModelError, QueryAdapterError, LearnedRankerError, SettingsOverrideError, StatementNotFoundError,
      AmbiguousLabelError), EXIT_USAGE),
    ((IndexDamagedError, BM25SegmentError, VectorIndexDamagedError, StoreFileDamagedError), EXIT_DAMAGED),
    ((StoreFileBusyError,), EXIT_BUSY),
    ((IndexWriterBusyError,), EXIT_WRITER_BUSY),
)  # fmt: skip


class _Commands(TyperGroup):
    """Every command's known failures become one sentence on stderr and an exit code, not a traceback
    (here rather than in ``main`` so that the tests' CliRunner sees the same codes)."""

    def invoke(self, ctx: click.Context) -> object:
        try:
            return super().invoke(ctx)
        except tuple(error for errors, _ in EXIT_CODES for error in errors) as error:
            _err(f"error: {error}")
            raise typer.Exit(next(code for errors, code in EXIT_CODES if isinstance(error, errors))) from None


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
    if index is not None:
        where = settings.resolved_index_dir  # not a file: `_settings` refused that
        try:
            require_index(where, f"`rag-app ingest --index {where} PATHS` builds one there")
        except IndexNotFoundError as error:
            _err(f"error: --index {error}")
            raise typer.Exit(EXIT_USAGE) from None
    return settings


def _err(message: str) -> None:
    typer.echo(message, err=True)


def _read_text_file(path: Path, option: str) -> str:
    """The UTF-8 text of a file named by ``option``, read before any work; a path that is missing, a
    directory, unreadable or not UTF-8 is a usage error (exit 2) naming the path and the reason."""
    try:
        return path.read_text(encoding="utf-8")
    except IsADirectoryError:
        reason = "is a directory; give a file"
    except FileNotFoundError:
        reason = "no such file"
    except PermissionError:
        reason = "not readable (permission denied)"
    except UnicodeDecodeError as error:
        reason = f"not UTF-8 text (byte {error.start}: {error.reason}); save it as UTF-8"
    except OSError as error:
        reason = f"cannot be read ({error.strerror or error})"
    _err(f"error: {option} {path}: {reason}")
    raise typer.Exit(EXIT_USAGE)


def _file_problem(path: Path, text: bool) -> str | None:
    """Why ``path`` cannot be read as an input file (None: it can); ``text``: it must also be UTF-8."""
    if path == Path("-"):
        return None  # standard input, where a command takes it
    if not path.exists():
        return "no such file"
    if path.is_dir():
        return "is a directory; give a file"
    try:
        with path.open("rb") as handle:
            if not text:
                handle.read(1)
                return None
            decoder = codecs.getincrementaldecoder("utf-8")()
            offset = 0
            while chunk := handle.read(1 << 20):
                try:
                    decoder.decode(chunk)
                except UnicodeDecodeError as error:
                    return f"not UTF-8 text (byte {offset + error.start}: {error.reason}); save it as UTF-8"
                offset += len(chunk)
            decoder.decode(b"", final=True)
    except UnicodeDecodeError as error:
        return f"not UTF-8 text (it ends inside a character: {error.reason}); save it as UTF-8"
    except PermissionError:
        return "not readable (permission denied)"
    except OSError as error:
        return f"cannot be read ({error.strerror or error})"
    return None


def _checked(value: Path | list[Path] | None, text: bool) -> Path | list[Path] | None:
    for path in [] if value is None else value if isinstance(value, list) else [value]:
        if problem := _file_problem(path, text):
            raise typer.BadParameter(f"{path}: {problem}")
    return value


def text_files(value: Path | list[Path] | None) -> Path | list[Path] | None:
    """An option's or argument's input files (query sets, qrels, runs, question files), checked before any
    work: missing, a directory, unreadable or not UTF-8 is a usage error (exit 2) naming the path and why."""
    return _checked(value, text=True)


def input_files(value: Path | list[Path] | None) -> Path | list[Path] | None:
    """As :func:`text_files`, for files that may be compressed (dumps, metadata snapshots): not decoded."""
    return _checked(value, text=False)
