"""The segmented BM25 index: bm25s' scores, in-place updates, deletes, merges and reopening."""

from __future__ import annotations

import random
from pathlib import Path

import bm25s
import numpy as np
import pytest

from retriever.storage import bm25_index, bm25_scoring
from retriever.storage.bm25_index import BM25Index
from retriever.storage.bm25_segment import BM25Segment

VOCABULARY = [f"t{number}" for number in range(400)]


def corpus(count: int, seed: int = 0) -> tuple[list[str], list[list[str]]]:
    """Documents with a skewed vocabulary (some terms in most documents, most in few) and mixed lengths."""
    rng = random.Random(seed)
    documents = [
        [rng.choice(VOCABULARY[: rng.choice([8, 60, 400])]) for _ in range(rng.randint(0, 40))] for _ in range(count)
    ]
    return [f"d{seed}-{number}" for number in range(count)], documents


def queries(count: int, seed: int = 1) -> list[list[str]]:
    rng = random.Random(seed)
    return [[rng.choice(VOCABULARY) for _ in range(rng.randint(1, 6))] + ["unknown"] for _ in range(count)]


@pytest.mark.parametrize(("k1", "b"), [(1.2, 0.75), (0.9, 0.6)])
def test_scores_equal_bm25s_when_built_in_many_batches(tmp_path: Path, k1: float, b: float) -> None:
    ids, documents = corpus(1500)
    index = BM25Index(tmp_path / "bm25", k1, b)
    for start in range(0, len(ids), 100):  # 15 writes: merges happen on the way
        index.add(ids[start : start + 100], documents[start : start + 100])
    assert len(index) == 1500 and 1 < index.segment_count < 15
    model = bm25s.BM25(k1=k1, b=b)
    model.index([terms or ["\x00empty"] for terms in documents], show_progress=False)
    for query in queries(40):
        known = [term for term in query if term in model.vocab_dict]
        reference_ids, reference = model.retrieve([known], k=10, show_progress=False, n_threads=1)
        hits = index.search_terms(query, 10)
        expected = [float(s) for s in reference[0] if s > 0]
        # bm25s counts an empty document as one placeholder term (average length): hence the tolerance
        np.testing.assert_allclose([hit.score for hit in hits], expected, rtol=2e-3)
        assert hits[0].id == ids[int(reference_ids[0][0])] or hits[0].score == pytest.approx(hits[1].score)


def test_deleted_documents_are_never_returned_and_merges_drop_them(tmp_path: Path) -> None:
    ids, documents = corpus(600)
    index = BM25Index(tmp_path / "bm25")
    index.add(ids, documents)
    gone = set(ids[:250])
    assert index.delete([*gone, "never-indexed"]) == 250
    assert len(index) == 350
    for query in queries(30):
        assert not {hit.id for hit in index.search_terms(query, 50)} & gone
    # 250 of 600 rows deleted is past DELETED_SHARE: the segment was rewritten without them
    assert index.segment_count == 1
    segment = index._segments[0]
    assert segment.segment.size == 350 and len(segment.deleted) == 0
    # once merged away they leave the statistics: scores now equal a fresh index of the survivors
    fresh = BM25Index.build_from_tokens(ids[250:], documents[250:])
    for query in queries(20, seed=5):
        assert [h.score for h in index.search_terms(query, 5)] == pytest.approx(
            [h.score for h in fresh.search_terms(query, 5)], rel=1e-5
        )


def test_adding_an_id_again_replaces_the_document() -> None:
    index = BM25Index.build_from_tokens(["a", "b"], [["alpha", "beta"], ["beta"]])
    index.add(["a"], [["gamma"]])
    assert len(index) == 2
    assert index.search_terms(["alpha"], 5) == []
    assert [hit.id for hit in index.search_terms(["gamma"], 5)] == ["a"]


def test_segments_stay_few_as_batches_accumulate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bm25_index, "SMALLEST_SEGMENT", 20)
    index = BM25Index(tmp_path / "bm25")
    ids, documents = corpus(2000, seed=3)
    for start in range(0, 2000, 20):  # 100 writes of 20
        index.add(ids[start : start + 20], documents[start : start + 20])
    # size classes 20, 80, 320, 1280, ...: at most MERGE_FACTOR - 1 segments in each of about five classes
    assert len(index) == 2000 and index.segment_count <= 3 * 5
    assert sorted(index.ids) == sorted(ids)


