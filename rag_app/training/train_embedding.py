"""The ``train embed`` job: an ingested index in, a new registered embedding version out.

Steps: read the index's statements; split them the thesis's way; make pairs (no LLM, plus LLM
questions when asked); mine hard negatives; train; register the weights with a model card that
records the base model, the settings, the data and the split. The working directory keeps the
pairs and checkpoints, so a rerun with the same settings and corpus resumes instead of restarting.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import random
import time
from dataclasses import dataclass, field
from pathlib import Path

from ingestion import StatementRecord
from rag_app.datasets.paper_split import split_of
from rag_app.settings import Settings
from rag_app.training.checkpoints import saved_data_fits
from rag_app.training.embedding_trainer import EmbeddingTrainer, TrainingRun
from rag_app.training.hard_negatives import HardNegativeMiner
from rag_app.training.index_store import open_index_store
from rag_app.training.training_pairs import (
    TrainingPair,
    chosen_by_kind,
    count_by_kind,
    pairs_without_llm,
    read_pairs,
    write_pairs,
)
from retriever.models.embedding_registry import EmbeddingRegistry, RegisteredEmbedder

SPLIT_FILE = "split.json"
PAIRS_FILE = "pairs.jsonl"


@dataclass
class TrainEmbedReport:
    model: RegisteredEmbedder
    run: TrainingRun
    pairs: dict[str, int]
    split: dict[str, int]
    questions: dict[str, int] = field(default_factory=dict)
    reused_pairs: bool = False


class TrainEmbedJob:
    def __init__(self, settings: Settings, index_dir: Path, work_dir: Path | None = None) -> None:
        self.settings = settings
        self.training = settings.training.embed
        self.index_dir = index_dir
        self.work_dir = work_dir or settings.data_dir / "training" / self.training.name

    def run(self, resume: bool = True, show_progress: bool = False, log=print) -> TrainEmbedReport:
        from rag_app.search.embedder_factory import make_embedder, resolve_device

        training = self.training
        store, manifest = open_index_store(self.index_dir, self.settings.store.connection())
        records = list(store.iter_records())
        if not records:
            raise ValueError(f"the index in {self.index_dir} holds no statements")
        by_id = {record.id: record for record in records}
        split = split_of(records, training)
        train_records = split.training_records(records)
        log(f"{len(records):,} statements; split: {split.summary()}; {len(train_records):,} train")
        self.work_dir.mkdir(parents=True, exist_ok=True)
        fingerprint = self._fingerprint(records)
        pairs_path = self.work_dir / PAIRS_FILE
        fingerprint_path = self.work_dir / "fingerprint.txt"
        base = make_embedder(self.settings, training.base_model)
        base.device = resolve_device(training.device or self.settings.embedding.device)
        questions: dict[str, int] = {}
        reused = resume and saved_data_fits(pairs_path, fingerprint_path, fingerprint)
        if reused:
            pairs = list(read_pairs(pairs_path))
            log(f"reusing {len(pairs):,} pairs from {pairs_path}")
        else:
            # A new corpus or new settings: old checkpoints belong to other data.
            resume = False
            pairs = pairs_without_llm(train_records, training.per_anchor, training.mse_min_score, training.seed)
            if training.llm_questions or training.questions_file:
                generated, questions = self._questions(train_records, show_progress)
                pairs.extend(generated)
            pairs = chosen_by_kind(pairs, training.pair_kinds, training.max_pairs_per_kind, training.seed)
            if training.max_pairs and len(pairs) > training.max_pairs:
                pairs = random.Random(training.seed).sample(pairs, training.max_pairs)
            log(f"pairs: {count_by_kind(pairs)}")
            if training.hard_negatives:
                # The index's own vectors serve when the index was built by the model being fine-tuned.
                ids = [r.id for r in train_records]
                stored = store.vectors(ids) if manifest.get("embedder") == base.identity else None
                miner = HardNegativeMiner(train_records, base, training.negative_candidates, stored)
                pairs = miner.mine(pairs, show_progress)
            write_pairs(pairs, pairs_path)
            fingerprint_path.write_text(fingerprint + "\n")
        split.save(self.work_dir / SPLIT_FILE)
        trainer = EmbeddingTrainer(training, base, device=base.device)
        run = trainer.train(pairs, by_id, self.work_dir, resume=resume, show_progress=show_progress)
        card = {
            "base_model": training.base_model,
            "base_identity": base.identity,
            "kind": run.kind,
            "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "machine": f"{platform.platform()}, {os.cpu_count()} CPUs, device {base.device}",
            "max_seq_length": training.max_seq_length,
            "training": training.model_dump(mode="json"),
            "learning_rate": trainer.learning_rate(),
            "data": {
                "index": str(self.index_dir),
                "index_embedder": manifest.get("embedder"),
                "statements": len(records),
                "train_statements": len(train_records),
                "pairs": count_by_kind(pairs),
                "pairs_with_hard_negative": sum(1 for p in pairs if p.negative_id),
                "questions": questions,
                "fingerprint": fingerprint,
            },
            "split": split.summary(),
            "run": {
                "examples": run.examples,
                "steps": run.steps,
                "seconds": run.seconds,
                "resumed_from": run.resumed_from,
                "final_loss": run.final_loss,
            },
            "metrics": {},
        }
        registry = EmbeddingRegistry(self.settings.resolved_registry_dir)
        model = registry.create_version(training.name, card, run.weights_dir)
        split.save(model.directory / SPLIT_FILE)
        return TrainEmbedReport(model, run, count_by_kind(pairs), split.summary(), questions, reused)

    def _questions(self, records: list[StatementRecord], show_progress: bool) -> tuple[list[TrainingPair], dict]:
        """The questions file extended to the training statements (see ``train questions``), as pairs."""
        from rag_app.training.question_file import QuestionFile
        from rag_app.training.train_questions import default_questions_file, generate_questions

        if self.training.questions_file is not None:  # read as it is: the generation job extends it elsewhere
            path = self.training.questions_file
            if not path.is_file():
                raise FileNotFoundError(f"no questions file at {path} (write one with `rag-app train questions`)")
            pairs = QuestionFile.load(path).pairs({record.id for record in records})
            return pairs, {"file": str(path), "generated": 0, "cached": len(pairs), "failed": 0}
        path = default_questions_file(self.settings)
        report = generate_questions(self.settings, self.index_dir, path, show_progress=show_progress)
        pairs = QuestionFile.load(path).pairs({record.id for record in records})
        summary = {"file": str(path), "generated": report.added, "cached": report.existing, "failed": report.failed}
        return pairs, summary

    def _fingerprint(self, records: list[StatementRecord]) -> str:
        """Same corpus and same data settings: the saved pairs and checkpoints can be reused."""
        data_settings = self.training.model_dump(
            mode="json", exclude={"device", "epochs", "max_steps", "checkpoint_steps", "name"}
        )
        digest = hashlib.sha256(json.dumps(data_settings, sort_keys=True).encode())
        for record_id in sorted(r.id for r in records):
            digest.update(record_id.encode())
        return digest.hexdigest()[:16]
