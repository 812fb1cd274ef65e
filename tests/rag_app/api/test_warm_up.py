"""A server's warm-up (rag_app/api/warm_up.py): after it, a search reads no statement from Chroma."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rag_app import MathRAG
from rag_app.api.warm_up import start_warm_up, warm_up
from tests.conftest import make_settings


class CountingCollection:
    """The Chroma collection, counting the reads of statements' documents."""

    def __init__(self, collection: Any) -> None:
        self.collection = collection
        self.document_reads = 0

    def get(self, *args: Any, **kwargs: Any) -> Any:
        if "documents" in (kwargs.get("include") or ()):
            self.document_reads += 1
        return self.collection.get(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.collection, name)


def counted(rag: MathRAG) -> CountingCollection:
    store = rag.index.store
    store._opened = CountingCollection(store._opened)  # type: ignore[assignment]
    return store._opened  # type: ignore[return-value]


QUESTIONS = ["holomorphic functions", "compact Hausdorff spaces", "a bounded entire function", "Cauchy integral"]


def test_after_the_warm_up_a_search_reads_no_statement_from_chroma(demo_index_dir: Path, tmp_path: Path) -> None:
    cold = MathRAG(make_settings(tmp_path / "cold", index_dir=demo_index_dir))
    reads = counted(cold)
    cold.search(QUESTIONS[0], k=5)
    assert reads.document_reads > 0  # without the warm-up, the first search reads its candidates

    rag = MathRAG(make_settings(tmp_path / "warm", index_dir=demo_index_dir))
    done = warm_up(rag)
    statements = rag.index.count()
    assert done.statements == statements and len(rag.index.store.cache) == statements
    if rag.search_stack.learned_ranker_configured():
        assert len(rag.search_stack.learned_ranker.profiles._profiles) == statements
    reads = counted(rag)
    for question in QUESTIONS:
        warm_hits = rag.search(question, k=5)
        assert [hit.record for hit in warm_hits] == [hit.record for hit in cold.search(question, k=5)]
    assert reads.document_reads == 0


def test_an_index_larger_than_the_cache_is_left_to_fill_it_as_searched(demo_index_dir: Path, tmp_path: Path) -> None:
    rag = MathRAG(make_settings(tmp_path, index_dir=demo_index_dir))
    rag.index.store.cache.max_statements = 3
    assert warm_up(rag).statements == 0
    assert len(rag.index.store.cache) <= 3


def test_a_warm_up_that_fails_leaves_the_server_serving(
    demo_index_dir: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    rag = MathRAG(make_settings(tmp_path, index_dir=demo_index_dir))

    def broken(*args: Any, **kwargs: Any) -> list[Any]:
        raise OSError("disk gone")

    rag.index.store.preload = broken  # type: ignore[method-assign]
    start_warm_up(rag).join(60)
    assert "warm-up failed (OSError: disk gone)" in caplog.text
    assert rag.search(QUESTIONS[1], k=3)
