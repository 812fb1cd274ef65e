"""Statement datasets in CSV, as the reference thesis distributes them.

Columns (the thesis's ``data_sample.csv``): ``id, paper id, title, categories, type, content, question``.
``paper id``, ``type`` and ``content`` are required; the rest is optional. ``type`` is the plural
environment family the thesis used ("lemmas", "definitions", ...). Each row becomes one statement;
rows are grouped by paper so that a paper's statements are replaced together on re-ingest.
"""

from __future__ import annotations

import ast
import csv
from collections.abc import Iterator
from pathlib import Path

from ingestion.latex_ingestor import PaperStatements, arxiv_abs_url
from ingestion.latex_statements import kind_for, split_label
from ingestion.latex_text import extract_formulas, normalize_whitespace
from ingestion.problems import IngestProblem
from ingestion.records import Source, StatementKind, StatementRecord, statement_id

REQUIRED_COLUMNS = ("paper id", "type", "content")


def read_statement_csv(path: Path) -> Iterator[PaperStatements]:
    """One :class:`PaperStatements` per paper in the file; a bad row is reported with its line number."""
    try:
        handle = path.open(newline="", encoding="utf-8")
    except OSError as error:
        yield PaperStatements("", str(path), problems=[IngestProblem(str(path), f"cannot read: {error}")])
        return
    papers: dict[str, PaperStatements] = {}
    problems: list[IngestProblem] = []
    with handle:
        reader = csv.DictReader(handle)
        missing = [column for column in REQUIRED_COLUMNS if column not in (reader.fieldnames or [])]
        if missing:
            problem = IngestProblem(str(path), f"not a statement CSV: missing column(s) {', '.join(missing)}", line=1)
            yield PaperStatements("", str(path), problems=[problem])
            return
        try:
            for row in reader:
                line = reader.line_num
                record = _record_from_row(row, path, line, problems)
                if record is not None:
                    papers.setdefault(record.paper_id, PaperStatements(record.paper_id, str(path))).records.append(
                        record
                    )
        except (csv.Error, UnicodeDecodeError) as error:
            problems.append(IngestProblem(str(path), f"malformed CSV: {error}", line=reader.line_num))
    if problems:
        yield PaperStatements("", str(path), problems=problems)
    yield from papers.values()


def _record_from_row(
    row: dict[str, str], path: Path, line: int, problems: list[IngestProblem]
) -> StatementRecord | None:
    paper_id = (row.get("paper id") or "").strip()
    content = (row.get("content") or "").strip()
    family = (row.get("type") or "").strip()
    if not paper_id or not content:
        problems.append(IngestProblem(str(path), "row without a paper id or content; skipped", line=line))
        return None
    kind = kind_for(family) or StatementKind.OTHER
    label, text = split_label(content)
    row_id = (row.get("id") or "").strip()
    url = arxiv_abs_url(paper_id)
    source = Source.ARXIV if url else Source.LOCAL
    metadata: dict[str, str | int | float | bool] = {"file": path.name}
    if row_id:
        metadata["row_id"] = row_id
        # The dataset's row id is the stable identity of the statement, whatever our cleaning does.
        metadata["docno"] = f"{paper_id}#row-{row_id}"
    categories = _categories(row.get("categories") or "")
    if categories:
        metadata["categories"] = "; ".join(categories)
    return StatementRecord(
        id=statement_id(source.value, paper_id, kind.value, text, occurrence=int(row_id) if row_id.isdigit() else 0),
        source=source,
        kind=kind,
        text=text,
        paper_id=paper_id,
        formulas=tuple(extract_formulas(text)),
        label=label,
        url=url,
        title=normalize_whitespace(row.get("title") or ""),
        metadata=metadata,
    )


def _categories(value: str) -> list[str]:
    """The thesis writes categories as a Python list literal: ``['math.co', 'math.ac']``."""
    value = value.strip()
    if value.startswith("["):
        try:
            parsed = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            parsed = None
        if isinstance(parsed, list):
            return [str(item).strip() for item in parsed if str(item).strip()]
    return [part.strip() for part in value.replace(";", ",").split(",") if part.strip()]
