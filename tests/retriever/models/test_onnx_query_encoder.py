"""One query through ONNX Runtime: the model's own vector, exported once, checked at every load."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from retriever import Embedder
from retriever.models.onnx_query_encoder import OnnxQueryEncoder, export_path

PACKAGED = "packaged:all-MiniLM-L6-v2"
QUERIES = ["Nakayama's lemma", "when is $\\sum_{n\\ge1} a_n$ convergent for $a_n \\to 0$?", "flat base change", "Ω"]


@pytest.fixture(scope="module")
def torch_embedder() -> Embedder:
    return Embedder(PACKAGED)


@pytest.fixture(scope="module")
def onnx_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("onnx")


def test_a_query_through_onnx_gets_the_models_own_vector(torch_embedder: Embedder, onnx_dir: Path) -> None:
    embedder = Embedder(PACKAGED, onnx_dir=onnx_dir)
    assert embedder.query_encoder() is not None
    for query in QUERIES:
        got, expected = embedder.embed_query(query), torch_embedder.embed_query(query)
        assert got.dtype == np.float32 and got.shape == expected.shape
        assert float(got @ expected) > 0.9999, query
    # keyed by what it depends on (issue 94): the model, the torch that traced it, the opset
    assert [path.name for path in onnx_dir.iterdir()] == [export_path(onnx_dir, "packaged-all-MiniLM-L6-v2").name]
    assert export_path(onnx_dir, "packaged-all-MiniLM-L6-v2").name.startswith("packaged-all-MiniLM-L6-v2.torch-2.")


def test_a_second_embedder_loads_the_export_and_a_damaged_one_is_made_again(
    torch_embedder: Embedder, onnx_dir: Path
) -> None:
    Embedder(PACKAGED, onnx_dir=onnx_dir).query_encoder()
    exported = export_path(onnx_dir, "packaged-all-MiniLM-L6-v2")
    stamp = exported.stat().st_mtime_ns
    assert Embedder(PACKAGED, onnx_dir=onnx_dir).query_encoder() is not None
    assert exported.stat().st_mtime_ns == stamp  # loaded, not exported again
    exported.write_bytes(b"not a model")
    embedder = Embedder(PACKAGED, onnx_dir=onnx_dir)
    assert embedder.query_encoder() is not None
    assert float(embedder.embed_query("compact Hausdorff") @ torch_embedder.embed_query("compact Hausdorff")) > 0.9999
    assert exported.stat().st_size > 1_000_000


def test_an_export_that_disagrees_with_the_model_is_not_served(
    torch_embedder: Embedder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(OnnxQueryEncoder, "agrees_with", lambda self, model: False)
    embedder = Embedder(PACKAGED, onnx_dir=tmp_path)
    assert embedder.query_encoder() is None
    assert float(embedder.embed_query("Nakayama") @ torch_embedder.embed_query("Nakayama")) > 0.9999  # on torch


def test_a_model_pooled_otherwise_stays_on_torch(tmp_path: Path) -> None:
    class Transformer:
        pass

    class Pooling:
        def get_config_dict(self) -> dict[str, str]:
            return {"pooling_mode": "cls"}

    assert OnnxQueryEncoder.build([Transformer(), Pooling()], "cls-model", tmp_path) is None
    assert list(tmp_path.iterdir()) == []


def test_without_a_directory_queries_run_on_torch() -> None:
    assert Embedder(PACKAGED).query_encoder() is None
    assert Embedder(PACKAGED, onnx_dir=Path("/nonexistent"), device="cuda").query_encoder() is None
