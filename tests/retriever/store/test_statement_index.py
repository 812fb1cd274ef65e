"""The index against a real Chroma store on disk and a real BM25 index."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import numpy as np
import pytest

from ingestion.formula_spans import find_formula_spans
from ingestion.records import LabelReference, Source, StatementKind, StatementRecord, statement_id
from retriever import Embedder, IndexMismatchError, SearchMode, StatementIndex
from retriever.storage.bm25_index import BM25Index
from retriever.store import reindex as reindex_module
from retriever.store.derived_stores import WordIndexStore
from retriever.store.marf_index import MarfIndexError
from retriever.store.reindex import reindex
from retriever.text.formula_terms import FormulaIndexStats
from tests.embedders import HashingEmbedder, random_adapter
from tests.searchers import first_stage

PACKAGED = "packaged:all-MiniLM-L6-v2"


def record(paper: str, text: str, kind: StatementKind = StatementKind.THEOREM, name: str = "") -> StatementRecord:
    return StatementRecord(
        id=statement_id("local", paper, kind.value, text),
        source=Source.LOCAL,
        kind=kind,
        text=text,
        paper_id=paper,
        name=name,
        formulas=("x",),
        metadata={"authors": "A. Author"},
    )


RECORDS = [
    record("alg", "A finitely generated module $M$ with $IM = M$ over a local ring is zero.", name="Nakayama"),
    record("top", "A compact subset of a Hausdorff space is closed.", StatementKind.PROPOSITION),
    record("ana", "A bounded entire function is constant.", name="Liouville"),
]


@pytest.fixture(scope="module")
def embedder() -> Embedder:
    """Storage, crash windows and channels do not depend on what MiniLM makes of a text: the small
    deterministic embedder (words hashed into 64 dimensions) stands in for it."""
    return HashingEmbedder()


@pytest.fixture(scope="module")
def minilm() -> Embedder:
    """The real model, where the behaviour is about which model built the vectors."""
    return Embedder(PACKAGED)


def test_add_search_and_round_trip(tmp_path: Path, embedder: Embedder) -> None:
    index = StatementIndex(tmp_path / "index", embedder)
    assert index.add(RECORDS).added == 3
    index.rebuild_lexical()
    for mode in (SearchMode.HYBRID, SearchMode.DENSE, SearchMode.BM25):
        hits = first_stage(index).search("bounded entire functions are constant", 2, mode)
        assert hits[0].record == RECORDS[2], mode
        channels = {"dense", "bm25"} if mode is SearchMode.HYBRID else {mode.value}
        assert hits[0].rank == 1 and set(hits[0].channel_ranks) == channels
    hybrid = first_stage(index).search("Hausdorff compact closed", 3)
    assert hybrid[0].record.id == RECORDS[1].id
    assert set(hybrid[0].channel_ranks) == {"dense", "bm25"}


def test_formula_channel_finds_statements_by_their_formulas(tmp_path: Path, embedder: Embedder) -> None:
    def with_formulas(paper: str, text: str) -> StatementRecord:
        return StatementRecord(
            id=statement_id("local", paper, "theorem", text), source=Source.LOCAL, kind=StatementKind.THEOREM,
            text=text, paper_id=paper, formulas=tuple(span.latex for span in find_formula_spans(text)),
        )  # fmt: skip

    records = [
        with_formulas("a", r"For $n \ge 1$, $\sum_{k=1}^{n} k = \frac{n(n+1)}{2}$."),
        with_formulas("b", r"For $|x| < 1$, $\sum_{k=0}^{\infty} x^k = \frac{1}{1-x}$."),
        with_formulas("c", r"Every bounded monotone sequence of reals converges."),
        with_formulas("d", r"A broken one: $\frac{a}{$ stays searchable."),
    ]
    index = StatementIndex(tmp_path / "index", embedder)
    index.add(records)
    index.rebuild_lexical()
    # another spelling of the same formula: \dfrac, \left( \right), a space command
    hits = first_stage(index).search(r"$\sum_{k=1}^n k = \dfrac{n\left(n+1\right)}{2}\,$", 2, SearchMode.FORMULA)
    assert hits[0].record.paper_id == "a" and set(hits[0].channel_ranks) == {"formula"}
    bare = first_stage(index).search(r"\sum_{k=0}^\infty x^k", 2, SearchMode.FORMULA)
    assert bare[0].record.paper_id == "b"
    fused = first_stage(index).search(r"geometric series $\sum_{k=0}^{\infty} x^k$", 2, SearchMode.HYBRID_FORMULA)
    assert fused[0].record.paper_id == "b" and "formula" in fused[0].channel_ranks
    text_only = first_stage(index).search("bounded monotone sequence", 1, SearchMode.HYBRID_FORMULA)
    assert text_only[0].record.paper_id == "c"
    stats = index.lexical.formula_stats()
    assert stats is not None and stats.formulas == 5 and stats.malformed == 1
    with pytest.raises(MarfIndexError, match="formula fusion is off"):
        first_stage(index).search("x", 1, SearchMode.MARF)
    with pytest.raises(MarfIndexError, match="rag-app build-fusion"):
        first_stage(StatementIndex(tmp_path / "index", embedder, formula_models="packaged")).search(
            "x", 1, SearchMode.MARF
        )


def test_reopened_index_keeps_records_and_lexical_index(tmp_path: Path, embedder: Embedder) -> None:
    StatementIndex(tmp_path / "index", embedder).add(RECORDS)
    reopened = StatementIndex(tmp_path / "index", embedder)
    assert reopened.count() == 3
    # BM25 was written with the store: no rebuild is needed to search it
    assert not reopened.lexical.stale
    assert first_stage(reopened).search("Liouville entire", 1, SearchMode.BM25)[0].record.name == "Liouville"
    assert len(BM25Index.load(tmp_path / "index" / "bm25")) == 3


def test_writes_update_the_lexical_indexes_in_place(
    tmp_path: Path, embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    index = StatementIndex(tmp_path / "index", embedder)
    monkeypatch.setattr(StatementIndex, "rebuild_lexical", lambda *_: pytest.fail("a full rebuild was run"))
    index.add(RECORDS[:2])
    index.add(RECORDS[2:])
    index.sync_lexical()  # what every ingest ends with: nothing to do
    assert first_stage(index).search("Liouville bounded entire", 1, SearchMode.BM25)[0].record == RECORDS[2]
    assert index.lexical.formula_stats() == FormulaIndexStats(3, 3, 0)
    assert index.remove_stale({"ana": set()}) == 1
    assert first_stage(index).search("Liouville bounded entire", 3, SearchMode.BM25) == []
    index.remove_papers(["top"])
    assert index.lexical.formula_stats() == FormulaIndexStats(1, 1, 0)
    assert len(BM25Index.load(tmp_path / "index" / "bm25")) == 1 == index.count()


def test_a_write_interrupted_before_bm25_is_recovered_by_a_rebuild(
    tmp_path: Path, embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    index = StatementIndex(tmp_path / "index", embedder)
    index.add(RECORDS[:1])

    def dies(*_: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(WordIndexStore, "add", dies)
    with pytest.raises(KeyboardInterrupt):
        index.add(RECORDS[1:])  # the vectors are stored, BM25 never hears of them
    monkeypatch.undo()
    reopened = StatementIndex(tmp_path / "index", embedder)
    assert reopened.lexical.stale and reopened.count() == 3
    assert first_stage(reopened).search("Liouville bounded entire", 1, SearchMode.BM25)[0].record == RECORDS[2]
    assert not reopened.lexical.stale and reopened.lexical.formula_stats() == FormulaIndexStats(3, 3, 0)


def test_an_index_with_the_older_bm25_files_is_rebuilt_once(tmp_path: Path, embedder: Embedder) -> None:
    index = StatementIndex(tmp_path / "index", embedder)
    index.add(RECORDS)
    for name in ("bm25", "formula_bm25"):  # what the bm25s-based version left: its files, no database
        shutil.rmtree(tmp_path / "index" / name)
        (tmp_path / "index" / name).mkdir()
        (tmp_path / "index" / name / "ids.json").write_text("[]")
    reopened = StatementIndex(tmp_path / "index", embedder)
    assert reopened.lexical.stale
    reopened.sync_lexical()
    assert not reopened.lexical.stale
    assert first_stage(reopened).search("Hausdorff compact", 1, SearchMode.BM25)[0].record == RECORDS[1]


def test_adding_again_is_idempotent_and_stale_statements_are_removed(tmp_path: Path, embedder: Embedder) -> None:
    index = StatementIndex(tmp_path / "index", embedder)
    index.add(RECORDS)
    again = index.add(RECORDS)
    assert (again.added, again.unchanged, index.count()) == (0, 3, 3)
    revised = record("alg", "Nakayama, revised statement.", name="Nakayama")
    index.add([revised])
    assert index.remove_stale({"alg": {revised.id}}) == 1
    assert index.count() == 3
    assert index.get([RECORDS[0].id]) == []


def test_new_references_replace_the_record_and_keep_its_vector(tmp_path: Path) -> None:
    embedded: list[str] = []

    class Counting(HashingEmbedder):
        def embed_documents(self, texts, show_progress=False):  # type: ignore[no-untyped-def]
            embedded.extend(texts)
            return super().embed_documents(texts, show_progress)

    index = StatementIndex(tmp_path / "index", Counting())
    index.add(RECORDS)
    embedded.clear()
    referencing = dataclasses.replace(RECORDS[0], references=(LabelReference("top-lemma", "proof"),))
    result = index.add([referencing])
    assert (result.added, result.unchanged, result.updated) == (0, 0, 1) and embedded == []  # nothing re-embedded
    assert index.get([referencing.id])[0].references == referencing.references
    assert index.graph.uses(referencing.id)[0].label == "top-lemma"
    renamed = dataclasses.replace(referencing, name="Nakayama's lemma")  # the name is embedded: embedded again
    assert index.add([renamed]).updated == 1 and len(embedded) == 1


def test_index_refuses_another_embedder(tmp_path: Path, minilm: Embedder) -> None:
    StatementIndex(tmp_path / "index", minilm).add(RECORDS[:1])
    with pytest.raises(IndexMismatchError, match=r"all-MiniLM.*rag-app reindex"):
        StatementIndex(tmp_path / "index", Embedder("some/other-model"))


def test_reindex_switches_embedder_resumes_and_keeps_the_old_index_until_done(
    tmp_path: Path, minilm: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    registry = tmp_path / "models"
    random_adapter(registry)
    tuned = Embedder("registry:test-adapter", registry_dir=registry)
    directory = tmp_path / "index"
    index = StatementIndex(directory, minilm)
    index.add(RECORDS)
    index.rebuild_lexical()
    vectors = minilm.embed_documents([r.search_text() for r in RECORDS])
    before = {r.id: v for r, v in zip(RECORDS, vectors, strict=True)}

    # The process dies while writing the second batch of one statement.
    calls = {"n": 0}
    original = reindex_module._embed_into

    def dies_on_second_batch(store, model, records):
        calls["n"] += 1
        if calls["n"] == 2:
            raise KeyboardInterrupt
        return original(store, model, records)

    monkeypatch.setattr(reindex_module, "_embed_into", dies_on_second_batch)
    with pytest.raises(KeyboardInterrupt):
        reindex(directory, tuned, batch=1)
    monkeypatch.setattr(reindex_module, "_embed_into", original)
    # The old index still answers with the old embedder; the new one is still refused.
    assert (
        first_stage(StatementIndex(directory, minilm)).search("bounded entire", 1, SearchMode.DENSE)[0].record
        == RECORDS[2]
    )
    with pytest.raises(IndexMismatchError):
        StatementIndex(directory, tuned)

    result = reindex(directory, tuned)
    assert (result.previous, result.current) == (
        "packaged:all-MiniLM-L6-v2+unicode-math",
        "registry:test-adapter@v1+unicode-math",
    )
    assert (result.embedded, result.statements) == (2, 3)  # resumed: the first statement was done before
    reopened = StatementIndex(directory, tuned)
    assert reopened.manifest()["embedder"] == "registry:test-adapter@v1+unicode-math"
    assert reopened.store.collection_names() == [reopened.collection_name]  # the old vectors are gone
    stored = reopened.store.vectors([r.id for r in RECORDS])
    for r in RECORDS:
        assert float(stored[r.id] @ before[r.id]) < 0.999  # re-embedded, not copied
    assert first_stage(reopened).search("bounded entire function constant", 1)[0].record == RECORDS[2]
    with pytest.raises(IndexMismatchError, match="reindex"):
        StatementIndex(directory, minilm)
    assert reindex(directory, tuned).embedded == 0  # nothing to do


def test_empty_index_and_blank_query(tmp_path: Path, embedder: Embedder) -> None:
    index = StatementIndex(tmp_path / "index", embedder)
    assert first_stage(index).search("anything", 5) == []
    index.add(RECORDS)
    assert first_stage(index).search("   ", 5) == []
    assert first_stage(index).search("zzzz qqqq", 5, SearchMode.BM25) == []


def test_add_embedded_stores_vectors_computed_elsewhere(tmp_path: Path, embedder: Embedder) -> None:
    index = StatementIndex(tmp_path / "index", embedder)
    vectors = embedder.embed_documents([r.search_text() for r in RECORDS])
    assert index.add_embedded(RECORDS + RECORDS[:1], np.vstack([vectors, vectors[:1]])).added == 3
    assert index.add_embedded(RECORDS[:2], vectors[:2]).unchanged == 2
    assert index.count() == 3 and not index.lexical.stale  # BM25 got them too
    assert first_stage(index).search("Liouville", 1, SearchMode.BM25)[0].record == RECORDS[2]
    assert first_stage(index).search("bounded entire function", 1, SearchMode.DENSE)[0].record == RECORDS[2]
    with pytest.raises(ValueError, match="3 records but 2 vectors"):
        index.add_embedded(RECORDS, vectors[:2])


class _VectorsNotYetSeen:
    """A Chroma collection as a reader sees it while another process writes (issue 62, defect 1): the
    records of ``unseen`` are committed, but this process's copy of the vector index lacks them."""

    def __init__(self, collection: object, unseen: set[str]) -> None:
        self._collection, self._unseen = collection, unseen

    def get(self, ids: list[str] | None = None, include: list[str] | None = None, **kwargs: object) -> object:
        from chromadb.errors import InternalError

        if "embeddings" in (include or []) and self._unseen & set(ids or []):
            raise InternalError("Error executing plan: Internal error: Error finding id")
        return self._collection.get(ids=ids, include=include, **kwargs)  # type: ignore[attr-defined]

    def __getattr__(self, name: str) -> object:
        return getattr(self._collection, name)