def test_a_second_reader_sees_committed_writes_and_reopening_keeps_everything(tmp_path: Path) -> None:
    ids, documents = corpus(300)
    writer = BM25Index(tmp_path / "bm25")
    writer.add(ids[:200], documents[:200])
    reader = BM25Index(tmp_path / "bm25")  # another process would open it the same way
    assert len(reader) == 200
    writer.add(ids[200:], documents[200:])
    writer.delete(ids[:10])
    assert len(reader) == 290
    query = documents[250][:3]
    assert [h.id for h in reader.search_terms(query, 5)] == [h.id for h in writer.search_terms(query, 5)]
    writer.close()
    reopened = BM25Index(tmp_path / "bm25")
    assert len(reopened) == 290 and ids[0] not in {h.id for h in reopened.search_terms(documents[0], 300)}


def test_a_segment_written_by_a_crashed_write_is_ignored_and_removed(tmp_path: Path) -> None:
    index = BM25Index(tmp_path / "bm25")
    index.add(["a"], [["alpha"]])
    orphan = tmp_path / "bm25" / bm25_index.SEGMENTS / "99999999"
    BM25Segment.from_documents("99999999", ["ghost"], [np.array([0])]).save(orphan)
    assert [h.id for h in BM25Index(tmp_path / "bm25").search_terms(["alpha"], 5)] == ["a"]
    index.add(["b"], [["beta"]])
    assert not orphan.exists()


def test_empty_documents_and_an_empty_index() -> None:
    index = BM25Index()
    assert index.search("anything", 3) == [] and len(index) == 0
    index.add(["empty", "full"], [[], ["word"]])
    assert [h.id for h in index.search_terms(["word"], 3)] == ["full"]
    index.clear()
    assert len(index) == 0 and index.search_terms(["word"], 3) == []


def test_maxscore_pruning_returns_the_exhaustive_top_k(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(7)
    common = [f"c{n}" for n in range(6)]  # in most documents, as `x` and `^` are in most formulas
    topics = [[f"t{t}r{n}" for n in range(5)] for t in range(200)]  # each in 15 documents: 0.5% of them
    documents = []
    for number in range(3000):
        terms = rng.sample(topics[number % 200], rng.randint(1, 5))
        terms += [term for term in common if rng.random() < 0.6 for _ in range(rng.choice([1, 2, 8]))]
        documents.append(terms + ["filler"] * rng.randint(0, 40))
    ids = [f"d{n}" for n in range(len(documents))]
    index = BM25Index.build_from_tokens(ids[:1500], documents[:1500])
    index.add(ids[1500:], documents[1500:])  # two segments
    index.delete(ids[:30])
    pruned_calls = []
    original = bm25_scoring.score_candidates

    def spy(*args: object) -> None:
        pruned_calls.append(1)
        original(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(bm25_scoring, "score_candidates", spy)
    queries = [[*common, *topic] for topic in topics[:100]]
    pruned = [index.search_terms(query, 10) for query in queries]
    assert len(pruned_calls) > 50, "the common terms were seldom pruned"
    monkeypatch.setattr(bm25_scoring, "COMMON_SHARE", 1.0)  # every term scored over all its postings
    exhaustive = [index.search_terms(query, 10) for query in queries]
    # the same documents in the same order (a bound 0.3 times too small changes 2 of these 100 rankings)
    assert [[hit.id for hit in hits] for hits in pruned] == [[hit.id for hit in hits] for hits in exhaustive]
    assert [hit.score for hits in pruned for hit in hits] == pytest.approx(
        [hit.score for hits in exhaustive for hit in hits], rel=1e-6
    )


def test_a_damaged_catalogue_is_named_on_opening_and_on_searching(tmp_path: Path) -> None:
    from retriever.storage.bm25_index import DATABASE, BM25CatalogueError

    index = BM25Index(tmp_path / "bm25")
    index.add(["a", "b"], [["prime", "group"], ["compact", "space"]])
    index.close()
    catalogue = tmp_path / "bm25" / DATABASE
    catalogue.write_bytes(b"\x00garbage" * 512)
    with pytest.raises(BM25CatalogueError, match=f"{catalogue} is damaged .*rag-app repair"):
        BM25Index(tmp_path / "bm25").search("prime", 1)


def test_a_loaded_segment_is_read_from_its_files_as_plain_read_only_arrays(tmp_path: Path) -> None:
    """Mapped from the files (an index larger than memory stays on disk), but each array a plain ndarray:
    a slice of a np.memmap is another memmap, built at some 4 µs each, hundreds of them a search."""
    ids = ["a", "b", "c"]
    documents = [np.array([1, 2], dtype=np.int64), np.array([2, 3, 3], dtype=np.int64), np.array([1], dtype=np.int64)]
    BM25Segment.from_documents("s1", ids, documents).save(tmp_path / "s1")
    loaded = BM25Segment.load(tmp_path / "s1")
    rows, tf = loaded.postings(int(loaded.locate(np.array([2]))[0]))
    assert type(rows) is np.ndarray and type(tf) is np.ndarray and list(rows) == [0, 1]
    assert isinstance(loaded.rows.base, np.memmap) and not loaded.rows.flags.writeable
