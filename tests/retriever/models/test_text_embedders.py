"""The embedders other than sentence-transformers: the packaged GGUF model read by llama.cpp, and an
OpenAI-compatible ``/v1/embeddings`` server (here llama.cpp's own server on loopback, as vLLM on a GPU)."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import numpy as np
import pytest

from retriever.models.embedder_backends import embedder_for
from retriever.models.embedding_prefixes import EmbeddingPrefixes
from retriever.models.gguf_embedder import GgufEmbedder
from retriever.models.openai_embedder import EmbeddingServerError, OpenAIEmbedder
from retriever.models.packaged_gguf import NOMIC_EMBED_TEXT_V1_5

STATEMENTS = [
    "Nakayama's lemma. Let $R$ be a ring, $I$ an ideal contained in the Jacobson radical and $M$ a finite "
    "$R$-module with $IM = M$. Then $M = 0$.",
    "Fatou's lemma. For nonnegative measurable $f_n$, $\\int \\liminf f_n \\le \\liminf \\int f_n$.",
    "Liouville's theorem. A bounded entire function is constant.",
]
QUERIES = [
    "finite module IM = M implies M = 0",
    "integral of liminf of nonnegative functions",
    "bounded entire function",
]


@pytest.fixture(scope="module")
def nomic() -> GgufEmbedder:
    embedder = embedder_for("packaged:nomic-embed-text-v1.5", max_seq_length=128)
    assert isinstance(embedder, GgufEmbedder)
    return embedder


def test_the_packaged_gguf_model_finds_each_statement_by_its_question(nomic: GgufEmbedder) -> None:
    statements = nomic.embed_documents(STATEMENTS)
    queries = nomic.embed_queries(QUERIES)
    assert statements.shape == (3, 768) and np.allclose(np.linalg.norm(statements, axis=1), 1, atol=1e-5)
    assert list((queries @ statements.T).argmax(axis=1)) == [0, 1, 2]
    assert np.allclose(nomic.embed_query(QUERIES[0]), queries[0], atol=1e-5)
    # the identity names the model and the text form, as an index records it
    assert nomic.identity == "packaged:nomic-embed-text-v1.5+unicode-math" and nomic.dimension == 768
    assert nomic.prefixes == EmbeddingPrefixes("search_query: ", "search_document: ")


def test_a_statement_longer_than_max_seq_length_is_cut_not_refused(nomic: GgufEmbedder) -> None:
    long_statement = STATEMENTS[0] + " Moreover" * 600
    vector = nomic.embed_documents([long_statement])
    assert vector.shape == (1, 768) and np.isfinite(vector).all()


def test_formula_fusion_is_refused_by_name(nomic: GgufEmbedder) -> None:
    with pytest.raises(NotImplementedError, match="sentence-transformers"):
        nomic.embed_with_tokens(STATEMENTS)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="module")
def embeddings_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """llama.cpp's OpenAI-compatible server serving the packaged nomic model's embeddings on loopback."""
    port = free_port()
    log = tmp_path_factory.mktemp("embeddings-server") / "server.log"
    with log.open("w") as out:
        server = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "llama_cpp.server",
                "--model",
                str(NOMIC_EMBED_TEXT_V1_5.path()),
                "--model_alias",
                "nomic-embed-text-v1.5",
                "--embedding",
                "true",
                "--n_ctx",
                "512",
                "--n_batch",
                "512",
                "--n_ubatch",
                "512",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if server.poll() is not None:
                pytest.fail(f"the embeddings server exited: {log.read_text()[-2000:]}")
            try:
                if httpx.get(f"{base_url}/models", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.5)
        yield base_url
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_an_embeddings_server_gives_the_vectors_llama_cpp_gives_here(
    embeddings_server: str, nomic: GgufEmbedder
) -> None:
    served = embedder_for(f"openai:nomic-embed-text-v1.5@{embeddings_server}", max_seq_length=128)
    assert isinstance(served, OpenAIEmbedder) and served.identity == "openai:nomic-embed-text-v1.5+unicode-math"
    statements = served.embed_documents(STATEMENTS)
    queries = served.embed_queries(QUERIES)
    assert list((queries @ statements.T).argmax(axis=1)) == [0, 1, 2]
    # the same model and prefixes: the same vectors as in process
    assert (np.sum(statements * nomic.embed_documents(STATEMENTS), axis=1) > 0.99).all()


def served_by(handler) -> OpenAIEmbedder:
    return OpenAIEmbedder("nomic-embed-text-v1.5", "http://embeddings.test/v1", transport=httpx.MockTransport(handler))


def test_the_server_is_sent_prefixed_texts_and_its_vectors_come_back_in_order_normalized() -> None:
    sent: list[dict] = []

    def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        sent.append(body)
        data = [{"index": i, "embedding": [float(i + 1), 0.0, 0.0]} for i in range(len(body["input"]))]
        return httpx.Response(200, json={"data": list(reversed(data))})

    embedder = served_by(handler)
    vectors = embedder.embed_documents(["$\\alpha$", "b"])
    assert sent[0]["input"] == ["search_document: α", "search_document: b"]  # read as Unicode, as MiniLM reads it
    assert sent[0]["model"] == "nomic-embed-text-v1.5" and sent[0]["truncate_prompt_tokens"] == 256
    assert np.allclose(vectors, [[1, 0, 0], [1, 0, 0]])


@pytest.mark.parametrize(
    "response",
    [
        httpx.Response(503, text="loading"),
        httpx.Response(200, text="not json"),
        httpx.Response(200, json={"data": [{"index": 0, "embedding": [1.0]}]}),  # one vector for two texts
        httpx.Response(200, json={"data": [{"index": 0, "embedding": "oops"}, {"index": 1, "embedding": [1.0]}]}),
    ],
)
def test_a_server_answer_that_is_not_one_vector_per_text_is_a_clear_error(response: httpx.Response) -> None:
    with pytest.raises(EmbeddingServerError, match=r"embeddings\.test/v1/embeddings"):
        served_by(lambda request: response).embed_documents(["a", "b"])


@pytest.mark.parametrize("spec", ["openai:nomic", "openai:@http://h/v1", "openai:m@host:8000"])
def test_a_malformed_server_spec_names_the_form(spec: str) -> None:
    with pytest.raises(ValueError, match="openai:MODEL@BASE_URL"):
        embedder_for(spec)


def test_a_gguf_spec_naming_no_file_says_where_it_looked(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no GGUF file"):
        embedder_for(f"gguf:{tmp_path / 'missing.gguf'}")
