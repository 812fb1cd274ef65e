"""The ``train rerank`` job: an ingested index in, a cross-encoder reranker directory out.

Steps: read the index's statements; split them the thesis's way (the same split as ``train embed``,
so held-out papers stay unseen); make (query, statement) pairs of the chosen kinds, with the
generated questions when the questions file has them; mine hard negatives from our own first stage
(the statements it ranks high for the query that are not its answer, training statements only);
train; write the adapter with a card. The working directory keeps the mined examples and the
checkpoints, so a rerun with the same corpus and settings resumes instead of restarting.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import random
import shutil
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tqdm import tqdm

from ingestion import StatementRecord
from rag_app.datasets.paper_split import PaperSplit, split_of
from rag_app.settings import Settings
from rag_app.training.checkpoints import saved_data_fits
from rag_app.training.index_store import open_index_store
from rag_app.training.question_file import QuestionFile
from rag_app.training.reranker_trainer import (
    EXAMPLES_FILE,
    TRAINING_SETTINGS_FILE,
    RerankerTrainer,
    RerankExample,
    RerankRun,
    read_examples,
    write_examples,
)
from rag_app.training.train_questions import default_questions_file
from rag_app.training.training_pairs import TrainingPair, count_by_kind, pairs_without_llm
from retriever.models.cross_encoder_reranker import ADAPTER, CARD, KIND, PACKAGED_RERANKER_DIR
from retriever.models.embedding_registry import resolve_embedder
from retriever.search_mode import SearchMode
from retriever.storage.atomic_files import directory_written_whole

SPLIT_FILE = "split.json"


@dataclass
class TrainRerankReport:
    directory: Path
    run: RerankRun
    pairs: dict[str, int]
    split: dict[str, int]
    reused_examples: bool


class TrainRerankJob:
    def __init__(self, settings: Settings, index_dir: Path, out_dir: Path | None = None) -> None:
        self.settings = settings
        self.training = settings.training.rerank
        self.index_dir = index_dir
        self.work_dir = settings.data_dir / "training" / "rerank" / self.training.name
        self.out_dir = out_dir or settings.data_dir / "models" / "rerankers" / self.training.name

    def run(
        self, resume: bool = True, show_progress: bool = False, log=print, mine_only: bool = False
    ) -> TrainRerankReport | None:
        """Mine (or reuse) the examples and train; ``mine_only`` stops after writing the work directory,
        which can then be trained elsewhere (``python -m rag_app.training.reranker_trainer``)."""
        from rag_app.pipeline import MathRAG
        from rag_app.search.embedder_factory import resolve_device

        store, manifest = open_index_store(self.index_dir, self.settings.store.connection())
        records = list(store.iter_records())
        if not records:
            raise ValueError(f"the index in {self.index_dir} holds no statements")
        split = split_of(records, self.settings.training.embed)  # the split `train embed` uses
        train_records = split.training_records(records)
        log(f"{len(records):,} statements; split: {split.summary()}; {len(train_records):,} train")
        self.work_dir.mkdir(parents=True, exist_ok=True)
        examples_path = self.work_dir / EXAMPLES_FILE
        fingerprint_path = self.work_dir / "fingerprint.txt"
        questions = QuestionFile.load(default_questions_file(self.settings))
        fingerprint = self._fingerprint(records, len(questions.questions))
        reused = resume and saved_data_fits(examples_path, fingerprint_path, fingerprint)
        if reused:
            examples, kinds = read_examples(examples_path)
            log(f"reusing {len(examples):,} mined examples from {examples_path}")
        else:
            resume = False  # a new corpus or new settings: old checkpoints belong to other data
            pairs = self._pairs(train_records, questions)
            log(f"pairs: {count_by_kind(pairs)}")
            rag = MathRAG(self.settings.with_overrides({"index_dir": self.index_dir}))
            examples, kinds = self._mine(pairs, rag, split, {r.id: r for r in train_records}, show_progress)
            write_examples(examples, kinds, examples_path)
            fingerprint_path.write_text(fingerprint + "\n")
        split.save(self.work_dir / SPLIT_FILE)
        (self.work_dir / TRAINING_SETTINGS_FILE).write_text(self.training.model_dump_json(indent=2) + "\n")
        if mine_only:
            log(f"mined examples and settings in {self.work_dir}")
            return None
        base_spec = self.training.base_model
        base_path = Path(resolve_embedder(base_spec, None).model_path)
        device = resolve_device(self.training.device or self.settings.embedding.device)
        trainer = RerankerTrainer(self.training, base_path, device)
        run = trainer.train(examples, self.work_dir, resume=resume, show_progress=show_progress)
        card = {
            "kind": KIND,
            "identity": f"{self.training.name}-{fingerprint[:10]}",
            "base_model": base_spec,
            "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "machine": f"{platform.platform()}, {os.cpu_count()} CPUs, device {device}",
            "training": self.training.model_dump(mode="json"),
            "data": {
                "index_embedder": manifest.get("embedder"),
                "statements": len(records),
                "train_statements": len(train_records),
                "queries": len(examples),
                "queries_by_kind": dict(sorted(_count(kinds).items())),
                "questions_file": str(questions.path) if questions.questions else None,
                "fingerprint": fingerprint,
            },
            "split": split.summary(),
            "run": {
                "steps": run.steps,
                "seconds": run.seconds,
                "resumed_from": run.resumed_from,
                "final_loss": run.final_loss,
            },
            "metrics": {},
        }
        write_reranker(self.out_dir, run.adapter_dir, card)
        split.save(self.out_dir / SPLIT_FILE)
        return TrainRerankReport(self.out_dir, run, dict(sorted(_count(kinds).items())), split.summary(), reused)

    def _pairs(self, train_records: list[StatementRecord], questions: QuestionFile) -> list[TrainingPair]:
        embed_training = self.settings.training.embed
        pairs = pairs_without_llm(train_records, embed_training.per_anchor, embed_training.mse_min_score,
                                  self.training.seed)  # fmt: skip
        pairs.extend(questions.pairs({r.id for r in train_records}))
        return [pair for pair in pairs if pair.kind in self.training.pair_kinds]

    def _mine(
        self,
        pairs: list[TrainingPair],
        rag: Any,
        split: PaperSplit,
        train_by_id: dict[str, StatementRecord],
        show_progress: bool,
    ) -> tuple[list[RerankExample], list[str]]:
        """One group per sampled query: a positive, then negatives the first stage ranked high."""
        training = self.training
        golds: dict[str, set[str]] = defaultdict(set)  # an anchor's other positives are never its negatives
        kind_of: dict[str, str] = {}
        for pair in pairs:
            golds[pair.anchor].add(pair.statement_id)
            kind_of.setdefault(pair.anchor, pair.kind)
        rng = random.Random(training.seed)
        anchors = sorted(golds)
        anchors = rng.sample(anchors, min(training.max_queries, len(anchors)))
        train_ids = sorted(train_by_id)
        mode = SearchMode(training.negative_mode)
        examples: list[RerankExample] = []
        kinds: list[str] = []
        for anchor in tqdm(anchors, desc="hard negatives", unit="query", disable=not show_progress):
            positive = train_by_id[rng.choice(sorted(golds[anchor]))]
            hits = rag.search_stack.first_stage().search(anchor, training.negative_depth, mode)
            ranked = [
                hit.record for hit in hits
                if hit.record.id not in golds[anchor] and split.is_training(hit.record)
                and hit.record.docno != positive.docno
            ]  # fmt: skip
            negatives = rng.sample(ranked, min(training.negatives, len(ranked)))
            while len(negatives) < training.negatives:  # a small corpus: random training statements fill in
                candidate = train_by_id[rng.choice(train_ids)]
                if candidate.id not in golds[anchor] and candidate not in negatives:
                    negatives.append(candidate)
                elif len(train_ids) <= len(golds[anchor]) + len(negatives):
                    break
            if len(negatives) < training.negatives:
                continue
            examples.append(RerankExample(anchor, tuple(r.search_text() for r in [positive, *negatives])))
            kinds.append(kind_of[anchor])
        return examples, kinds

    def _fingerprint(self, records: list[StatementRecord], questions: int) -> str:
        """Same corpus, questions and data settings: the mined examples and checkpoints can be reused."""
        data_settings = self.training.model_dump(
            mode="json", exclude={"device", "epochs", "max_steps", "checkpoint_steps", "name", "learning_rate"}
        )
        digest = hashlib.sha256(json.dumps([data_settings, questions], sort_keys=True, default=str).encode())
        for record_id in sorted(r.id for r in records):
            digest.update(record_id.encode())
        return digest.hexdigest()[:16]


def write_reranker(directory: Path, adapter_dir: Path, card: dict[str, Any]) -> Path:
    """A reranker directory: the card and the adapter (replacing what was there)."""
    with directory_written_whole(directory) as partial:
        shutil.copytree(adapter_dir, partial / ADAPTER)
        (partial / CARD).write_text(json.dumps(card, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return directory


def publish_reranker(directory: Path, metrics: dict[str, Any] | None = None,
                     target: Path = PACKAGED_RERANKER_DIR) -> Path:  # fmt: skip
    """Ship a trained reranker inside the package (``rerank.model = "packaged"``)."""
    card = json.loads((directory / CARD).read_text(encoding="utf-8"))
    card["data"] = {key: value for key, value in card.get("data", {}).items() if key != "questions_file"}
    if metrics is not None:
        card["metrics"] = metrics
    return write_reranker(target, directory / ADAPTER, card)


def _count(kinds: list[str]) -> dict[str, int]:
    counts: dict[str, int] = defaultdict(int)
    for kind in kinds:
        counts[kind] += 1
    return dict(counts)
