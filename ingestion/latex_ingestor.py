"""LaTeX sources to statement records: the ingestion stage for papers."""

from __future__ import annotations

import re
import tempfile
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from ingestion.latex_files import LatexFlattener
from ingestion.latex_sources import LatexPaper, discover_papers
from ingestion.latex_statements import (
    document_authors,
    document_title,
    extract_statements,
    theorem_environments,
)
from ingestion.latex_text import extract_formulas
from ingestion.problems import IngestProblem, LatexSourceError
from ingestion.records import Source, StatementRecord, statement_id

# New-style (2501.01947, optional version) and old-style (math/0501001) arXiv identifiers.
_ARXIV_ID = re.compile(r"^(\d{4}\.\d{4,5}|[a-z\-]+(\.[A-Z]{2})?/\d{7})(v\d+)?$")


def arxiv_abs_url(paper_id: str) -> str:
    """The arXiv abstract page of ``paper_id``, or "" when it is not an arXiv identifier."""
    return f"https://arxiv.org/abs/{paper_id}" if _ARXIV_ID.match(paper_id) else ""


@dataclass
class PaperStatements:
    """The outcome of ingesting one paper: its records, or why there are none."""

    paper_id: str
    path: str
    records: list[StatementRecord] = field(default_factory=list)
    problems: list[IngestProblem] = field(default_factory=list)


class LatexIngestor:
    """Turn files, directories and archives of LaTeX into :class:`StatementRecord` lists.

    One bad paper never stops the others: its problems are reported in its result.
    """

    def __init__(self, flattener: LatexFlattener | None = None) -> None:
        self.flattener = flattener or LatexFlattener()

    def ingest(self, paths: Iterable[Path]) -> Iterator[PaperStatements]:
        with tempfile.TemporaryDirectory(prefix="rag-app-unpack-") as workdir:
            for path in paths:
                for found in discover_papers(Path(path), Path(workdir)):
                    if isinstance(found, IngestProblem):
                        yield PaperStatements(paper_id="", path=found.path, problems=[found])
                    else:
                        yield self.ingest_paper(found)

    def ingest_paper(self, paper: LatexPaper) -> PaperStatements:
        result = PaperStatements(paper_id=paper.paper_id, path=str(paper.main))
        try:
            flat = self.flattener.flatten(paper.main)
        except LatexSourceError as error:
            result.problems.append(error.problem)
            return result
        result.problems.extend(flat.problems)
        result.records = self.records_from_document(flat.text, paper)
        if not result.records:
            result.problems.append(IngestProblem(str(paper.main), "no theorem-like statements found"))
        return result

    @staticmethod
    def records_from_document(document: str, paper: LatexPaper) -> list[StatementRecord]:
        environments = theorem_environments(document)
        begin = document.find("\\begin{document}")
        body_offset = begin if begin >= 0 else 0
        statements = [s for s in extract_statements(document, environments) if s.offset >= body_offset]
        title = document_title(document)
        authors = document_authors(document)
        url = arxiv_abs_url(paper.paper_id)
        source = Source.ARXIV if url else Source.LOCAL
        seen: Counter[tuple[str, str]] = Counter()
        records = []
        for statement in statements:
            key = (statement.kind.value, statement.text)
            occurrence = seen[key]
            seen[key] += 1
            metadata: dict[str, str | int | float | bool] = {"environment": statement.environment}
            if statement.subsection:
                metadata["subsection"] = statement.subsection
            if authors:
                metadata["authors"] = "; ".join(authors)
            metadata["file"] = paper.main.name
            records.append(
                StatementRecord(
                    id=statement_id(source.value, paper.paper_id, statement.kind.value, statement.text, occurrence),
                    source=source,
                    kind=statement.kind,
                    text=statement.text,
                    paper_id=paper.paper_id,
                    name=statement.name,
                    formulas=tuple(extract_formulas(statement.text)),
                    label=statement.label,
                    section=statement.section,
                    url=url,
                    proof=statement.proof,
                    title=title,
                    metadata=metadata,
                )
            )
        return records
