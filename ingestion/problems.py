"""Problems met while ingesting: reported with their place and reason, never fatal to a run."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Severity(StrEnum):
    NOTE = "note"  # nothing wrong with the source, but it holds nothing to ingest (no statements)
    WARNING = "warning"  # the source was ingested, something in it was skipped
    ERROR = "error"  # the source (file, paper, archive) was refused: it produced nothing


@dataclass(frozen=True, slots=True)
class IngestProblem:
    """Something wrong with one input: which file (and line, when known) and why."""

    path: str
    reason: str
    severity: Severity = Severity.ERROR
    line: int | None = None
    # A part of the source (an included file, a statement, a proof) refused while the rest was ingested.
    refused_part: bool = False

    def to_dict(self) -> dict[str, object]:
        return {
            "path": self.path,
            "line": self.line,
            "severity": self.severity.value,
            "reason": self.reason,
            "refused_part": self.refused_part,
        }

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line is not None else self.path
        return f"{self.severity.value}: {where}: {self.reason}"


def refused_parts_by_source(problems: list[IngestProblem]) -> dict[str, int]:
    """How many parts (included files, statements, proofs) were refused in each source that has any."""
    counts: dict[str, int] = {}
    for problem in problems:
        if problem.refused_part:
            counts[problem.path] = counts.get(problem.path, 0) + 1
    return counts


class SourceError(Exception):
    """A source cannot be read at all; carries the problem to report."""

    def __init__(self, path: str, reason: str, line: int | None = None) -> None:
        where = f"{path}:{line}" if line is not None else path
        super().__init__(f"{where}: {reason}")
        self.problem = IngestProblem(path=path, reason=reason, line=line)


class LatexSourceError(SourceError):
    """A LaTeX source cannot be read at all (binary, corrupt archive, unreadable)."""
