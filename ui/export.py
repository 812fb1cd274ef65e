"""Answers leave the chat as Markdown with their references, and arXiv sources as BibTeX entries."""

from __future__ import annotations

import re
from collections.abc import Sequence

from ingestion.records import Source, StatementKind, StatementRecord
from rag_app.answering.answer import Answer
from retriever.types import SearchHit

_ARXIV_ID = re.compile(r"(?:arxiv[:/])?(?P<id>\d{4}\.\d{4,5}|[a-z-]+(?:\.[A-Z]{2})?/\d{7})(?:v\d+)?", re.IGNORECASE)
_BIBTEX_SPECIAL = str.maketrans({"&": r"\&", "%": r"\%", "#": r"\#"})  # braces stay: titles hold LaTeX


def source_heading(record: StatementRecord) -> str:
    """``Lemma 10.12.3``, ``Definition (Noetherian ring)``, ``Theorem 2 (Spectral theorem)``; MSE posts by kind."""
    number = str(record.metadata.get("number", "") or "")
    heading = record.kind.title + (f" {number}" if number else "")
    if record.name and record.kind not in (StatementKind.ANSWER, StatementKind.QUESTION):
        heading += f" ({typographic_dashes(record.name)})"
    return heading


def typographic_dashes(text: str) -> str:
    """TeX's ``---`` and ``--`` as the dashes they typeset (names such as ``Cayley--Hamilton``), outside math."""
    if "$" in text or "\\" in text:
        return text
    return text.replace("---", "\u2014").replace("--", "\u2013")


def arxiv_id(record: StatementRecord) -> str | None:
    """The arXiv identifier of an arXiv record (without version), else None."""
    if record.source is not Source.ARXIV:
        return None
    for candidate in (record.paper_id, record.url):
        match = _ARXIV_ID.search(candidate or "")
        if match:
            return match["id"]
    return None


def source_origin(record: StatementRecord) -> str:
    """Where a statement comes from, in one line: title, authors, arXiv id or MSE question."""
    if record.source is Source.MSE:
        return f"Math StackExchange: {record.title}" if record.title else "Math StackExchange"
    parts = [typographic_dashes(record.source_title)]
    authors = _authors(record)
    if authors:
        parts.append(", ".join(authors))
    identifier = arxiv_id(record)
    if identifier:
        parts.append(f"arXiv:{identifier}")
    return " — ".join(parts)


def answer_markdown(answer: Answer) -> str:
    """The answer with a numbered reference list (what "copy as Markdown" gives)."""
    lines = [f"**Q:** {answer.question}", "", answer.text.strip(), ""]
    if answer.sources:
        lines.append("**References**")
        lines.append("")
        for number, hit in enumerate(answer.sources, start=1):
            record = hit.record
            link = f" <{record.url}>" if record.url else ""
            lines.append(f"[{number}] {source_heading(record)}. {source_origin(record)}.{link}")
    return "\n".join(lines).strip() + "\n"


def bibtex_entry(record: StatementRecord) -> str | None:
    """A BibTeX ``@misc`` entry for the arXiv paper a statement comes from; None for other sources."""
    identifier = arxiv_id(record)
    if identifier is None:
        return None
    fields = {
        "title": "{" + _bibtex(record.title or identifier) + "}",
        "author": _bibtex(" and ".join(_authors(record))) or None,
        "year": str(record.metadata.get("published", ""))[:4] or _year_from_id(identifier),
        "eprint": identifier,
        "archivePrefix": "arXiv",
        "primaryClass": str(record.metadata.get("primary_category", "") or "") or None,
        "doi": str(record.metadata.get("doi", "") or "") or None,
        "url": f"https://arxiv.org/abs/{identifier}",
    }
    body = ",\n".join(f"  {name} = {{{value}}}" for name, value in fields.items() if value)
    return f"@misc{{arxiv:{identifier},\n{body}\n}}"


def bibtex_entries(sources: Sequence[SearchHit]) -> str:
    """One entry per arXiv paper among the sources, in order of first citation number."""
    entries = dict.fromkeys(entry for hit in sources if (entry := bibtex_entry(hit.record)))
    return "\n\n".join(entries)


def _authors(record: StatementRecord) -> list[str]:
    """Authors from the LaTeX source ("A; B") or from arXiv's metadata ("A, B and C")."""
    value = str(record.metadata.get("authors", "") or record.metadata.get("author", "") or "")
    separator = ";" if ";" in value else r",|\band\b"
    return [a.strip() for a in re.split(separator, value) if a.strip()]


def _bibtex(text: str) -> str:
    return " ".join(text.split()).translate(_BIBTEX_SPECIAL)


def _year_from_id(identifier: str) -> str | None:
    new_style = re.match(r"(\d{2})\d{2}\.", identifier)
    return f"20{new_style[1]}" if new_style else None
