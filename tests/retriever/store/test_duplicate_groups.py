"""Duplicate groups: exact and near restatements across papers, kept beside the index; one result per group."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ingestion.records import Source, StatementKind, StatementRecord
from retriever.search.duplicate_collapsing_searcher import DuplicateCollapsingSearcher
from retriever.search_filter import SearchFilter
from retriever.store.duplicate_groups import DuplicateGroups, formula_key, rebuild, text_key
from retriever.types import ScoredId, SearchHit


def record(rid: str, paper: str, text: str, formulas: tuple[str, ...] = (), **metadata: object) -> StatementRecord:
    return StatementRecord(
        id=rid,
        source=Source.MSE if paper.startswith("mse-") else Source.ARXIV,
        kind=StatementKind.LEMMA,
        text=text,
        paper_id=paper,
        formulas=formulas,
        title=f"Title of {paper}",
        url=f"https://arxiv.org/abs/{paper}",
        metadata=metadata,  # type: ignore[arg-type]
    )


class FakeVectors:
    """Nearest neighbours by cosine among the vectors added so far (what the Chroma store answers)."""

    def __init__(self) -> None:
        self.ids: list[str] = []
        self.vectors: list[np.ndarray] = []

    def put(self, records: list[StatementRecord], vectors: np.ndarray) -> None:
        for r, v in zip(records, vectors, strict=True):
            self.ids.append(r.id)
            self.vectors.append(v / np.linalg.norm(v))

    def query_many(self, embeddings: np.ndarray, k: int) -> list[list[ScoredId]]:
        stored = np.stack(self.vectors)
        result = []
        for e in embeddings:
            scores = stored @ (e / np.linalg.norm(e))
            order = np.argsort(-scores)[:k]
            result.append([ScoredId(self.ids[i], float(scores[i])) for i in order])
        return result


def add(groups: DuplicateGroups, store: FakeVectors, records: list[StatementRecord], vectors: list[list[float]]) -> int:
    array = np.asarray(vectors, dtype=np.float32)
    store.put(records, array)  # the index stores the vectors first, then records the groups
    return groups.add(records, array, store)


def test_keys_ignore_spacing_case_labels_articles_and_reference_numbers_but_not_formulas() -> None:
    a = record("a", "p1", "In Situation 29.1 let $K + 1$ be as in Lemma 29.2. \\label{x} Then $K$ is finite.")
    b = record("b", "p2", "in situation 13.1 let $K+1$  be as in lemma 13.2. then the $K$ is finite")
    c = record("c", "p3", "In Situation 29.1 let $K + 2$ be as in Lemma 29.2. Then $K$ is finite.")
    assert text_key(a) == text_key(b) and text_key(a) != text_key(c)
    assert formula_key(record("d", "p", "", ("x + y", "z"))) == formula_key(record("e", "q", "", ("z", "x+y")))


def test_exact_and_near_duplicates_join_one_group_and_close_but_different_statements_do_not(tmp_path: Path) -> None:
    groups, store = DuplicateGroups(tmp_path, threshold=0.97, max_word_difference=1), FakeVectors()
    original = record("o", "2501.00001", "Every compact metric space is complete.")
    copy = record("c", "2502.00002", "every compact  metric space is complete")  # normalized text equal
    reworded = record("r", "2503.00003", "Every compact metric space is always complete.")  # a word more, cosine 0.99
    other = record("x", "2504.00004", "Every compact metric space is separable.")  # a word replaced: two differ
    setting = record("s", "2505.00005", "Every compact metric space of finite dimension is complete.")  # 3 words
    same_paper = record("v", "2501.00001", "Every compact metric space is complete!")  # another version's text
    assert add(groups, store, [original], [[1, 0, 0]]) == 0
    assert add(groups, store, [copy, reworded], [[0.2, 1, 0], [1, 0.1, 0]]) == 2
    # `v` restates `c` (another paper), so it joins; its own paper's `o` is never one of its other places.
    assert add(groups, store, [other, setting, same_paper], [[1, 0.05, 0], [1, 0.05, 0.01], [1, 0, 0]]) == 1
    assert list(groups.groups()) == [["c", "o", "r", "v"]]
    assert [p.id for p in groups.places(["v"])["v"]] == ["c", "r"]
    places = groups.places(["o", "x"])
    assert [p.id for p in places["o"]] == ["c", "r"] and "x" not in places
    assert places["o"][0].paper_id == "2502.00002" and places["o"][0].title == "Title of 2502.00002"
    # A deleted statement (an old version, a deleted post) leaves its group.
    groups.remove(["c"])
    assert list(groups.groups()) == [["o", "r", "v"]] and groups.count() == 5


def test_short_texts_without_formulas_are_not_duplicates_by_text(tmp_path: Path) -> None:
    groups, store = DuplicateGroups(tmp_path), FakeVectors()
    short = [record("a", "p1", "See above."), record("b", "p2", "See above."), record("c", "p3", "Obvious: $x = x$.")]
    more = [record("d", "p4", "Obvious: $x=x$.")]
    assert add(groups, store, short, [[1, 0, 0], [0, 1, 0], [0, 0, 1]]) == 0
    assert add(groups, store, more, [[0.5, 0.5, 0]]) == 1  # a formula makes even a short text count
    assert list(groups.groups()) == [["c", "d"]]


def test_near_duplicates_need_equal_formulas(tmp_path: Path) -> None:
    groups, store = DuplicateGroups(tmp_path), FakeVectors()
    a = record("a", "p1", "Then $x^2 \\geq 0$ holds.", ("x^2 \\geq 0",))
    b = record("b", "p2", "Then $x^3 \\geq 0$ holds.", ("x^3 \\geq 0",))
    assert add(groups, store, [a, b], [[1, 0], [1, 0.01]]) == 0 and list(groups.groups()) == []


def test_an_mse_thread_is_one_place_and_rebuild_recomputes(tmp_path: Path) -> None:
    groups, store = DuplicateGroups(tmp_path), FakeVectors()
    question = record("q", "mse-10", "Is every finite group of order $p^2$ abelian?", question_id=10)
    answer = record("a", "mse-11", "Is every finite group of order $p^2$ abelian?", question_id=10)
    elsewhere = record("e", "mse-20", "is every finite group of order $p^2$ abelian", question_id=20)
    records = [question, answer, elsewhere]
    vectors = np.asarray([[1, 0], [1, 0], [1, 0]], dtype=np.float32)
    store.put(records, vectors)
    assert rebuild(groups, [(records[:1], vectors[:1]), (records[1:], vectors[1:])], store) == 2
    assert list(groups.groups()) == [["a", "e", "q"]]
    # The answer's own thread is not "another place" for it.
    assert [p.id for p in groups.places(["a"])["a"]] == ["e"]


class ListSearcher:
    def __init__(self, hits: list[SearchHit]) -> None:
        self.hits = hits
        self.depths: list[int] = []

    def search(self, query: str, k: int, mode: str = "hybrid", where: SearchFilter | None = None) -> list[SearchHit]:
        self.depths.append(k)
        return self.hits[:k]


def test_collapsing_shows_each_group_once_keeps_k_results_and_names_the_other_places(tmp_path: Path) -> None:
    groups, store = DuplicateGroups(tmp_path), FakeVectors()
    records = [record(f"s{i}", f"p{i}", f"Statement number {chr(97 + i)} is true.") for i in range(6)]
    copies = [record(f"c{i}", f"q{i}", f"statement number {chr(97 + i)} is true") for i in range(3)]
    vectors = np.eye(9, dtype=np.float32)
    add(groups, store, records + copies, vectors.tolist())
    # The copies score just below their originals, and take places a plain search would give them.
    ranked = [records[0], copies[0], records[1], copies[1], copies[2], records[2], records[3], records[4], records[5]]
    inner = ListSearcher([SearchHit(r, 1 - n / 10, n) for n, r in enumerate(ranked, start=1)])
    hits = DuplicateCollapsingSearcher(inner, groups, extra=1).search("q", 4, "hybrid")
    assert [h.record.id for h in hits] == ["s0", "s1", "c2", "s3"] and [h.rank for h in hits] == [1, 2, 3, 4]
    assert [p.id for p in hits[0].duplicates] == ["c0"] and [p.id for p in hits[2].duplicates] == ["s2"]
    assert hits[3].duplicates == () and hits[0].to_dict()["duplicates"][0]["paper_id"] == "q0"
    assert inner.depths == [5, 10]  # searched deeper when groups left fewer than k
