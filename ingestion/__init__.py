"""Ingestion: sources (LaTeX papers, later Math StackExchange) to typed statement records."""

from ingestion.latex_ingestor import LatexIngestor, PaperStatements
from ingestion.problems import IngestProblem, Severity
from ingestion.records import Source, StatementKind, StatementRecord, statement_id

__all__ = [
    "IngestProblem",
    "LatexIngestor",
    "PaperStatements",
    "Severity",
    "Source",
    "StatementKind",
    "StatementRecord",
    "statement_id",
]
