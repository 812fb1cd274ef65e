"""LaTeX ingestion with each paper parsed in a worker process under the per-paper time limit."""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from ingestion.ingest_limits import IngestLimits
from ingestion.latex_ingestor import LatexIngestor, PaperStatements
from ingestion.latex_sources import LatexPaper, PaperFinder
from ingestion.paper_pool import parse_in_pool
from ingestion.problems import IngestProblem


def _parse_paper(paper: LatexPaper, limits: IngestLimits) -> PaperStatements:
    return LatexIngestor(limits).ingest_paper(paper)


def _report_problem(problem: IngestProblem) -> PaperStatements:
    return PaperStatements(paper_id="", path=problem.path, problems=[problem])


class ParallelLatexIngestor:
    """Same results as :class:`LatexIngestor`, in the same order; papers parsed ``workers`` at a time.

    Finding papers (and unpacking archives, under the limits) happens in this process; parsing,
    the part that can meet a pathological source, happens in the workers.
    """

    def __init__(self, limits: IngestLimits | None = None, workers: int = 1) -> None:
        self.limits = limits or IngestLimits()
        self.workers = workers

    def ingest(self, paths: Iterable[Path]) -> Iterator[PaperStatements]:
        with tempfile.TemporaryDirectory(prefix="rag-app-unpack-") as workdir:
            finder = PaperFinder(Path(workdir), self.limits)
            found = (item for path in paths for item in finder.find(Path(path)))

            def task(item: LatexPaper | IngestProblem) -> tuple[Callable[..., PaperStatements], tuple[Any, ...]]:
                if isinstance(item, IngestProblem):
                    return _report_problem, (item,)
                return _parse_paper, (item, self.limits)

            for outcome in parse_in_pool(found, task, self.workers, self.limits.paper_timeout_s):
                if outcome.result is not None:
                    yield outcome.result
                else:
                    paper = outcome.item
                    assert isinstance(paper, LatexPaper)
                    problem = IngestProblem(str(paper.main), outcome.error)
                    yield PaperStatements(paper_id=paper.paper_id, path=str(paper.main), problems=[problem])
