"""Ingestion: sources (LaTeX papers, statement CSV datasets, later Math StackExchange) to typed records."""

from ingestion.latex_ingestor import LatexIngestor, PaperStatements
from ingestion.problems import IngestProblem, Severity
from ingestion.records import Source, StatementKind, StatementRecord, statement_id
from ingestion.sources import ingest_sources
from ingestion.statement_csv import read_statement_csv

__all__ = [
    "IngestProblem",
    "LatexIngestor",
    "PaperStatements",
    "Severity",
    "Source",
    "StatementKind",
    "StatementRecord",
    "ingest_sources",
    "read_statement_csv",
    "statement_id",
]
