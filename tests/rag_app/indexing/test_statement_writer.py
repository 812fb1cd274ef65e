"""The one ingest loop's writer: batches, replaced papers, vectors made elsewhere, manifest order."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ingestion.records import Source, StatementKind, StatementRecord, statement_id
from rag_app.indexing.statement_writer import PendingPaper, StatementWriter
from retriever import Embedder, StatementIndex
from retriever.store.paper_manifest import PaperEntry
from tests.embedders import HashingEmbedder

PACKAGED = "packaged:all-MiniLM-L6-v2"


def record(paper: str, text: str) -> StatementRecord:
    return StatementRecord(
        id=statement_id("local", paper, "theorem", text),
        source=Source.LOCAL,
        kind=StatementKind.THEOREM,
        text=text,
        paper_id=paper,
    )


@pytest.fixture(scope="module")
def embedder() -> Embedder:
    """The index's own embedder: what these tests check does not depend on what MiniLM makes of a text."""
    return HashingEmbedder()


class CountingIndex(StatementIndex):
    """The real index, counting its writes."""

    writes: list[int]

    def add(self, records, show_progress=False):  # type: ignore[no-untyped-def]
        self.writes.append(len(records))
        return super().add(records, show_progress)


def test_papers_are_written_in_batches_and_a_changed_paper_is_replaced(tmp_path: Path, embedder: Embedder) -> None:
    index = CountingIndex(tmp_path / "index", embedder)
    index.writes = []
    papers = {f"p{i}": [record(f"p{i}", f"Statement {j} of paper {i}.") for j in range(3)] for i in range(4)}
    writer = StatementWriter(index, batch_statements=5)
    for paper_id, records in papers.items():
        writer.add(PendingPaper(paper_id, records))
    counts = writer.finish()
    # a batch closes at the first paper that reaches 5 statements: 3+3, then 3+3
    assert index.writes == [6, 6] and (counts.added, counts.unchanged, counts.removed) == (12, 0, 0)
    assert index.count() == 12 and len(index.lexical_index()) == 12

    revised = [papers["p1"][0], record("p1", "A new statement of paper 1.")]
    again = StatementWriter(index, batch_statements=5)
    for paper_id, records in papers.items():
        again.add(PendingPaper(paper_id, revised if paper_id == "p1" else records))
    counts = again.finish()
    assert (counts.added, counts.unchanged, counts.removed) == (1, 10, 2)
    assert index.store.ids_for_paper("p1") == {r.id for r in revised} and index.count() == 11
    assert len(index.lexical_index()) == 11


def test_a_paper_met_again_in_a_later_batch_keeps_its_first_part(tmp_path: Path, embedder: Embedder) -> None:
    index = StatementIndex(tmp_path / "index", embedder)
    first, second = record("csv", "The first row."), record("csv", "A row further down the file.")
    writer = StatementWriter(index, batch_statements=1)
    writer.add(PendingPaper("csv", [first]))
    writer.add(PendingPaper("csv", [second]))
    counts = writer.finish()
    assert counts.removed == 0 and index.store.ids_for_paper("csv") == {first.id, second.id}
    assert writer.papers_written == {"csv"}


def test_vectors_made_elsewhere_are_stored_as_they_are_and_manifest_rows_follow(
    tmp_path: Path, embedder: Embedder
) -> None:
    index = StatementIndex(tmp_path / "index", embedder)
    local, remote = record("a", "Embedded here."), record("b", "Embedded by a worker.")
    worker_vector = np.full((1, embedder.dimension), 1 / np.sqrt(embedder.dimension), dtype=np.float32)
    manifest = index.papers()
    try:
        writer = StatementWriter(index, batch_statements=100, manifest=manifest)
        writer.add(PendingPaper("a", [local], entry=PaperEntry("a", "v1", "hash-a", "ok", 1)))
        writer.add(PendingPaper("b", [remote], worker_vector, PaperEntry("b", "v1", "hash-b", "ok", 1)))
        assert manifest.get("a") is None  # nothing recorded before its statements are stored
        counts = writer.finish()
        assert counts.added == 2 and manifest.get("a") is not None and manifest.get("b") is not None
    finally:
        manifest.close()
    stored = index.store.vectors([remote.id])[remote.id]
    assert np.allclose(stored, worker_vector[0], atol=1e-6)


def test_a_renamed_or_relabelled_statement_is_updated_in_every_store(tmp_path: Path, embedder: Embedder) -> None:
    from dataclasses import replace

    from retriever.store.duplicate_groups import DuplicateGroups

    (tmp_path / "index").mkdir()
    index = StatementIndex(tmp_path / "index", embedder, duplicates=DuplicateGroups(tmp_path / "index"))
    old = replace(record("p", "Every bounded entire function is constant."), name="Old", label="thm:old")
    other = record("p", "A second statement of the paper.")
    initial = StatementWriter(index, batch_statements=10)
    initial.add(PendingPaper("p", [old, other]))
    assert initial.finish().added == 2
    first = StatementWriter(index, batch_statements=10)
    first.add(PendingPaper("p", [old, other]))
    assert (first.finish().unchanged, first.counts.updated) == (2, 0)  # the same paper again: nothing to do

    new = replace(old, name="New", label="thm:new")
    writer = StatementWriter(index, batch_statements=10)
    writer.add(PendingPaper("p", [new, other]))
    counts = writer.finish()
    assert (counts.added, counts.updated, counts.unchanged, counts.removed) == (0, 1, 1, 0)
    stored = index.store.get([old.id])[0]
    assert (stored.name, stored.label) == ("New", "thm:new") and index.count() == 2
    assert len(index.lexical_index()) == 2 and index.lexical_index().search("New", 1)[0].id == old.id
    assert index.duplicates is not None and index.duplicates.count() == 2
