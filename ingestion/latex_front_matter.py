"""A paper's front matter as its LaTeX gives it: title, authors and abstract."""

from __future__ import annotations

import re

from ingestion.latex_text import (
    normalize_whitespace,
    read_group,
    read_optional_argument,
    read_required_argument,
    skip_spaces,
)


def document_title(document: str) -> str:
    """The argument of ``\\title`` (short optional form ignored), whitespace-normalized."""
    match = re.search(r"\\title\s*(?=[\[{])", document)
    if not match:
        return ""
    _, pos = read_optional_argument(document, match.end())
    title, _ = read_required_argument(document, pos)
    return normalize_whitespace(title or "").replace("\n", " ").replace("\\\\", " ").strip()


def document_authors(document: str) -> list[str]:
    """Author names from ``\\author`` commands (``\\and`` separates several in one)."""
    authors: list[str] = []
    for match in re.finditer(r"\\author\s*(?=[\[{])", document):
        _, pos = read_optional_argument(document, match.end())
        pos = skip_spaces(document, pos)
        value, _ = read_group(document, pos)
        for name in re.split(r"\\and\b|,\s*and\s+|\\\\", value):
            name = normalize_whitespace(re.sub(r"\\thanks\{.*?\}", "", name, flags=re.DOTALL))
            if name:
                authors.append(name.replace("\n", " "))
    return authors


def document_abstract(document: str) -> str:
    """The body of the ``abstract`` environment (or ``\\abstract{...}``), as LaTeX."""
    match = re.search(r"\\begin\{abstract\}(.*?)\\end\{abstract\}", document, re.DOTALL)
    if match:
        return normalize_whitespace(match.group(1))
    command = re.search(r"\\abstract\s*(?=\{)", document)
    if command:
        value, _ = read_group(document, command.end())
        return normalize_whitespace(value)
    return ""
