"""The embedders and the device the settings name, for every part of the app that embeds (the one place
they are built from the settings; a Dask worker rebuilds the driver's from its recipe)."""

from __future__ import annotations

from rag_app.settings import Settings
from retriever import Embedder
from retriever.models.embedder_backends import TextEmbedder, embedder_for


def make_embedder(settings: Settings, spec: str | None = None) -> Embedder:
    """The configured embedder, or ``spec`` (another embedder spec) with the same device and batching."""
    embedding = settings.embedding
    return Embedder(
        spec or embedding.model,
        resolve_device(embedding.device),
        embedding.batch_size,
        embedding.max_seq_length,
        registry_dir=settings.resolved_registry_dir,
        math_text=embedding.math_text,
        query_threads=embedding.query_threads,
        onnx_dir=settings.resolved_onnx_dir,
    )


def make_second_embedder(settings: Settings) -> TextEmbedder | None:
    """The second embedding model (``[second_embedding]``), on the first one's device and text form;
    None when it is off. Any backend serves here (a GGUF model through llama.cpp, an embeddings server):
    the channel reads sentence vectors only."""
    second, embedding = settings.second_embedding, settings.embedding
    if not second.enabled or second.model is None:
        return None
    return embedder_for(
        second.model,
        resolve_device(embedding.device),
        second.batch_size,
        second.max_seq_length,
        registry_dir=settings.resolved_registry_dir,
        math_text=embedding.math_text,
    )


def resolve_device(device: str) -> str:
    """``auto``: the GPU when torch sees one (the same code runs on a GPU machine), else the CPU."""
    if device != "auto":
        return device
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"
