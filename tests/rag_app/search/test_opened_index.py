"""The statement graph's counts on search results: a graph that cannot be read is said in the log (issue 86)."""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path

import pytest

from rag_app import MathRAG
from rag_app.search.statement_links import StatementLinks
from tests.conftest import make_settings


def test_a_graph_that_cannot_be_read_leaves_the_counts_unset_and_says_so(
    demo_index_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    rag = MathRAG(make_settings(tmp_path, index_dir=demo_index_dir))

    def damaged(self: StatementLinks, hits: object) -> list[object]:
        raise sqlite3.DatabaseError("file is not a database")

    monkeypatch.setattr(StatementLinks, "counted", damaged)
    with caplog.at_level(logging.WARNING, logger="rag_app.search.opened_index"):
        hits = rag.search("bounded entire function", 3)
    assert len(hits) == 3, "the search still answers"
    assert any("file is not a database" in record.getMessage() for record in caplog.records)
