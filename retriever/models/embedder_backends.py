"""Which embedder class reads an embedder spec: sentence-transformers, llama.cpp (GGUF) or an embeddings server.

- ``packaged:nomic-embed-text-v1.5``: the GGUF model inside PyPI packages, read by llama.cpp here
  (:class:`GgufEmbedder`);
- ``gguf:PATH``: any GGUF embedding model on disk, read the same way;
- ``openai:MODEL@BASE_URL``: an OpenAI-compatible ``/v1/embeddings`` server (vLLM on a GPU);
- anything else: :class:`Embedder` (sentence-transformers; see :mod:`retriever.models.embedding_registry`).

All four encode statements and queries the same way (``embed_documents``, ``embed_query``, ``identity``),
so the companion index and the evaluation read any of them. Formula fusion needs token states, which
only the sentence-transformers embedder gives.
"""

from __future__ import annotations

from pathlib import Path

from retriever.models.embedder import Embedder
from retriever.models.embedding_prefixes import EmbeddingPrefixes
from retriever.models.embedding_registry import PACKAGED_PREFIX
from retriever.models.gguf_embedder import GgufEmbedder
from retriever.models.openai_embedder import SPEC_PREFIX as OPENAI_PREFIX
from retriever.models.openai_embedder import OpenAIEmbedder
from retriever.models.packaged_gguf import NOMIC_EMBED_TEXT_V1_5, PackagedGgufFile

GGUF_PREFIX = "gguf:"
PACKAGED_GGUF_MODELS: dict[str, PackagedGgufFile] = {NOMIC_EMBED_TEXT_V1_5.name: NOMIC_EMBED_TEXT_V1_5}

TextEmbedder = Embedder | GgufEmbedder | OpenAIEmbedder


def embedder_for(
    spec: str,
    device: str = "cpu",
    batch_size: int = 64,
    max_seq_length: int | None = 256,
    registry_dir: Path | None = None,
    math_text: str = "unicode",
) -> TextEmbedder:
    """The embedder that reads ``spec`` (nothing loads until the first text is embedded)."""
    packaged_gguf = (
        PACKAGED_GGUF_MODELS.get(spec.removeprefix(PACKAGED_PREFIX)) if spec.startswith(PACKAGED_PREFIX) else None
    )
    if packaged_gguf is not None:
        return GgufEmbedder(
            spec,
            packaged_gguf.path,
            EmbeddingPrefixes.for_model(packaged_gguf.name),
            device,
            max_seq_length,
            math_text,
        )
    if spec.startswith(GGUF_PREFIX):
        path = Path(spec.removeprefix(GGUF_PREFIX)).expanduser()
        if not path.is_file():
            raise FileNotFoundError(f"{spec}: no GGUF file at {path}")
        return GgufEmbedder(spec, path, EmbeddingPrefixes.for_model(path.name), device, max_seq_length, math_text)
    if spec.startswith(OPENAI_PREFIX):
        return OpenAIEmbedder.from_spec(spec, batch_size=batch_size, max_seq_length=max_seq_length, math_text=math_text)
    return Embedder(spec, device, batch_size, max_seq_length, registry_dir=registry_dir, math_text=math_text)
