"""Train the cross-encoder reranker: listwise softmax over (query, positive, hard negatives) groups.

Each example is one query with its positive statement first and ``negatives`` statements the first
stage ranked high but that are not its answer. The model scores every pair of the group and the
loss is the cross-entropy of picking the positive: exactly the decision reranking makes.

The model is the packaged MiniLM read as a sequence classifier (one logit) with a LoRA adapter on
its encoder layers; the pooler and the classifier head are trained whole (``modules_to_save``).
transformers' ``Trainer`` runs the loop, so checkpoints, resuming, warmup and devices are its own;
only the listwise loss and the grouping collator are ours (sentence-transformers' CrossEncoder
trainer cannot start from the packaged bi-encoder folder with an adapter).

Training needs only torch, transformers and peft, so the mined work directory (``examples.jsonl``,
``training.json``) can be trained on another machine, a GPU box without the index::

    python -m rag_app.training.reranker_trainer WORK_DIR --base MODEL_DIR --device cuda

and ``rag-app train rerank`` on the index's machine then resumes from the copied-back checkpoints.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from rag_app.training.checkpoints import checkpointed_arguments, last_checkpoint

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


class GroupCollator:
    """Flattens a batch of groups into (query, text) pairs, tokenized together."""

    def __init__(self, tokenizer: Any, max_length: int) -> None:
        self.tokenizer = tokenizer
        self.max_length = max_length

    def __call__(self, features: Sequence[dict[str, Any]]) -> dict[str, Any]:
        import torch

        group = len(features[0]["texts"])
        if any(len(f["texts"]) != group for f in features):
            raise ValueError("every training group needs the same number of texts")
        queries = [f["query"] for f in features for _ in range(group)]
        texts = [text for f in features for text in f["texts"]]
        batch = dict(
            self.tokenizer(
                queries,
                texts,
                truncation="longest_first",
                max_length=self.max_length,
                padding=True,
                return_tensors="pt",
            )
        )
        batch["group_size"] = torch.tensor(group)
        return batch


def make_trainer_class() -> type:
    """A ``Trainer`` whose loss is the listwise softmax over each group (imported late: transformers is heavy)."""
    import torch
    from transformers import Trainer

    class ListwiseTrainer(Trainer):
        def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
            group = int(inputs.pop("group_size"))
            outputs = model(**inputs)
            logits = outputs.logits[:, 0].view(-1, group)
            target = torch.zeros(logits.shape[0], dtype=torch.long, device=logits.device)  # the positive is first
            loss = torch.nn.functional.cross_entropy(logits, target)
            return (loss, outputs) if return_outputs else loss

    return ListwiseTrainer


class RerankerTrainer:
    def __init__(self, settings: RerankTrainingSettings, base_model_path: Path, device: str = "cpu") -> None:
        self.settings = settings
        self.base_model_path = base_model_path
        self.device = device

    def model(self) -> Any:
        from peft import LoraConfig, TaskType, get_peft_model
        from transformers import AutoModelForSequenceClassification, set_seed

        set_seed(self.settings.seed)  # the new head and the LoRA matrices start the same on every run
        base = AutoModelForSequenceClassification.from_pretrained(
            str(self.base_model_path), num_labels=1, num_hidden_layers=self.settings.layers
        )
        config = LoraConfig(
            task_type=TaskType.SEQ_CLS,
            r=self.settings.lora_r,
            lora_alpha=self.settings.lora_alpha,
            lora_dropout=self.settings.lora_dropout,
            target_modules=_LORA_TARGETS,
            modules_to_save=["classifier", "pooler"],
        )
        return get_peft_model(base, config)

    def train(
        self, examples: Sequence[RerankExample], work_dir: Path, resume: bool = True, show_progress: bool = False
    ) -> RerankRun:
        """Train; checkpoints go to ``work_dir/checkpoints`` and a rerun resumes from the last one."""
        from transformers import AutoTokenizer, TrainingArguments

        settings = self.settings
        if len(examples) < 2:
            raise ValueError(f"too few training queries ({len(examples)}); ingest more statements first")
        # A plain list is a map-style dataset for the Trainer (no `datasets` needed on a GPU box).
        dataset = [{"query": e.query, "texts": list(e.texts)} for e in examples]
        random.Random(settings.seed).shuffle(dataset)
        tokenizer = AutoTokenizer.from_pretrained(str(self.base_model_path))
        checkpoints = work_dir / "checkpoints"
        batch_size = min(settings.batch_size, len(examples))
        steps = settings.max_steps or max(1, len(examples) // batch_size) * settings.epochs
        common = checkpointed_arguments(
            checkpoints, epochs=settings.epochs, max_steps=settings.max_steps, batch_size=batch_size,
            learning_rate=settings.learning_rate, warmup_steps=int(settings.warmup_ratio * steps),
            checkpoint_steps=settings.checkpoint_steps, seed=settings.seed, show_progress=show_progress,
            device=self.device,
        )  # fmt: skip
        # remove_unused_columns: the collator reads the query and texts columns itself.
        args = TrainingArguments(**common, remove_unused_columns=False)
        trainer = make_trainer_class()(
            model=self.model(),
            args=args,
            train_dataset=dataset,
            data_collator=GroupCollator(tokenizer, settings.max_length),
        )
        last = last_checkpoint(checkpoints) if resume else None
        if not resume:
            shutil.rmtree(checkpoints, ignore_errors=True)
        started = time.perf_counter()
        state = json.loads((last / "trainer_state.json").read_text()) if last else {}
        if settings.max_steps and state.get("global_step", 0) >= settings.max_steps:
            # Trained to the end elsewhere (a GPU box): resuming there would run one step more.
            from peft import load_peft_weights, set_peft_model_state_dict

            set_peft_model_state_dict(trainer.model, load_peft_weights(str(last)))
            global_step, history = int(state["global_step"]), state.get("log_history", [])
        else:
            result = trainer.train(resume_from_checkpoint=str(last) if last else None)
            global_step, history = int(result.global_step), trainer.state.log_history
        seconds = time.perf_counter() - started
        adapter = work_dir / "adapter"
        shutil.rmtree(adapter, ignore_errors=True)
        trainer.model.save_pretrained(str(adapter))
        losses = [entry["loss"] for entry in history if "loss" in entry]
        return RerankRun(
            adapter_dir=adapter,
            examples=len(examples),
            steps=global_step,
            seconds=round(seconds, 1),
            resumed_from=last.name if last else None,
            final_loss=round(float(losses[-1]), 4) if losses else None,
        )


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
