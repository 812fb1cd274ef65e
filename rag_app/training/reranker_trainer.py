"""Train the cross-encoder reranker: listwise softmax over (query, positive, hard negatives) groups.

Each example is one query with its positive statement first and ``negatives`` statements the first
stage ranked high but that are not its answer. The model scores every pair of the group and the
loss is the cross-entropy of picking the positive: exactly the decision reranking makes.

The model is sentence-transformers' ``CrossEncoder`` read from the packaged MiniLM (its bi-encoder
folder is converted to a one-logit sequence classifier), cut to ``layers`` encoder layers, with a LoRA
adapter on those layers; the pooler and the classifier head are trained whole (``modules_to_save``).
``CrossEncoderTrainer`` runs the loop (checkpoints, resuming, warmup, devices) with the library's
``MultipleNegativesRankingLoss`` on raw logits and without in-batch negatives: the mined hard
negatives only, as the reranker meets them.

Training needs only torch, transformers, peft, datasets and sentence-transformers, so the mined work
directory (``examples.jsonl``, ``training.json``) can be trained on another machine, a GPU box without
the index::

    python -m rag_app.training.reranker_trainer WORK_DIR --base MODEL_DIR --device cuda

and ``rag-app train rerank`` on the index's machine then resumes from the copied-back checkpoints.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from rag_app.training.checkpoints import checkpointed_arguments, last_checkpoint
from retriever.models.cross_encoder_reranker import load_cross_encoder

if TYPE_CHECKING:  # the settings module pulls in the index's packages; training itself needs none of them
    from rag_app.settings import RerankTrainingSettings

EXAMPLES_FILE = "examples.jsonl"
TRAINING_SETTINGS_FILE = "training.json"

# LoRA on the encoder's linear layers; the pooler (also named ``dense``) is trained whole instead.
_LORA_TARGETS = r".*encoder\.layer\.\d+\..*\.(query|key|value|dense)$"


@dataclass(frozen=True, slots=True)
class RerankExample:
    """One training group: the query, its positive statement's text, then hard negatives' texts."""

    query: str
    texts: tuple[str, ...]  # positive first


@dataclass(frozen=True, slots=True)
class RerankRun:
    adapter_dir: Path
    examples: int
    steps: int
    seconds: float
    resumed_from: str | None
    final_loss: float | None


def listwise_loss(model: Any) -> Any:
    """The listwise softmax over each group's texts: the library's multiple-negatives ranking loss on raw
    logits (no sigmoid, scale 1) with the group's own hard negatives and none borrowed from the batch."""
    from sentence_transformers.cross_encoder.losses import MultipleNegativesRankingLoss

    class HardNegativesOnlyLoss(MultipleNegativesRankingLoss):
        def get_in_batch_negatives(self, anchors: list[str], candidates: list[list[str]]) -> Iterator[list[str]]:
            return iter(())

    return HardNegativesOnlyLoss(model, scale=1.0, activation_fn=None)


def adapter_trainer_class() -> type:
    """``CrossEncoderTrainer`` resuming from an adapter checkpoint. The library would reload a whole model
    from the checkpoint, which holds only the adapter, the pooler and the head (and the base has more
    layers); the model is built from that adapter instead (``RerankerTrainer.model``), and the trainer
    restores the rest (optimizer, scheduler, step, random state)."""
    from sentence_transformers.cross_encoder import CrossEncoderTrainer

    class AdapterCrossEncoderTrainer(CrossEncoderTrainer):
        def _load_from_checkpoint(self, checkpoint_path: str, model: Any = None) -> None:
            pass  # the model already holds this checkpoint's adapter

        def training_step(self, model: Any, inputs: Any, num_items_in_batch: Any = None) -> Any:
            import torch

            # The base model's dropout masks are drawn from (seed, step). From one shared random stream
            # a resumed run drew other masks than the uninterrupted run (the library restores that
            # stream only part way): measured, adapter weights up to 0.058 differed by up to 0.0023
            # after a resume at an epoch's end, the same every time; seeded per step they are equal.
            torch.manual_seed(self.args.seed + self.state.global_step)
            return super().training_step(model, inputs, num_items_in_batch)

    return AdapterCrossEncoderTrainer


