"""Server mode against a real `chroma run` on loopback; the HNSW parameters from settings."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import chromadb
import pytest

from rag_app import MathRAG
from rag_app.serving.chroma_server import ChromaServerProcess
from rag_app.serving.llm_server import free_port
from retriever import Embedder, SearchMode, StatementIndex
from retriever.storage.chroma_connection import ChromaConnection, HNSWParams, chroma_client_settings
from tests.conftest import make_settings
from tests.retriever.store.test_statement_index import PACKAGED, RECORDS
from tests.searchers import first_stage

# Trains, starts a server or browser, or reads real corpora: out of the fast tier.
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def chroma_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChromaServerProcess]:
    server = ChromaServerProcess(tmp_path_factory.mktemp("chroma-server") / "db", free_port())
    with server:
        yield server


@pytest.fixture(scope="module")
def embedder() -> Embedder:
    return Embedder(PACKAGED)


def test_an_index_on_a_chroma_server(chroma_server: ChromaServerProcess, embedder: Embedder, tmp_path: Path) -> None:
    hnsw = HNSWParams(ef_construction=64, ef_search=40, max_neighbors=12)
    connection = ChromaConnection(mode="server", url=chroma_server.url, collection_prefix="first-", hnsw=hnsw)
    index = StatementIndex(tmp_path / "index", embedder, connection=connection)
    assert index.add(RECORDS).added == 3
    index.rebuild_lexical()
    assert first_stage(index).search("bounded entire function", 1, SearchMode.DENSE)[0].record == RECORDS[2]
    assert not (tmp_path / "index" / "chroma").exists(), "the vectors live on the server"

    # The server holds them: another client, another index object, another directory for BM25.
    client = chromadb.HttpClient(host="127.0.0.1", port=chroma_server.port, settings=chroma_client_settings())
    stored = client.get_collection("first-statements")
    assert stored.count() == 3
    config = stored.configuration["hnsw"]
    assert (config["ef_construction"], config["ef_search"], config["max_neighbors"]) == (64, 40, 12)
    reopened = StatementIndex(tmp_path / "index", embedder, connection=connection)
    assert reopened.count() == 3
    assert first_stage(reopened).search("compact Hausdorff closed", 1, SearchMode.HYBRID)[0].record == RECORDS[1]

    # ef_search may change on an existing collection; the build-time parameters stay.
    wider = ChromaConnection(
        mode="server", url=chroma_server.url, collection_prefix="first-", hnsw=HNSWParams(ef_search=200)
    )
    StatementIndex(tmp_path / "index", embedder, connection=wider)
    config = client.get_collection("first-statements").configuration["hnsw"]
    assert (config["ef_search"], config["max_neighbors"]) == (200, 12)

    # A second index on the same server, with its own prefix, sees none of the first one's statements.
    other = ChromaConnection(mode="server", url=chroma_server.url, collection_prefix="second-")
    assert StatementIndex(tmp_path / "other", embedder, connection=other).count() == 0


def test_server_mode_from_settings_ingests_and_answers_searches(
    chroma_server: ChromaServerProcess, tmp_path: Path
) -> None:
    settings = make_settings(tmp_path, store={"mode": "server", "url": chroma_server.url, "collection_prefix": "demo-"})
    rag = MathRAG(settings)
    report = rag.ingest_demo()
    assert report.errors == [] and report.statements > 100
    hits = rag.search("orthonormal basis of eigenvectors of a symmetric matrix", 3)
    assert "Spectral" in hits[0].record.name
    manifest = json.loads((tmp_path / "index" / "manifest.json").read_text())
    assert manifest["collection"] == "statements"
    assert not (tmp_path / "index" / "chroma").exists()


def test_an_unreachable_server_is_a_clear_error(tmp_path: Path, embedder: Embedder) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(ConnectionError, match=f"cannot reach the Chroma server at {url}"):
        StatementIndex(tmp_path / "index", embedder, connection=ChromaConnection(mode="server", url=url))


def test_embedded_mode_applies_the_hnsw_parameters(tmp_path: Path, embedder: Embedder) -> None:
    connection = ChromaConnection(hnsw=HNSWParams(ef_construction=50, max_neighbors=8))
    StatementIndex(tmp_path / "index", embedder, connection=connection).add(RECORDS)
    client = chromadb.PersistentClient(path=str(tmp_path / "index" / "chroma"), settings=chroma_client_settings())
    config = client.get_collection("statements").configuration["hnsw"]
    assert (config["space"], config["ef_construction"], config["max_neighbors"]) == ("cosine", 50, 8)
