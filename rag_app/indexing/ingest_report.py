"""The summary of one ingest run."""

from __future__ import annotations

from dataclasses import dataclass, field

from ingestion.problems import IngestProblem, Severity, refused_parts_by_source


@dataclass
class IngestReport:
    papers: int = 0
    statements: int = 0
    added: int = 0
    unchanged: int = 0
    removed: int = 0
    updated: int = 0  # statements kept under their id whose name, label or other shown fields changed
    seconds: float = 0.0
    problems: list[IngestProblem] = field(default_factory=list)
    references: int = 0  # labels the statements and proofs reference (each once per statement)
    unresolved_references: int = 0  # of those, labels their paper does not define (another paper may)
    citations: int = 0  # bibliography keys the statements and proofs cite (each once per statement)
    arxiv_citations: int = 0  # of those, keys their paper's bibliography gives an arXiv id

    @property
    def errors(self) -> list[IngestProblem]:
        """Inputs refused (exit 1)."""
        return [p for p in self.problems if p.severity is Severity.ERROR]

    @property
    def warnings(self) -> list[IngestProblem]:
        return [p for p in self.problems if p.severity is Severity.WARNING]

    @property
    def no_statements(self) -> list[IngestProblem]:
        """Sources that hold no theorem-like statement: a note, not an error."""
        return [p for p in self.problems if p.severity is Severity.NOTE]

    @property
    def refused_parts(self) -> dict[str, int]:
        """Per paper (its main file), the parts refused while the rest of it was ingested."""
        return refused_parts_by_source(self.problems)

    def summary(self) -> str:
        refused = self.refused_parts
        return (
            f"{self.papers} papers, {self.statements} statements "
            f"({self.added} added, {self.unchanged} unchanged, {self.removed} removed"
            + (f", {self.updated} updated" if self.updated else "")
            + ") "
            f"in {self.seconds:.1f} s; {len(self.errors)} errors, {len(self.warnings)} warnings"
            + (f", {sum(refused.values())} parts refused in {len(refused)} papers" if refused else "")
            + (f", {len(self.no_statements)} with no statements" if self.no_statements else "")
            + (
                f"; {self.references} references, {self.unresolved_references} to labels their paper does not define"
                if self.references
                else ""
            )
            + (f"; {self.citations} citations, {self.arxiv_citations} of arXiv papers" if self.citations else "")
        )

    def to_dict(self) -> dict[str, object]:
        return {
            "papers": self.papers,
            "statements": self.statements,
            "added": self.added,
            "unchanged": self.unchanged,
            "removed": self.removed,
            "updated": self.updated,
            "seconds": round(self.seconds, 3),
            "problems": [problem.to_dict() for problem in self.problems],
            "refused_parts": self.refused_parts,
            "no_statements": len(self.no_statements),
            "references": self.references,
            "unresolved_references": self.unresolved_references,
            "citations": self.citations,
            "arxiv_citations": self.arxiv_citations,
        }
