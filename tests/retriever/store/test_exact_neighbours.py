"""Exact dense search below a size limit: the same ranking in every process (issue 86).

Units over a real Chroma store on disk; the two-process test runs the real CLI twice on the demo index.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from ingestion.records import Source, StatementKind, StatementRecord, statement_id
from retriever.storage.chroma_connection import EMBEDDED, ChromaConnection
from retriever.store.chroma_store import ChromaStatementStore

ROOT = Path(__file__).resolve().parents[3]


def record(number: int) -> StatementRecord:
    text = f"Statement number {number}."
    return StatementRecord(
        id=statement_id("local", "paper", "lemma", text),
        source=Source.LOCAL,
        kind=StatementKind.LEMMA,
        text=text,
        paper_id="paper",
    )


def store_of(path: Path, vectors: np.ndarray, exact_max: int = 100_000) -> tuple[ChromaStatementStore, list[str]]:
    connection = ChromaConnection(hnsw=replace(EMBEDDED.hnsw, exact_search_max=exact_max))
    store = ChromaStatementStore(path, connection=connection)
    records = [record(number) for number in range(len(vectors))]
    store.upsert(records, vectors)
    return store, [r.id for r in records]


def test_the_exact_search_is_the_brute_force_ranking_with_ties_by_id(tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    vectors = rng.standard_normal((300, 16)).astype(np.float32)
    vectors[11] = vectors[10]  # the same vector twice (a duplicate statement): a tie, broken by id
    store, ids = store_of(tmp_path / "chroma", vectors)
    query = vectors[10] + 0.01 * rng.standard_normal(16).astype(np.float32)
    found = store.query(query, 20)
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    scores = unit @ (query / np.linalg.norm(query))
    expected = sorted(range(len(ids)), key=lambda row: (-float(scores[row]), ids[row]))[:20]
    assert [hit.id for hit in found] == [ids[row] for row in expected]
    assert found[0].score == pytest.approx(float(scores[10]), abs=1e-5)
    tied = [hit.id for hit in found[:2]]
    assert tied == sorted([ids[10], ids[11]]), "equal scores come in id order, whatever Chroma's order"


def test_a_write_is_searched_at_once_and_a_large_collection_uses_the_graph(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    vectors = rng.standard_normal((50, 8)).astype(np.float32)
    store, _ids = store_of(tmp_path / "exact", vectors)
    assert len(store.query(vectors[0], 5)) == 5
    new = record(999)
    store.upsert([new], (vectors[0] * -1).reshape(1, -1))  # the opposite direction: last before the write
    assert store.query(vectors[0] * -1, 1)[0].id == new.id, "the matrix was read again after the write"
    store.delete([new.id])
    assert new.id not in {hit.id for hit in store.query(vectors[0] * -1, 50)}

    graph, graph_ids = store_of(tmp_path / "graph", vectors, exact_max=10)  # over the limit: HNSW answers
    collection = graph._collection
    assert graph.exact.nearest("collection", collection.count, lambda: ([], vectors), vectors[:1], 5) is None
    assert graph.query(vectors[4], 1)[0].id == graph_ids[4]


def test_two_fresh_processes_rank_every_research_question_the_same(demo_index_dir: Path, tmp_path: Path) -> None:
    lines = (ROOT / "eval" / "questions" / "research-questions.v1.jsonl").read_text(encoding="utf-8").splitlines()
    questions = [json.loads(line)["query"] for line in lines[1:]]
    queries = tmp_path / "queries.txt"
    queries.write_text("\n".join(questions) + "\n", encoding="utf-8")
    command = [sys.executable, "-m", "rag_app.cli", "search", "--queries", str(queries), "--json", "--k", "10",
               "--index", str(demo_index_dir)]  # fmt: skip
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "ANONYMIZED_TELEMETRY": "False"}

    # the two processes run side by side (each loads its models while the other does)
    running = [subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
               for _ in range(2)]  # fmt: skip
    outputs = [process.communicate(timeout=600) for process in running]
    assert [process.returncode for process in running] == [0, 0], [err[-2000:] for _, err in outputs]
    first, second = ([[hit["id"] for hit in json.loads(line)["results"]] for line in out.splitlines()]
                     for out, _ in outputs)  # fmt: skip
    assert len(first) == len(questions) == 103
    differ = [questions[i] for i, (a, b) in enumerate(zip(first, second, strict=True)) if a != b]
    assert not differ, f"{len(differ)} of {len(questions)} questions ranked differently: {differ[:3]}"


def test_every_listed_id_deleted_before_its_vector_is_read_leaves_an_empty_search() -> None:
    """Issue 93: a writer deleted every statement between the read of the ids and the read of their vectors, and
    ``np.vstack([])`` raised ValueError in the middle of a search."""
    from retriever.store.exact_neighbours import ExactNeighbours, collection_matrix

    class DeletedMeanwhile:
        """A collection whose ids are listed, then gone when their vectors are asked for."""

        def count(self) -> int:
            return 2

        def get(self, ids: list[str] | None = None, include: list[str] | None = None) -> dict[str, list]:
            if ids is None:
                return {"ids": ["a", "b"]}
            return {"ids": [], "embeddings": []}

    collection = DeletedMeanwhile()
    found = ExactNeighbours(max_vectors=10).nearest(
        "collection", collection.count, lambda: collection_matrix(collection), np.ones((1, 4), dtype=np.float32), k=3
    )
    assert found == [[]]


def test_a_batch_chroma_cannot_read_yet_is_read_id_by_id_and_the_unreadable_ids_left_out() -> None:
    """The second model's collection beside a writer in another process: Chroma fails a batch with "Error finding
    id" when its records hold an id this process's vector index has not got yet."""
    from chromadb.errors import InternalError

    from retriever.store.exact_neighbours import collection_matrix

    class HalfWritten:
        def get(self, ids: list[str] | None = None, include: list[str] | None = None) -> dict[str, list]:
            if ids is None:
                return {"ids": ["a", "b", "c"]}
            if "b" in ids:
                raise InternalError("Error executing plan: Internal error: Error finding id")
            return {"ids": ids, "embeddings": [[1.0, 0.0]] * len(ids)}

    ids, matrix = collection_matrix(HalfWritten())  # type: ignore[arg-type]
    assert ids == ["a", "c"] and matrix.shape == (2, 2)
