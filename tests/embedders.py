"""A small registered LoRA adapter for tests: a second, different embedder without any training."""

from __future__ import annotations

from pathlib import Path

from retriever.models.embedding_registry import EmbeddingRegistry, RegisteredEmbedder, resolve_embedder

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
