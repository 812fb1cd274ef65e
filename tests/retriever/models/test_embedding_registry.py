"""Versioned fine-tunes and the embedder specs that name them."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from retriever import Embedder
from retriever.models.embedding_registry import EmbedderSpecError, EmbeddingRegistry, resolve_embedder, split_version
from tests.embedders import BASE, random_adapter


def test_versions_are_numbered_and_the_latest_is_the_default(tmp_path: Path) -> None:
    registry = EmbeddingRegistry(tmp_path / "models")
    weights = tmp_path / "weights"
    weights.mkdir()
    (weights / "adapter_model.safetensors").write_bytes(b"x")
    first = registry.create_version("math", {"base_model": BASE, "kind": "lora"}, weights)
    second = registry.create_version("math", {"base_model": BASE, "kind": "lora", "metrics": {"mrr": 0.5}}, weights)
    assert (first.version, second.version) == (1, 2)
    assert registry.names() == ["math"]
    assert registry.get("math").version == 2 and registry.get("math", 1).version == 1
    assert json.loads((second.directory / "model.json").read_text())["metrics"] == {"mrr": 0.5}
    assert (second.directory / "adapter" / "adapter_model.safetensors").is_file()
    assert resolve_embedder("registry:math", tmp_path / "models").identity == "registry:math@v2"
    assert resolve_embedder("registry:math@v1", tmp_path / "models").identity == "registry:math@v1"
    with pytest.raises(EmbedderSpecError, match="no version v7"):
        registry.get("math", 7)
    with pytest.raises(EmbedderSpecError, match="known: math"):
        resolve_embedder("registry:algebra", tmp_path / "models")
    with pytest.raises(EmbedderSpecError, match="letters, digits"):
        registry.create_version("../escape", {"base_model": BASE}, weights)


def test_two_trainings_of_one_name_at_once_each_get_a_version_of_their_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 61, defect 14: both staged under one fixed ``.v1.partial`` and clobbered each other. Here the
    second registers while the first's v1 appears under it (its look at the versions is stale): it takes v2."""
    registry = EmbeddingRegistry(tmp_path / "models")
    weights = {}
    for run in ("first", "second"):
        weights[run] = tmp_path / run
        weights[run].mkdir()
        (weights[run] / "adapter_model.safetensors").write_bytes(run.encode())
    real_versions = EmbeddingRegistry.versions
    calls = {"n": 0}

    def stale_then_real(self: EmbeddingRegistry, name: str):
        calls["n"] += 1
        if calls["n"] == 1:  # the first training registers between the second's look and its rename
            monkeypatch.setattr(EmbeddingRegistry, "versions", real_versions)
            registry.create_version("math", {"base_model": BASE, "kind": "lora"}, weights["first"])
            monkeypatch.setattr(EmbeddingRegistry, "versions", stale_then_real)
            return []
        return real_versions(self, name)

    monkeypatch.setattr(EmbeddingRegistry, "versions", stale_then_real)
    second = registry.create_version("math", {"base_model": BASE, "kind": "lora"}, weights["second"])
    monkeypatch.setattr(EmbeddingRegistry, "versions", real_versions)
    assert second.version == 2
    first = registry.get("math", 1)
    assert (first.directory / "adapter" / "adapter_model.safetensors").read_bytes() == b"first"
    assert (second.directory / "adapter" / "adapter_model.safetensors").read_bytes() == b"second"
    assert sorted(p.name for p in (tmp_path / "models" / "math").iterdir()) == ["v1", "v2"]  # no staging left


def test_specs_resolve_to_packaged_paths_or_pass_through(tmp_path: Path) -> None:
    base = resolve_embedder(BASE)
    assert base.identity == BASE and Path(base.model_path).is_dir() and base.adapter_path is None
    assert resolve_embedder("some/hub-model").model_path == "some/hub-model"
    assert split_version("math@v12") == ("math", 12) and split_version("math") == ("math", None)
    with pytest.raises(EmbedderSpecError, match="unknown packaged embedding model"):
        resolve_embedder("packaged:nothing-like-this")
    with pytest.raises(EmbedderSpecError, match="not a readable model card"):
        (tmp_path / "broken").mkdir()
        (tmp_path / "broken" / "model.json").write_text("{")
        resolve_embedder(str(tmp_path / "broken"))


def test_a_registered_adapter_loads_on_its_base_and_changes_the_vectors(tmp_path: Path) -> None:
    model = random_adapter(tmp_path / "models")
    tuned = Embedder("registry:test-adapter", registry_dir=tmp_path / "models")
    base = Embedder(BASE)
    assert tuned.identity == "registry:test-adapter@v1+unicode-math"  # the model and the text form it reads
    text = ["A bounded entire function is constant."]
    tuned_vector, base_vector = tuned.embed_documents(text)[0], base.embed_documents(text)[0]
    assert tuned.dimension == base.dimension == 384
    assert np.isclose(np.linalg.norm(tuned_vector), 1.0, atol=1e-4)
    assert float(tuned_vector @ base_vector) < 0.999  # the adapter is applied
    # Merged into the base layers for speed, the adapter gives the vectors it gives unmerged.
    from sentence_transformers import SentenceTransformer

    unmerged = SentenceTransformer(tuned.resolved.model_path, device="cpu")
    unmerged.load_adapter(str(tuned.resolved.adapter_path))
    unmerged.max_seq_length = tuned.max_seq_length
    expected = unmerged.encode([tuned.text_for_model(t) for t in text], normalize_embeddings=True)[0]
    assert np.allclose(tuned_vector, expected, atol=1e-5)
    # The model directory itself is also a valid spec (a registered model copied elsewhere).
    assert Embedder(str(model.directory), math_text="latex").identity == "test-adapter@v1"
