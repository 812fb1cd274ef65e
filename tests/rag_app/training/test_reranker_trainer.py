"""The reranker trainer on sentence-transformers' CrossEncoder: the loss, and resuming from a checkpoint."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag_app.settings import RerankTrainingSettings
from rag_app.training.reranker_trainer import RerankerTrainer, RerankExample, listwise_loss
from retriever.models.cross_encoder_reranker import load_cross_encoder
from retriever.models.embedding_registry import resolve_embedder
from tests.conftest import RERANK_FIXTURE_DOCS, RERANK_FIXTURE_QUERIES

# Trains, starts a server or browser, or reads real corpora: out of the fast tier.
pytestmark = pytest.mark.slow

BASE = Path(resolve_embedder("packaged:all-MiniLM-L6-v2", None).model_path)


def examples() -> list[RerankExample]:
    docs = RERANK_FIXTURE_DOCS
    groups = []
    for query, gold in RERANK_FIXTURE_QUERIES.items():
        others = [d for i, d in enumerate(docs) if i != gold]
        groups += [RerankExample(query, (docs[gold], *others[:2])), RerankExample(query, (docs[gold], *others[2:4]))]
    return groups


def test_the_loss_is_the_softmax_cross_entropy_of_picking_the_positive() -> None:
    import torch

    model = load_cross_encoder(BASE, 2, 64)
    group = examples()[0]
    query, texts = group.query, list(group.texts)
    columns = [[query], *[[text] for text in texts]]
    loss = listwise_loss(model)(columns, labels=None).detach()
    with torch.no_grad():
        logits = torch.tensor(model.predict([(query, text) for text in texts]))
    expected = torch.nn.functional.cross_entropy(logits.view(1, -1), torch.zeros(1, dtype=torch.long))
    assert float(loss) == pytest.approx(float(expected), abs=1e-4)


def test_a_resumed_run_ends_where_an_uninterrupted_one_does(tmp_path: Path) -> None:
    import shutil

    import numpy as np
    from safetensors.numpy import load_file

    def settings(steps: int) -> RerankTrainingSettings:
        return RerankTrainingSettings(
            batch_size=2, max_steps=steps, checkpoint_steps=2, learning_rate=3e-3, max_length=64, warmup_ratio=0.0,
            layers=2, lora_dropout=0.0,
        )  # fmt: skip

    whole = RerankerTrainer(settings(4), BASE).train(examples(), tmp_path / "whole")
    final = {
        key: value.copy() for key, value in load_file(str(whole.adapter_dir / "adapter_model.safetensors")).items()
    }
    shutil.rmtree(tmp_path / "whole" / "checkpoints" / "checkpoint-4")  # as if killed after step 3
    resumed = RerankerTrainer(settings(4), BASE).train(examples(), tmp_path / "whole")
    assert (whole.steps, resumed.steps, resumed.resumed_from) == (4, 4, "checkpoint-2")
    a = final
    b = load_file(str(resumed.adapter_dir / "adapter_model.safetensors"))
    assert a.keys() == b.keys() and any("classifier" in key for key in a)
    assert all(np.allclose(a[key], b[key], atol=1e-5) for key in a)
    assert not np.allclose(a[next(k for k in a if "lora_B" in k)], 0)  # trained, not the initial identity