class RerankerTrainer:
    def __init__(self, settings: RerankTrainingSettings, base_model_path: Path, device: str = "cpu") -> None:
        self.settings = settings
        self.base_model_path = base_model_path
        self.device = device

    def model(self, trained_adapter: Path | None = None) -> Any:
        """The cross-encoder with a fresh LoRA adapter, or with ``trained_adapter`` loaded (trainable)."""
        from peft import LoraConfig, TaskType
        from transformers import set_seed

        set_seed(self.settings.seed)  # the new head and the LoRA matrices start the same on every run
        model = load_cross_encoder(self.base_model_path, self.settings.layers, self.settings.max_length, self.device)
        if trained_adapter is not None:
            model.load_adapter(str(trained_adapter), is_trainable=True)
            return model
        config = LoraConfig(
            task_type=TaskType.SEQ_CLS,
            r=self.settings.lora_r,
            lora_alpha=self.settings.lora_alpha,
            lora_dropout=self.settings.lora_dropout,
            target_modules=_LORA_TARGETS,
            modules_to_save=["classifier", "pooler"],
        )
        model.add_adapter(config)
        return model

    def train(
        self, examples: Sequence[RerankExample], work_dir: Path, resume: bool = True, show_progress: bool = False
    ) -> RerankRun:
        """Train; checkpoints go to ``work_dir/checkpoints`` and a rerun resumes from the last one."""
        from datasets import Dataset
        from sentence_transformers.cross_encoder import CrossEncoderTrainingArguments

        settings = self.settings
        if len(examples) < 2:
            raise ValueError(f"too few training queries ({len(examples)}); ingest more statements first")
        group = len(examples[0].texts)
        if any(len(e.texts) != group for e in examples):
            raise ValueError("every training group needs the same number of texts")
        rows = [{"query": e.query, "positive": e.texts[0], **negative_columns(e.texts[1:])} for e in examples]
        random.Random(settings.seed).shuffle(rows)
        checkpoints = work_dir / "checkpoints"
        batch_size = min(settings.batch_size, len(examples))
        steps = settings.max_steps or max(1, len(examples) // batch_size) * settings.epochs
        common = checkpointed_arguments(
            checkpoints, epochs=settings.epochs, max_steps=settings.max_steps, batch_size=batch_size,
            learning_rate=settings.learning_rate, warmup_steps=int(settings.warmup_ratio * steps),
            checkpoint_steps=settings.checkpoint_steps, seed=settings.seed, show_progress=show_progress,
            device=self.device,
        )  # fmt: skip
        last = last_checkpoint(checkpoints) if resume else None
        if not resume:
            shutil.rmtree(checkpoints, ignore_errors=True)
        state = json.loads((last / "trainer_state.json").read_text()) if last else {}
        # Trained to the end elsewhere (a GPU box): resuming there would run one step more.
        finished = bool(last and settings.max_steps and state.get("global_step", 0) >= settings.max_steps)
        model = self.model(trained_adapter=last)
        started = time.perf_counter()
        if finished:
            global_step, history = int(state["global_step"]), state.get("log_history", [])
        else:
            trainer = adapter_trainer_class()(
                model=model,
                args=CrossEncoderTrainingArguments(**common),
                train_dataset=Dataset.from_list(rows),
                loss=listwise_loss(model),
            )
            result = trainer.train(resume_from_checkpoint=str(last) if last else None)
            global_step, history = int(result.global_step), trainer.state.log_history
        seconds = time.perf_counter() - started
        adapter = work_dir / "adapter"
        shutil.rmtree(adapter, ignore_errors=True)
        model[0].auto_model.save_pretrained(str(adapter))  # the adapter, the pooler and the head alone
        losses = [entry["loss"] for entry in history if "loss" in entry]
        return RerankRun(
            adapter_dir=adapter,
            examples=len(examples),
            steps=global_step,
            seconds=round(seconds, 1),
            resumed_from=last.name if last else None,
            final_loss=round(float(losses[-1]), 4) if losses else None,
        )


def negative_columns(negatives: Sequence[str]) -> dict[str, str]:
    """``negative_1`` .. ``negative_n``: the column names the loss reads hard negatives from."""
    return {f"negative_{i}": text for i, text in enumerate(negatives, start=1)}


def write_examples(examples: Sequence[RerankExample], kinds: Sequence[str], path: Path) -> None:
    with path.open("w", encoding="utf-8") as handle:
        for example, kind in zip(examples, kinds, strict=True):
            handle.write(json.dumps({"query": example.query, "texts": list(example.texts), "kind": kind},
                                    ensure_ascii=False) + "\n")  # fmt: skip


def read_examples(path: Path) -> tuple[list[RerankExample], list[str]]:
    examples, kinds = [], []
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            try:
                data = json.loads(line)
                examples.append(RerankExample(data["query"], tuple(data["texts"])))
                kinds.append(data["kind"])
            except (ValueError, KeyError, TypeError) as error:
                raise ValueError(f"{path}:{number}: not a mined reranker example ({error})") from error
    return examples, kinds


def main(argv: Sequence[str] | None = None) -> None:
    """Train from a mined work directory alone (see the module docstring)."""
    parser = argparse.ArgumentParser(description="Train the reranker from a `train rerank --mine-only` work directory")
    parser.add_argument("work_dir", type=Path)
    parser.add_argument("--base", type=Path, required=True, help="the base model's directory (the packaged MiniLM)")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--max-steps", type=int, default=None)
    parser.add_argument("--batch-size", type=int, default=None)
    parser.add_argument("--learning-rate", type=float, default=None)
    args = parser.parse_args(argv)
    values = json.loads((args.work_dir / TRAINING_SETTINGS_FILE).read_text(encoding="utf-8"))
    overrides = {"max_steps": args.max_steps, "batch_size": args.batch_size, "learning_rate": args.learning_rate}
    values.update({key: value for key, value in overrides.items() if value is not None})
    examples, _ = read_examples(args.work_dir / EXAMPLES_FILE)
    run = RerankerTrainer(SimpleNamespace(**values), args.base, args.device).train(  # type: ignore[arg-type]
        examples, args.work_dir, resume=True, show_progress=True
    )
    print(json.dumps({"steps": run.steps, "seconds": run.seconds, "final_loss": run.final_loss,
                      "resumed_from": run.resumed_from, "adapter": str(run.adapter_dir)}))  # fmt: skip


if __name__ == "__main__":
    main()
