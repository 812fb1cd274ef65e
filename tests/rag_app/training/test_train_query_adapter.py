"""`train query-adapter` on the demo index: the trained map moves typed queries toward their statements."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from rag_app.cli import app
from rag_app.pipeline import MathRAG
from rag_app.search.embedder_factory import make_embedder
from rag_app.settings import Settings
from rag_app.training.train_query_adapter import TrainQueryAdapterJob
from retriever.models.query_adapter import QueryAdapter
from tests.conftest import make_settings

# Trains, starts a server or browser, or reads real corpora: out of the fast tier.
pytestmark = pytest.mark.slow

MINILM = "packaged:all-MiniLM-L6-v2+unicode-math"


def test_trained_adapter_ranks_training_queries_higher_and_reports_held_out(
    demo_index_dir: Path, tmp_path: Path
) -> None:
    settings = make_settings(tmp_path, index_dir=demo_index_dir)
    settings.training.query_adapter.epochs = 30  # the demo corpus is small: more passes over few pairs
    settings.retrieval.query_adapter = "none"  # the baseline below: not the packaged adapter
    job = TrainQueryAdapterJob(settings, demo_index_dir, tmp_path / "adapter")
    embedder = make_embedder(settings)
    report = job.run(embedder, log=lambda _m: None)
    adapter = QueryAdapter.load(str(report.directory), embedder.identity)
    card = adapter.card
    assert card["data"]["pairs"] == sum(report.pairs.values()) > 0 and "section" not in report.pairs
    assert card["metrics"]["held_out"]["queries"] >= 0 and len(card["losses"]) == 30
    assert card["losses"][-1] < card["losses"][0]

    # The pairs it trained on: the positive's rank among all statements improves on average.
    rag = MathRAG(settings)
    store = rag.index.store
    records = {r.id: r for r in store.iter_records()}
    from rag_app.datasets.paper_split import split_of
    from rag_app.training.training_pairs import pairs_without_llm

    split = split_of(list(records.values()), settings.training.embed)
    pairs = [p for p in pairs_without_llm(split.training_records(records.values())) if p.kind == "label"][:20]
    ids = sorted(records)
    vectors = store.vectors(ids)
    matrix = np.stack([vectors[i] for i in ids])

    def mean_rank(adapt: bool) -> float:
        ranks = []
        for pair in pairs:
            query = embedder.embed_query(pair.anchor)
            query = adapter.apply(query) if adapt else query
            order = np.argsort(-(matrix @ query))
            ranks.append(int(np.where(np.array(ids)[order] == pair.statement_id)[0][0]))
        return float(np.mean(ranks))

    assert pairs and mean_rank(adapt=True) < mean_rank(adapt=False)

    # The dense channel reads it when the settings name it; the other channels do not change.
    adapted = MathRAG(settings.model_copy(update={"retrieval": settings.retrieval.model_copy(
        update={"query_adapter": str(report.directory)})}))  # fmt: skip
    assert adapted.search_stack.ranker.query_adapter is not None and rag.search_stack.ranker.query_adapter is None
    query = pairs[0].anchor
    assert [h.record.id for h in adapted.search_stack.first_stage().search(query, 5, "bm25")] == [
        h.record.id for h in rag.search_stack.first_stage().search(query, 5, "bm25")
    ]


def test_cli_refuses_an_adapter_of_another_embedder(demo_index_dir: Path, tmp_path: Path, monkeypatch) -> None:
    QueryAdapter.identity_map(384, {"kind": "query-adapter", "embedder": "registry:other@v1"}).save(tmp_path / "qa")
    monkeypatch.setenv("RAG_APP_RETRIEVAL__QUERY_ADAPTER", str(tmp_path / "qa"))
    monkeypatch.setenv("RAG_APP_DATA_DIR", str(tmp_path / "data"))
    result = CliRunner().invoke(app, ["search", "compact sets", "--index", str(demo_index_dir), "--json"])
    assert result.exit_code != 0
    message = str(result.exception) + result.output
    assert "registry:other@v1" in message and "rag-app train query-adapter" in message


def test_an_adapter_is_trained_for_the_second_models_vectors(demo_index_dir: Path, tmp_path: Path, monkeypatch) -> None:
    index_dir = tmp_path / "index"
    shutil.copytree(demo_index_dir, index_dir)  # the second model's vectors are written into the index
    monkeypatch.setenv("RAG_APP_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("RAG_APP_TRAINING__QUERY_ADAPTER__EPOCHS", "30")
    runner = CliRunner()
    train = ["train", "query-adapter", "--second-embedding", "--index", str(index_dir), "--json"]

    off = runner.invoke(app, train)  # the second model is opt-in
    assert off.exit_code == 2 and "second_embedding.model" in off.output

    # MiniLM again as the second model (fast): its vectors are the dense2 collection's, not the index's.
    monkeypatch.setenv("RAG_APP_SECOND_EMBEDDING__MODEL", "packaged:all-MiniLM-L6-v2")
    unbuilt = runner.invoke(app, train)
    assert unbuilt.exit_code == 2 and "rag-app build-dense2" in unbuilt.output

    assert runner.invoke(app, ["build-dense2", "--index", str(index_dir), "--json"]).exit_code == 0
    result = runner.invoke(app, train)
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert summary["directory"] == str(tmp_path / "data" / "models" / "query-adapters" / "math-query-adapter-dense2")
    assert summary["embedder"] == MINILM and "formula" not in summary["pairs"]
    adapter = QueryAdapter.load(summary["directory"], MINILM)
    assert adapter.card["vectors"] == "dense2" and adapter.card["losses"][-1] < adapter.card["losses"][0]

    # Named in the settings, the second model's channel searches with the adapted query vector.
    monkeypatch.setenv("RAG_APP_SECOND_EMBEDDING__QUERY_ADAPTER", summary["directory"])
    second = MathRAG(Settings.load()).indexes.companion_index()
    assert second is not None and second.query_adapter is not None
    query = "the closure of a compact set"
    vector = adapter.apply(second.embedder.embed_query(query))
    expected = second._vectors().query(query_embeddings=[vector], n_results=5)["ids"][0]
    assert [hit.id for hit in second.search(query, 5)] == expected
