"""Torch's threads for one query: one, whatever the process uses for batches."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import torch

from retriever import Embedder
from retriever.models.torch_threads import torch_threads


def test_the_block_runs_on_the_threads_asked_and_the_count_comes_back() -> None:
    before = torch.get_num_threads()
    with torch_threads(1):
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == before
    with torch_threads(None):
        assert torch.get_num_threads() == before


def test_a_query_on_torch_runs_on_one_thread_and_a_batch_on_every_thread() -> None:
    torch.set_num_threads(2)
    embedder = Embedder("packaged:all-MiniLM-L6-v2")  # no onnx_dir: queries on torch
    seen: list[int] = []

    def encode(texts, **kwargs):
        seen.append(torch.get_num_threads())
        return np.zeros((len(texts), 384), dtype=np.float32)

    embedder.__dict__["model"] = SimpleNamespace(encode=encode)  # the cached model, replaced
    embedder.embed_query("Nakayama's lemma")
    embedder.embed_documents(["a statement", "another"])
    assert seen == [1, 2]
    assert torch.get_num_threads() == 2
