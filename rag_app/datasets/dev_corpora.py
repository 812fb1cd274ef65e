"""The development corpora in ``../shared`` (the Stacks project, the HoTT book, the thesis sample), parsed the way
``ingest`` parses them: what the development sets (``rag_app.evaluation.dev_sets``) and the training data made
from the corpus (``rag_app.training``) both read."""

from __future__ import annotations

import functools
import os
from pathlib import Path

from ingestion import StatementRecord, ingest_sources
from ingestion.ingest_limits import IngestLimits
from ingestion.parallel_latex_ingestor import ParallelLatexIngestor

STACKS = "corpora/stacks-project"
HOTT = "corpora/hott-book/main.tex"
THESIS_SAMPLE = "corpora/thesis-sample/data_sample.csv"


def read_corpus(shared_dir: Path, relative: str) -> list[StatementRecord]:
    """The statement records of one development corpus, parsed the way ``ingest`` parses it.

    Cached per process, and parsed one paper per CPU at a time (the same records in the same order as one
    at a time): the Stacks project's hundred chapters take about 80 s on two cores instead of two minutes.
    """
    path = shared_dir / relative
    if not path.exists():
        raise FileNotFoundError(f"development corpus not found: {path} (is ../shared beside the checkout?)")
    return list(_parsed_corpus(path.resolve(), path.stat().st_mtime_ns))


@functools.lru_cache(maxsize=4)
def _parsed_corpus(path: Path, _stamp: int) -> tuple[StatementRecord, ...]:
    """The records (frozen) of one corpus; ``_stamp`` parses a corpus that changed on disk again."""
    # A generous limit per paper (a chapter parses in seconds): one slowed by a busy machine must not go missing.
    latex = ParallelLatexIngestor(IngestLimits(paper_timeout_s=1800), workers=min(4, os.cpu_count() or 1))
    return tuple(record for paper in ingest_sources([path], latex) for record in paper.records)
