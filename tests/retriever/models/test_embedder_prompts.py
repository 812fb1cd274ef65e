"""A model whose card names a query and a document prompt (EmbeddingGemma) reads them before every text."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from retriever import Embedder

PACKAGED = "packaged:all-MiniLM-L6-v2"
PROMPTS = {"query": "task: search result | query: ", "document": "title: none | text: "}


def prompted(**options) -> Embedder:
    embedder = Embedder(PACKAGED, **options)
    embedder.model.prompts = dict(PROMPTS)  # as a card with prompts loads them
    return embedder


def test_queries_and_documents_read_their_own_prompt_however_they_are_embedded(tmp_path: Path) -> None:
    plain = Embedder(PACKAGED)
    assert plain.prompt("query") == plain.prompt("document") == ""  # MiniLM reads its texts as they are
    embedder = prompted(onnx_dir=tmp_path)
    text = "flat base change"
    as_query, as_document = (plain.embed_documents([prompt + text])[0] for prompt in PROMPTS.values())
    assert float(embedder.embed_queries([text])[0] @ as_query) > 0.9999
    assert float(embedder.embed_documents([text])[0] @ as_document) > 0.9999
    assert float(as_query @ as_document) < 0.99  # the prompts change the vector: the checks above can fail
    assert embedder.query_encoder() is not None
    assert float(embedder.embed_query(text) @ as_query) > 0.9999  # one query through ONNX Runtime
    assert float(prompted().embed_query(text) @ as_query) > 0.9999  # and through torch
    # formula fusion reads queries and statements alike, through token states made without a prompt
    vectors, _ = embedder.embed_with_tokens([text])
    assert float(vectors[0] / np.linalg.norm(vectors[0]) @ plain.embed_documents([text])[0]) > 0.9999
