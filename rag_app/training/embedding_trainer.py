"""Fine-tune a sentence-transformers model on (query, statement, hard negative) triples.

``CachedMultipleNegativesRankingLoss`` (GradCache) gives a large batch of in-batch negatives on
small memory: the batch is embedded in mini-batches, so ``batch_size`` sets the negatives and
``mini_batch_size`` the memory. Gradient accumulation would not help here: it adds steps, not
negatives. The no-duplicates sampler keeps a text from appearing twice in a batch (a repeated
anchor would be a false negative for itself). With ``lora`` only a PEFT adapter is trained and
saved, a few MB on top of the base model.
"""

from __future__ import annotations

import logging
import random
import shutil
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ingestion import StatementRecord
from rag_app.settings import EmbedTrainingSettings
from rag_app.training.checkpoints import checkpointed_arguments, last_checkpoint
from rag_app.training.training_pairs import TrainingPair
from retriever.models.embedder import Embedder

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class TrainingRun:
    weights_dir: Path  # adapter/ or model/, ready for the registry
    kind: str  # "lora" or "full"
    examples: int
    steps: int
    seconds: float
    resumed_from: str | None
    final_loss: float | None


class EmbeddingTrainer:
    def __init__(self, settings: EmbedTrainingSettings, base: Embedder, device: str = "cpu") -> None:
        self.settings = settings
        self.base = base
        self.device = device

    def learning_rate(self) -> float:
        if self.settings.learning_rate is not None:
            return self.settings.learning_rate
        return 2e-4 if self.settings.lora else 2e-5  # an adapter starts from zero and needs larger steps

    def examples(self, pairs: Sequence[TrainingPair], records: Mapping[str, StatementRecord]) -> dict[str, list[str]]:
        """Columns anchor, positive (and negative) for the trainer; pairs lacking a negative get a random one.
        Every text in the form the served embedder reads it (LaTeX rendered as Unicode by default)."""
        read = self.base.text_for_model
        rng = random.Random(self.settings.seed)
        ids = sorted(records)
        columns: dict[str, list[str]] = {"anchor": [], "positive": []}
        with_negatives = self.settings.hard_negatives and any(pair.negative_id for pair in pairs)
        if with_negatives:
            columns["negative"] = []
        for pair in pairs:
            positive = records.get(pair.statement_id)
            if positive is None:
                continue
            columns["anchor"].append(read(pair.anchor))
            columns["positive"].append(read(positive.search_text()))
            if with_negatives:
                negative = records.get(pair.negative_id) if pair.negative_id else None
                if negative is None:
                    negative = _random_negative(records, ids, positive, rng)
                columns["negative"].append(read(negative.search_text()))
        return columns

    def train(
        self,
        pairs: Sequence[TrainingPair],
        records: Mapping[str, StatementRecord],
        work_dir: Path,
        resume: bool = True,
        show_progress: bool = False,
    ) -> TrainingRun:
        """Train; checkpoints go to ``work_dir/checkpoints`` and a rerun resumes from the last one."""
        from datasets import Dataset
        from sentence_transformers import SentenceTransformerTrainer, SentenceTransformerTrainingArguments
        from sentence_transformers.base.sampler import BatchSamplers
        from sentence_transformers.sentence_transformer.losses import CachedMultipleNegativesRankingLoss

        settings = self.settings
        columns = self.examples(pairs, records)
        count = len(columns["anchor"])
        if count < 2:
            raise ValueError(f"too few training examples ({count}); ingest more statements first")
        dataset = Dataset.from_dict(columns).shuffle(seed=settings.seed)
        model = self._model()
        loss = CachedMultipleNegativesRankingLoss(model, mini_batch_size=settings.mini_batch_size)
        checkpoints = work_dir / "checkpoints"
        batch_size = min(settings.batch_size, count)
        warmup = int(settings.warmup_ratio * _steps(count, batch_size, settings))
        common = checkpointed_arguments(
            checkpoints, epochs=settings.epochs, max_steps=settings.max_steps, batch_size=batch_size,
            learning_rate=self.learning_rate(), warmup_steps=warmup, checkpoint_steps=settings.checkpoint_steps,
            seed=settings.seed, show_progress=show_progress, device=self.device,
        )  # fmt: skip
        args = SentenceTransformerTrainingArguments(**common, batch_sampler=BatchSamplers.NO_DUPLICATES)
        trainer = SentenceTransformerTrainer(model=model, args=args, train_dataset=dataset, loss=loss)
        last = last_checkpoint(checkpoints) if resume else None
        if not resume:
            shutil.rmtree(checkpoints, ignore_errors=True)
        started = time.perf_counter()
        result = trainer.train(resume_from_checkpoint=str(last) if last else None)
        seconds = time.perf_counter() - started
        weights = work_dir / ("adapter" if settings.lora else "model")
        shutil.rmtree(weights, ignore_errors=True)
        if settings.lora:
            model.transformers_model.save_pretrained(str(weights))
        else:
            model.save_pretrained(str(weights))
        losses = [entry["loss"] for entry in trainer.state.log_history if "loss" in entry]
        return TrainingRun(
            weights_dir=weights,
            kind="lora" if settings.lora else "full",
            examples=count,
            steps=int(result.global_step),
            seconds=round(seconds, 1),
            resumed_from=last.name if last else None,
            final_loss=round(float(losses[-1]), 4) if losses else None,
        )

    def _model(self) -> Any:
        from sentence_transformers import SentenceTransformer

        resolved = self.base.resolved
        if resolved.adapter_path is not None:
            raise ValueError(
                f"the base model {self.base.model_name} is an adapter; fine-tune its base ({resolved.model_path})"
            )
        model = SentenceTransformer(resolved.model_path, device=self.device)
        model.max_seq_length = self.settings.max_seq_length
        if self.settings.lora:
            from peft import LoraConfig, TaskType

            model.add_adapter(
                LoraConfig(
                    task_type=TaskType.FEATURE_EXTRACTION,
                    r=self.settings.lora_r,
                    lora_alpha=self.settings.lora_alpha,
                    lora_dropout=self.settings.lora_dropout,
                    target_modules=list(self.settings.lora_target_modules),
                )
            )
        return model


def _random_negative(
    records: Mapping[str, StatementRecord], ids: list[str], positive: StatementRecord, rng: random.Random
) -> StatementRecord:
    """A statement of another paper, else (a one-paper corpus) any other statement."""
    for _ in range(100):
        candidate = records[rng.choice(ids)]
        if candidate.paper_id != positive.paper_id:
            return candidate
    others = [i for i in ids if i != positive.id]
    return records[rng.choice(others)] if others else positive


def _steps(count: int, batch_size: int, settings: EmbedTrainingSettings) -> int:
    if settings.max_steps:
        return settings.max_steps
    return max(1, count // batch_size) * settings.epochs
