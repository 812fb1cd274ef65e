"""The second embedding model's vectors follow the statement store (real Chroma on disk)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from retriever import Embedder, StatementIndex
from retriever.models.query_adapter import QueryAdapter
from retriever.store.companion_index import CompanionIndex, CompanionIndexError
from tests.embedders import HashingEmbedder
from tests.retriever.store.test_statement_index import PACKAGED, RECORDS, record

# Another identity than the index's embedder (the same weights reading LaTeX): fast, and not the first model.
SECOND = dict(model=PACKAGED, math_text="latex")


@pytest.fixture(scope="module")
def embedder() -> Embedder:
    """The index's own embedder: what these tests check does not depend on what MiniLM makes of a text."""
    return HashingEmbedder()


@pytest.fixture(scope="module")
def second_embedder() -> Embedder:
    return Embedder(**SECOND)  # type: ignore[arg-type]


def test_the_vectors_follow_adds_and_deletes(tmp_path: Path, embedder: Embedder, second_embedder: Embedder) -> None:
    second = CompanionIndex(tmp_path / "index", second_embedder)
    index = StatementIndex(tmp_path / "index", embedder, companion=second)
    index.add(RECORDS)
    assert second.statements() == 3 and second.built_by_configured_model()
    assert second.manifest()["embedder"] == "packaged:all-MiniLM-L6-v2"
    hits = second.search("bounded entire functions are constant", 3)
    assert hits[0].id == RECORDS[2].id and len(hits) == 3
    assert hits[0].score > hits[1].score
    assert second.add(RECORDS) == 0  # ids are content hashes: nothing embedded twice
    index.remove_papers(["top"])
    assert second.statements() == 2
    assert {hit.id for hit in second.search("compact Hausdorff", 5)} == {RECORDS[0].id, RECORDS[2].id}
    # Reopened from disk (another process), it searches the same vectors.
    reopened = CompanionIndex(tmp_path / "index", Embedder(**SECOND))  # type: ignore[arg-type]
    assert [h.id for h in reopened.search("bounded entire", 2)] == [h.id for h in second.search("bounded entire", 2)]


def test_an_index_ingested_before_the_second_model_is_caught_up_not_half_covered(
    tmp_path: Path, embedder: Embedder, second_embedder: Embedder
) -> None:
    StatementIndex(tmp_path / "index", embedder).add(RECORDS[:2])
    second = CompanionIndex(tmp_path / "index", second_embedder)
    index = StatementIndex(tmp_path / "index", embedder, companion=second)
    index.add(RECORDS[2:])  # the hook does not start vectors that would cover this statement only
    assert not second.manifest() and second.statements() == 0
    with pytest.raises(CompanionIndexError, match=r"are not built.*rag-app build-dense2"):
        second.check()
    update = second.update(index.store.iter_records())
    assert (update.added, update.removed, update.statements) == (3, 0, 3)
    late = record("late", "Every bounded monotone sequence of real numbers converges.")
    index.add([late])  # built now: it follows
    assert second.statements() == 4 and second.search("monotone bounded sequence converges", 1)[0].id == late.id
    assert second.update(index.store.iter_records()).added == 0  # a rerun has nothing to do


def test_vectors_of_another_model_are_refused_and_rebuilt(
    tmp_path: Path, embedder: Embedder, second_embedder: Embedder
) -> None:
    index = StatementIndex(tmp_path / "index", embedder, companion=CompanionIndex(tmp_path / "index", embedder))
    index.add(RECORDS)
    other = CompanionIndex(tmp_path / "index", second_embedder)
    assert not other.built_by_configured_model()
    with pytest.raises(CompanionIndexError, match=re.escape(f"built by '{embedder.identity}'")):
        other.check()
    update = other.update(index.store.iter_records())
    assert update.added == 3 and other.built_by_configured_model()
    stored = other._vectors().get(ids=[RECORDS[0].id], include=["embeddings"])["embeddings"][0]
    expected = second_embedder.embed_documents([RECORDS[0].search_text()])[0]
    assert np.allclose(stored, expected, atol=1e-5)  # the new model's vectors, not the old ones


def test_its_query_adapter_maps_the_query_vector_before_the_search(tmp_path: Path, embedder: Embedder) -> None:
    second_embedder = Embedder(**SECOND)  # type: ignore[arg-type]
    second = CompanionIndex(tmp_path / "index", second_embedder)
    StatementIndex(tmp_path / "index", embedder, companion=second).add(RECORDS)
    # A map that negates the query vector turns the nearest statement into the farthest.
    negate = QueryAdapter(-np.eye(384, dtype=np.float32), np.zeros(384, dtype=np.float32), {"kind": "query-adapter"})
    adapted = CompanionIndex(tmp_path / "index", second_embedder, query_adapter=negate)
    query = "bounded entire functions are constant"
    plain, mapped = second.search(query, 3), adapted.search(query, 3)
    assert [hit.id for hit in mapped] == [hit.id for hit in reversed(plain)]
    assert np.allclose([hit.score for hit in mapped], [-hit.score for hit in reversed(plain)], atol=1e-5)
    # The stored vectors are read back as written (what `train query-adapter --second-embedding` trains on).
    vectors = second.vectors([RECORDS[0].id, "unknown", RECORDS[0].id])
    assert list(vectors) == [RECORDS[0].id]
    written = second_embedder.embed_documents([RECORDS[0].search_text()])[0]
    assert np.allclose(vectors[RECORDS[0].id], written, atol=1e-5)


def test_vectors_that_follow_in_the_background_are_left_by_writes_and_built_by_update(
    tmp_path: Path, embedder: Embedder, second_embedder: Embedder
) -> None:
    """``at_ingest`` off (a slow second model): a write embeds nothing with it, the ingest's quick catch-up
    leaves it too, and ``update`` (``build-dense2 --background``) embeds what is missing; a delete still
    forgets its vectors at once."""
    second = CompanionIndex(tmp_path / "index", second_embedder, at_ingest=False)
    index = StatementIndex(tmp_path / "index", embedder, companion=second)
    index.add(RECORDS[:1])
    second.update(index.store.iter_records())  # built, then left behind by later writes
    index.add(RECORDS[1:])
    index.catch_up(quick=True)
    assert second.statements() == 1 and second.ids() == {RECORDS[0].id}
    assert [hit.id for hit in second.search("bounded entire functions", 3)] == [RECORDS[0].id]  # what is ready
    update = second.update(index.store.iter_records())
    assert update.added == 2 and second.ids() == {r.id for r in RECORDS}
    index.remove_papers(["top"])
    assert second.statements() == 2
