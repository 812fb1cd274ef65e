"""The embedder and the device the settings name, for every part of the app that embeds."""

from __future__ import annotations

from rag_app.settings import Settings
from retriever import Embedder


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
    )


def resolve_device(device: str) -> str:
    """``auto``: the GPU when torch sees one (the same code runs on a GPU machine), else the CPU."""
    if device != "auto":
        return device
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"