def test_a_search_beside_a_writer_leaves_out_what_it_cannot_read_yet(tmp_path: Path, embedder: Embedder) -> None:
    index = StatementIndex(tmp_path / "index", embedder)
    index.add(RECORDS)
    store = index.store
    unseen = RECORDS[2].id
    store._opened = _VectorsNotYetSeen(store._opened, {unseen})  # type: ignore[assignment]
    records, vectors = store.get_with_vectors([r.id for r in RECORDS])
    assert [r.id for r in records] == [RECORDS[0].id, RECORDS[1].id] and set(vectors) == {r.id for r in records}
    hits = first_stage(index).run("bounded entire function constant compact Hausdorff", k=3, mode=SearchMode.BM25)
    assert [hit.record.id for hit in hits.hits] == [RECORDS[1].id]  # the Liouville match left out, no error


def test_a_reader_leaves_the_lexical_indexes_to_the_writer_at_work(tmp_path: Path, embedder: Embedder) -> None:
    # A search's first look at BM25 while another process's ingest is between its Chroma and BM25 writes
    # used to rebuild BM25 under the writer; now the writer's lock is left alone and the reader reads.
    directory = tmp_path / "index"
    StatementIndex(directory, embedder).add(RECORDS)
    reader, writer = StatementIndex(directory, embedder), StatementIndex(directory, embedder)
    reader.lexical.mark_stale()  # as a writer leaves it mid-batch
    rebuilt: list[bool] = []
    reader.rebuild_lexical = lambda show_progress=False: rebuilt.append(True)  # type: ignore[method-assign]
    with writer.writer.hold():
        assert reader.searchable_count() == len(RECORDS)
        assert rebuilt == [] and not reader._lexical_checked  # looked at again on the next search
    reader.searchable_count()
    assert rebuilt == [True]


