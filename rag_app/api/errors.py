"""The errors a client of the HTTP API or the MCP server is told about in words, and the status each gets
(from the one table, :mod:`rag_app.known_errors`); anything else is a 500 (the server logs its traceback).
What a client reads never shows the server's directories (:func:`redacted`)."""

from __future__ import annotations

from pathlib import Path

from rag_app.known_errors import KNOWN_ERRORS
from rag_app.settings import Settings


class BadRequestError(ValueError):
    """A request refused before any work (400), with the reason."""


STATUS_OF: tuple[tuple[tuple[type[Exception], ...], int], ...] = (
    ((BadRequestError,), 400),
    *((known.kinds, known.http_status) for known in KNOWN_ERRORS),
)


def redacted(text: str, settings: Settings) -> str:
    """``text`` with the index, data and home directories named, not shown: a client needs to know which store
    is damaged and what to run, not where the server keeps its files."""
    places = [
        (settings.resolved_index_dir, "<index>"),
        (settings.data_dir.expanduser(), "<data>"),
        (Path.home(), "~"),
    ]
    for directory, name in places:
        for form in {str(directory), str(directory.resolve())}:
            if len(form) > 1:  # never "/"
                text = text.replace(form, name)
    return text


class ApiError(Exception):
    """An HTTP error with its status and reason (and headers: ``Retry-After`` on 429)."""

    def __init__(self, status: int, reason: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(reason)
        self.status, self.reason, self.headers = status, reason, headers or {}
