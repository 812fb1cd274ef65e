"""What the two Trainer-based jobs (``train embed``, ``train rerank``) share: checkpointed arguments
that a rerun resumes from, finding the last checkpoint, and whether saved training data still fits."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def checkpointed_arguments(
    checkpoints: Path,
    *,
    epochs: int,
    max_steps: int | None,
    batch_size: int,
    learning_rate: float,
    warmup_steps: int,
    checkpoint_steps: int,
    seed: int,
    show_progress: bool,
    device: str,
) -> dict[str, Any]:
    """Keyword arguments for transformers' ``TrainingArguments`` (or sentence-transformers' subclass)."""
    return {
        "output_dir": str(checkpoints),
        "num_train_epochs": epochs,
        "max_steps": max_steps or -1,
        "per_device_train_batch_size": batch_size,
        "learning_rate": learning_rate,
        "warmup_steps": max(1, warmup_steps),
        "save_strategy": "steps",
        "save_steps": checkpoint_steps,
        "save_total_limit": 2,
        "logging_steps": max(1, min(checkpoint_steps, 10)),
        "seed": seed,
        "data_seed": seed,
        "report_to": "none",
        "disable_tqdm": not show_progress,
        "use_cpu": device == "cpu",
        "dataloader_drop_last": True,
    }


def last_checkpoint(directory: Path) -> Path | None:
    """The newest ``checkpoint-N`` under ``directory`` (None: start from scratch)."""
    found = [p for p in directory.glob("checkpoint-*") if p.name.removeprefix("checkpoint-").isdigit()]
    return max(found, key=lambda p: int(p.name.removeprefix("checkpoint-"))) if found else None


def saved_data_fits(data: Path, fingerprint_file: Path, fingerprint: str) -> bool:
    """Whether the training data saved at ``data`` was made from the same corpus and settings
    (``fingerprint``), so a rerun can reuse it and resume from its checkpoints."""
    return data.exists() and fingerprint_file.exists() and fingerprint_file.read_text().strip() == fingerprint