def test_the_statements_kept_in_memory_follow_every_write_here_and_elsewhere(
    tmp_path: Path, embedder: Embedder
) -> None:
    """Searches read their candidates from the store's cache (retriever.store.record_cache): a statement
    renamed or deleted, by this index or by another writer of the same directory, is never served stale."""
    index = StatementIndex(tmp_path / "index", embedder)
    index.add(RECORDS)
    index.rebuild_lexical()
    query = "bounded entire functions are constant"

    def top() -> StatementRecord:
        return first_stage(index).search(query, 1, SearchMode.DENSE)[0].record

    assert top().name == "Liouville" and len(index.store.cache) > 0
    index.add([dataclasses.replace(RECORDS[2], name="Liouville's theorem")])  # a write here
    assert top().name == "Liouville's theorem"
    other = StatementIndex(tmp_path / "index", embedder)  # another writer of the same index
    other.add([dataclasses.replace(RECORDS[2], name="Liouville's bound")])
    assert top().name == "Liouville's bound"
    other.remove_papers(["ana"])
    assert top().id != RECORDS[2].id


def test_the_statements_kept_in_memory_are_bounded_and_a_read_older_than_a_write_is_not_kept(
    tmp_path: Path, embedder: Embedder
) -> None:
    index = StatementIndex(tmp_path / "index", embedder)
    index.add(RECORDS)
    store = index.store
    store.cache.max_statements = 2
    ids = [r.id for r in RECORDS]
    records, vectors = store.get_with_vectors(ids)
    assert [r.id for r in records] == ids and len(store.cache) == 2
    assert not vectors[ids[2]].flags.writeable  # a caller writing into a kept vector fails, not the cache
    again, again_vectors = store.get_with_vectors(ids)  # two from memory, one from Chroma
    assert again == records
    assert all(np.array_equal(again_vectors[i], vectors[i]) for i in ids)
    renamed = dataclasses.replace(RECORDS[0], name="Nakayama's lemma")
    store.upsert([renamed], np.stack([vectors[ids[0]]]))  # the store written directly (a reindex does)
    assert store.get_with_vectors([ids[0]])[0] == [renamed]
    generation = store.cache.generation
    store.cache.clear()  # a write landed while a read was under way
    store.cache.keep(generation, [(records[0], vectors[ids[0]].copy())])
    assert len(store.cache) == 0
