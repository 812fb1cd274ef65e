"""Embedders for tests: a small deterministic one for units, and a registered LoRA adapter (a second,
different real embedder without any training)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np

from retriever.models.embedder import Embedder
from retriever.models.embedding_registry import EmbeddingRegistry, RegisteredEmbedder, resolve_embedder
from retriever.text.math_tokenizer import tokenize

BASE = "packaged:all-MiniLM-L6-v2"


def random_adapter(registry_dir: Path, name: str = "test-adapter", seed: int = 0) -> RegisteredEmbedder:
    """Register a LoRA adapter with random (non-zero) weights on the packaged MiniLM."""
    import torch
    from peft import LoraConfig, TaskType
    from sentence_transformers import SentenceTransformer

    torch.manual_seed(seed)
    model = SentenceTransformer(resolve_embedder(BASE).model_path, device="cpu")
    model.add_adapter(LoraConfig(task_type=TaskType.FEATURE_EXTRACTION, r=4, target_modules=["query", "value"]))
    for parameter_name, parameter in model.named_parameters():
        if "lora_B" in parameter_name:  # LoRA starts as the identity; make it change the vectors
            torch.nn.init.normal_(parameter, std=0.05)
    weights = registry_dir.parent / f"{name}-weights"
    model.transformers_model.save_pretrained(str(weights))
    card = {"base_model": BASE, "kind": "lora", "metrics": {}}
    return EmbeddingRegistry(registry_dir).create_version(name, card, weights)


class HashingEmbedder(Embedder):
    """A small deterministic embedder for unit tests: each word (the math tokenizer's terms) is hashed
    into one of 64 dimensions, and the counts are L2-normalized. No model is loaded, so a test whose
    behaviour does not depend on what MiniLM makes of a text (storage, crash windows, filters) runs in
    milliseconds; texts that share words are near, as a real embedder's would be."""

    DIMENSION = 64

    def __init__(self, name: str = "hashing-64") -> None:
        super().__init__(f"test:{name}")

    @property
    def identity(self) -> str:
        return self.model_name

    @property
    def dimension(self) -> int:
        return self.DIMENSION

    def _encode(self, texts: list[str], show_progress: bool, role: str) -> np.ndarray:
        vectors = np.zeros((len(texts), self.DIMENSION), dtype=np.float32)
        for row, text in enumerate(texts):
            for term in tokenize(text):
                digest = hashlib.blake2b(term.encode("utf-8"), digest_size=4).digest()
                vectors[row, int.from_bytes(digest, "little") % self.DIMENSION] += 1.0
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return vectors / np.where(norms == 0, 1.0, norms)
