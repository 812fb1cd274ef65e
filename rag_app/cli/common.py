"""The command line's shared parts: the app and its groups, common options, settings from options, and
the map from known errors to exit codes (README, "Exit codes")."""

from __future__ import annotations

import codecs
from pathlib import Path
from typing import Annotated, Optional

import click
import typer
from typer.core import TyperGroup

from rag_app.known_errors import (  # noqa: F401 - the exit codes' names, imported from here by the commands
    EXIT_BUSY,
    EXIT_DAMAGED,
    EXIT_NO_LLM,
    EXIT_PAST_DEADLINE,
    EXIT_REFUSED,
    EXIT_USAGE,
    EXIT_WRITER_BUSY,
    KNOWN_ERRORS,
)
from rag_app.settings import Settings, SettingsOverrideError
from retriever.store.statement_index import IndexNotFoundError, require_index

# The exit codes and the errors each answers: rag_app/known_errors.py (the HTTP API reads the same table).
EXIT_CODES: tuple[tuple[tuple[type[Exception], ...], int], ...] = tuple(
    (known.kinds, known.exit_code) for known in KNOWN_ERRORS
)


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
    if (reason := _file_problem(path, text=True)) is None:
        return path.read_text(encoding="utf-8")
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
