"""The cross-encoder reranker: trained order, save/reload, missing and mismatched models."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from ingestion import Source, StatementKind, StatementRecord
from retriever.models.cross_encoder_reranker import (
    ADAPTER,
    CARD,
    CrossEncoderReranker,
    RerankerModel,
    RerankerModelError,
    load_reranker_model,
)
from retriever.types import SearchHit
from tests.conftest import RERANK_FIXTURE_DOCS, RERANK_FIXTURE_QUERIES


def _hits(texts: tuple[str, ...]) -> list[SearchHit]:
    records = [
        StatementRecord(f"id{i}", Source.LOCAL, StatementKind.LEMMA, text, "paper") for i, text in enumerate(texts)
    ]
    # The first stage's order: the fixture order, scores falling.
    return [SearchHit(record, 1.0 - 0.1 * i, i + 1) for i, record in enumerate(records)]


def test_the_reranker_changes_the_order_as_trained(tiny_reranker_dir: Path) -> None:
    reranker = CrossEncoderReranker(str(tiny_reranker_dir), max_length=64)
    for query, gold in RERANK_FIXTURE_QUERIES.items():
        hits = _hits(RERANK_FIXTURE_DOCS)
        assert hits[0].record.id != f"id{gold}"  # the first stage had another statement first
        reranked = reranker.rerank(query, hits, k=3, weight=1.0)
        assert reranked[0].record.id == f"id{gold}", query
        assert [h.rank for h in reranked] == [1, 2, 3]
        assert reranked[0].channel_ranks == {"first-stage": gold + 1, "rerank": 1}


def test_weight_zero_keeps_the_first_stage_order(tiny_reranker_dir: Path) -> None:
    reranker = CrossEncoderReranker(str(tiny_reranker_dir), max_length=64)
    reranked = reranker.rerank("zorblax quimby", _hits(RERANK_FIXTURE_DOCS), k=5, weight=0.0)
    assert [h.record.id for h in reranked] == [f"id{i}" for i in range(5)]


@pytest.mark.slow
def test_a_saved_and_reloaded_reranker_gives_the_same_scores(tiny_reranker_dir: Path, tmp_path: Path) -> None:
    first = CrossEncoderReranker(str(tiny_reranker_dir), max_length=64)
    copy = tmp_path / "copied"
    shutil.copytree(tiny_reranker_dir, copy)
    again = CrossEncoderReranker(str(copy), max_length=64)
    for query in RERANK_FIXTURE_QUERIES:
        expected = first.score(query, RERANK_FIXTURE_DOCS)
        np.testing.assert_allclose(again.score(query, RERANK_FIXTURE_DOCS), expected, rtol=1e-5, atol=1e-5)
    # Scores do not depend on which other texts share the batch (sorted by length, padded).
    alone = np.array([first.score("flindertap", [doc])[0] for doc in RERANK_FIXTURE_DOCS])
    np.testing.assert_allclose(alone, first.score("flindertap", RERANK_FIXTURE_DOCS), rtol=1e-4, atol=1e-4)


def test_a_missing_reranker_names_the_command_that_builds_it(tmp_path: Path) -> None:
    with pytest.raises(RerankerModelError, match="rag-app train rerank"):
        CrossEncoderReranker(str(tmp_path / "nowhere"))


def test_a_directory_that_is_not_a_reranker_is_refused(tiny_reranker_dir: Path, tmp_path: Path) -> None:
    other = tmp_path / "embedding"
    shutil.copytree(tiny_reranker_dir, other)
    (other / CARD).write_text(json.dumps({"kind": "lora", "base_model": "packaged:all-MiniLM-L6-v2"}))
    with pytest.raises(RerankerModelError, match=r"not a reranker.*rag-app train rerank"):
        CrossEncoderReranker(str(other))
    shutil.rmtree(other / ADAPTER)
    (other / CARD).write_text((tiny_reranker_dir / CARD).read_text())
    with pytest.raises(RerankerModelError, match=r"no adapter.*rag-app train rerank"):
        CrossEncoderReranker(str(other))


def test_an_adapter_of_another_base_model_is_refused(tiny_reranker_dir: Path, tmp_path: Path) -> None:
    mismatched = tmp_path / "mismatched"
    shutil.copytree(tiny_reranker_dir, mismatched)
    card = json.loads((mismatched / CARD).read_text())
    card["base_model"] = "packaged:no-such-model"
    (mismatched / CARD).write_text(json.dumps(card))
    with pytest.raises(RerankerModelError, match="rag-app train rerank"):
        load_reranker_model(RerankerModel.locate(str(mismatched)))


def test_a_query_longer_than_the_pair_budget_is_truncated_not_refused(tiny_reranker_dir: Path) -> None:
    reranker = CrossEncoderReranker(str(tiny_reranker_dir), max_length=32)
    pasted = "Let $f(x) = \\sum_{n \\geq 1} a_n x^n$ be a power series with radius of convergence one. " * 20
    assert reranker.score(pasted, RERANK_FIXTURE_DOCS).shape == (len(RERANK_FIXTURE_DOCS),)


def test_int8_on_cpu_keeps_the_trained_order(tiny_reranker_dir: Path) -> None:
    """Dynamic int8 quantization changes scores a little, not the order the reranker learned."""
    exact = CrossEncoderReranker(str(tiny_reranker_dir), max_length=64)
    quantized = CrossEncoderReranker(str(tiny_reranker_dir), max_length=64, quantize_cpu=True)
    import torch

    assert any(isinstance(m, torch.ao.nn.quantized.dynamic.Linear) for m in quantized.model.modules())
    for query, gold in RERANK_FIXTURE_QUERIES.items():
        scores = quantized.score(query, RERANK_FIXTURE_DOCS)
        assert int(np.argmax(scores)) == gold == int(np.argmax(exact.score(query, RERANK_FIXTURE_DOCS))), query


def test_two_first_scores_load_the_model_once(tiny_reranker_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 93: ``model`` was a ``cached_property`` read outside the lock: two first scores loaded it twice on
    Python 3.12 and later (3.11's ``cached_property`` still held a lock of its own, removed in 3.12; this test
    fails on the old code there)."""
    import threading
    import time

    import retriever.models.cross_encoder_reranker as module

    loads: list[int] = []
    real = module.load_reranker_model

    def slow_load(*args: object, **kwargs: object) -> object:
        loads.append(1)
        time.sleep(0.3)  # the second caller arrives while the first loads
        return real(*args, **kwargs)

    monkeypatch.setattr(module, "load_reranker_model", slow_load)
    reranker = CrossEncoderReranker(str(tiny_reranker_dir))
    scores: list[np.ndarray] = []
    threads = [threading.Thread(target=lambda: scores.append(reranker.score("q", ["a text"]))) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(loads) == 1 and len(scores) == 2
