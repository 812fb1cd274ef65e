"""The summary of one ingest run."""

from __future__ import annotations

from dataclasses import dataclass, field

from ingestion.problems import IngestProblem, Severity


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

    @property
    def errors(self) -> list[IngestProblem]:
        return [p for p in self.problems if p.severity is Severity.ERROR]

    def summary(self) -> str:
        return (
            f"{self.papers} papers, {self.statements} statements "
            f"({self.added} added, {self.unchanged} unchanged, {self.removed} removed"
            + (f", {self.updated} updated" if self.updated else "")
            + ") "
            f"in {self.seconds:.1f} s; {len(self.errors)} errors, "
            f"{len(self.problems) - len(self.errors)} warnings"
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
        }
