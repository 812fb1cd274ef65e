"""The verdict cross-encoder: reads a question and a statement together and gives the five readings' probabilities.

The readings are the verdict reader's (:data:`rag_app.answering.verdict_reader.LABELS`): ``yes`` (the statement
proves what is asked), ``no`` (it refutes it), ``answers`` (it answers an open question), ``related`` (same objects,
does not settle) and ``unrelated``. A model over two embeddings made apart cannot see that a claim drops one of a
statement's hypotheses; a cross-encoder attends across both texts at once. It is the packaged MiniLM with a LoRA
adapter and a five-logit head, trained by ``python -m rag_app.training.train_verdict`` on pairs made
from the corpus and the labelled sets' tuning halves, and calibrated by one temperature on pairs it was not trained
on. Only the adapter and the head are stored (about 2 MB), so the package ships them.

A model directory holds ``card.json`` (base model, labels, temperature, what it was trained and measured on) and
``adapter/`` (the PEFT adapter, the pooler and the head).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ingestion.records import StatementRecord
from rag_app.answering.verdict_reader import LABELS, VerdictReading, softmax

PACKAGED_DIR = Path(__file__).resolve().parent / "verdict_weights" / "cross-encoder"
CARD, ADAPTER = "card.json", "adapter"
KIND = "verdict-cross-encoder"
BUILD_COMMAND = "python -m rag_app.training.train_verdict"


class VerdictModelError(RuntimeError):
    """The verdict model is missing, unreadable, or not a verdict model: the directory and why."""


def statement_text(record: StatementRecord) -> str:
    """The statement as the model reads it: its section, its name and its text (what the index searches)."""
    return record.search_text()


class VerdictCrossEncoder:
    """Calibrated readings of (question, statement) pairs; the model is loaded by the first reading."""

    def __init__(self, directory: Path = PACKAGED_DIR, device: str = "cpu", batch_size: int = 16) -> None:
        card_path = directory / CARD
        if not card_path.is_file():
            raise VerdictModelError(f"no verdict model in {directory} (no {CARD}); build one with `{BUILD_COMMAND}`")
        try:
            self.card: dict[str, Any] = json.loads(card_path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as error:
            raise VerdictModelError(
                f"{card_path}: unreadable ({error}); build it again with `{BUILD_COMMAND}`"
            ) from error
        if self.card.get("kind") != KIND or tuple(self.card.get("labels", ())) != LABELS:
            raise VerdictModelError(
                f"{directory} is not a verdict model for the readings {LABELS} (its card says kind "
                f"{self.card.get('kind')!r}, labels {self.card.get('labels')!r}); build one with `{BUILD_COMMAND}`"
            )
        if not (directory / ADAPTER / "adapter_config.json").is_file():
            raise VerdictModelError(f"{directory / ADAPTER}: no adapter; build it again with `{BUILD_COMMAND}`")
        self.directory = directory
        self.device = device
        self.batch_size = batch_size
        self.temperature = float(self.card.get("temperature", 1.0))
        self.max_length = int(self.card.get("max_length", 256))
        self._model: Any = None
        self._lock = threading.Lock()  # one model serves the chat's sessions; the first reading loads it once

    @property
    def identity(self) -> str:
        return str(self.card.get("identity", self.directory.name))

    @property
    def model(self) -> Any:
        if self._model is None:
            with self._lock:
                if self._model is None:
                    self._model = self._load()
        return self._model

    def load(self) -> None:
        """Load the model now (a server's warm-up), not at the first answer."""
        _ = self.model

    def _load(self) -> Any:
        from peft import PeftModel
        from transformers.utils import logging as transformers_logging

        from retriever.models.cross_encoder_reranker import load_cross_encoder
        from retriever.models.embedding_registry import resolve_embedder

        base = Path(resolve_embedder(str(self.card["base_model"]), None).model_path)
        verbosity = transformers_logging.get_verbosity()
        transformers_logging.set_verbosity_error()  # its load report lists the head the adapter brings as missing
        try:
            model = load_cross_encoder(base, None, self.max_length, self.device, labels=len(LABELS))
        finally:
            transformers_logging.set_verbosity(verbosity)
        try:
            adapted = PeftModel.from_pretrained(model[0].model, str(self.directory / ADAPTER))
        except (ValueError, RuntimeError, KeyError) as error:
            raise VerdictModelError(f"{self.directory / ADAPTER} does not fit its base ({error}); build it again "
                                    f"with `{BUILD_COMMAND}`") from error  # fmt: skip
        model[0].model = adapted.merge_and_unload().to(self.device).eval()
        return model

    def logits(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        """Raw logits, one row of five per (question, statement text) pair."""
        if not pairs:
            return np.zeros((0, len(LABELS)), dtype=np.float32)
        model = self.model
        scores = model.predict(list(pairs), batch_size=self.batch_size, show_progress_bar=len(pairs) > 200,
                               convert_to_numpy=True)  # fmt: skip
        return np.asarray(scores, dtype=np.float64).reshape(len(pairs), len(LABELS))

    def readings(self, question: str, statements: Sequence[StatementRecord]) -> list[VerdictReading]:
        """What each statement settles of ``question``, as calibrated probabilities."""
        logits = self.logits([(question, statement_text(record)) for record in statements])
        probabilities = softmax(logits / self.temperature)
        return [VerdictReading(dict(zip(LABELS, map(float, row), strict=True))) for row in probabilities]
