"""One entry point for every kind of source a user can hand to ``ingest``."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

from ingestion.latex_ingestor import LatexIngestor, PaperStatements
from ingestion.parallel_latex_ingestor import ParallelLatexIngestor
from ingestion.statement_csv import read_statement_csv


def ingest_sources(
    paths: Iterable[Path], latex: LatexIngestor | ParallelLatexIngestor | None = None
) -> Iterator[PaperStatements]:
    """Statement records from LaTeX files, directories and archives, and statement CSV datasets."""
    latex = latex or LatexIngestor()
    for path in paths:
        if path.suffix.lower() == ".csv" and path.is_file():
            yield from read_statement_csv(path)
        else:
            yield from latex.ingest([path])
