"""Parsing one e-print in a worker process (the unit of parallel, time-limited ingestion)."""

from __future__ import annotations

import tempfile
from dataclasses import replace
from pathlib import Path

from ingestion.ingest_limits import IngestLimits
from ingestion.latex_ingestor import LatexIngestor, PaperStatements
from ingestion.latex_sources import PaperFinder
from ingestion.problems import IngestProblem


def parse_eprint(path: str, origin: str, limits: IngestLimits) -> PaperStatements:
    """The statements of the e-print at ``path``; every failure becomes a problem in the result."""
    ingestor = LatexIngestor(limits)
    with tempfile.TemporaryDirectory(prefix="rag-app-paper-") as workdir:
        found = PaperFinder(Path(workdir), limits).eprint(Path(path), origin)
        if isinstance(found, IngestProblem):
            return PaperStatements(paper_id="", path=origin, problems=[found])
        result = ingestor.ingest_paper(found)
        result.path = origin
        # Problems name files inside the temporary unpack directory; name them by the e-print instead.
        result.problems = [
            replace(p, path=p.path.replace(str(found.main.parent), origin, 1)) if p.path.startswith(workdir) else p
            for p in result.problems
        ]
        return result
