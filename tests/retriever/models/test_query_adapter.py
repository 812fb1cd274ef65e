"""The query adapter: a linear map on query vectors, saved and loaded with the embedder it was trained for."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

from retriever.models.query_adapter import CARD, KIND, QueryAdapter, QueryAdapterError


def _adapter(dimension: int = 4, embedder: str = "packaged:all-MiniLM-L6-v2") -> QueryAdapter:
    rng = np.random.default_rng(0)
    matrix = np.eye(dimension, dtype=np.float32) + 0.1 * rng.standard_normal((dimension, dimension)).astype(np.float32)
    return QueryAdapter(matrix, 0.01 * np.ones(dimension, np.float32), {"kind": KIND, "embedder": embedder})


def test_identity_map_keeps_unit_vectors_and_a_map_gives_unit_vectors() -> None:
    vector = np.array([0.6, 0.8, 0.0, 0.0], dtype=np.float32)
    assert np.allclose(QueryAdapter.identity_map(4).apply(vector), vector)
    mapped = _adapter().apply(vector)
    assert not np.allclose(mapped, vector) and np.isclose(np.linalg.norm(mapped), 1.0)


def test_saved_and_loaded_adapter_maps_the_same(tmp_path) -> None:
    adapter = _adapter()
    adapter.save(tmp_path / "adapter")
    loaded = QueryAdapter.load(str(tmp_path / "adapter"), "packaged:all-MiniLM-L6-v2")
    vector = np.array([0.5, 0.5, 0.5, 0.5], dtype=np.float32)
    assert np.array_equal(loaded.apply(vector), adapter.apply(vector))
    assert loaded.embedder == "packaged:all-MiniLM-L6-v2"


def test_missing_foreign_or_mismatched_adapter_names_the_command(tmp_path) -> None:
    with pytest.raises(QueryAdapterError, match="rag-app train query-adapter"):
        QueryAdapter.load(str(tmp_path / "nowhere"))
    _adapter(embedder="registry:math@v2").save(tmp_path / "other-embedder")
    with pytest.raises(QueryAdapterError, match=r"trained for the embedder 'registry:math@v2'.*train query-adapter"):
        QueryAdapter.load(str(tmp_path / "other-embedder"), "packaged:all-MiniLM-L6-v2")
    _adapter().save(tmp_path / "not-an-adapter")
    card = tmp_path / "not-an-adapter" / CARD
    card.write_text(json.dumps({"kind": "cross-encoder-lora", "embedder": "packaged:all-MiniLM-L6-v2"}))
    with pytest.raises(QueryAdapterError, match="is not a query adapter"):
        QueryAdapter.load(str(tmp_path / "not-an-adapter"))


def test_configured_auto_takes_the_packaged_adapter_only_for_its_embedder(tmp_path, monkeypatch) -> None:
    import retriever.models.query_adapter as module

    packaged = replace(module.ADAPTERS, packaged_root=tmp_path / "packaged")
    monkeypatch.setattr(module, "ADAPTERS", packaged)
    monkeypatch.setattr(module, "packaged_directory", packaged.packaged_directory)
    assert QueryAdapter.configured("auto", "packaged:all-MiniLM-L6-v2") is None  # nothing packaged
    _adapter().save(module.packaged_directory("packaged:all-MiniLM-L6-v2"))
    _adapter(embedder="packaged:all-MiniLM-L6-v2+unicode-math").save(
        module.packaged_directory("packaged:all-MiniLM-L6-v2+unicode-math")
    )
    assert QueryAdapter.configured("auto", "packaged:all-MiniLM-L6-v2").embedder == "packaged:all-MiniLM-L6-v2"
    unicode_form = QueryAdapter.configured("auto", "packaged:all-MiniLM-L6-v2+unicode-math")
    assert unicode_form.embedder == "packaged:all-MiniLM-L6-v2+unicode-math"  # each text form its own
    assert (
        QueryAdapter.configured("packaged", "packaged:all-MiniLM-L6-v2+unicode-math").embedder == unicode_form.embedder
    )
    assert QueryAdapter.configured("auto", "registry:math@v3") is None  # another embedder: its base vectors
    assert QueryAdapter.configured("none", "packaged:all-MiniLM-L6-v2") is None
    assert QueryAdapter.configured(None, "packaged:all-MiniLM-L6-v2") is None
    with pytest.raises(QueryAdapterError):
        QueryAdapter.configured(str(module.packaged_directory("packaged:all-MiniLM-L6-v2")), "registry:math@v3")
