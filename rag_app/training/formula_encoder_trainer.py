"""Contrastive training of the formula encoder (InfoNCE with in-batch negatives).

Each example is (anchor, positive, hard negative): a sympy rewrite of the anchor, or a formula
that shares a statement with it, and a structurally close formula that is not equal. The loss
scores every anchor against every positive and hard negative of the batch, so the other rows are
negatives too, and is symmetric (positives also find their anchors). Scoring is the mean-pooled
cosine or MaRF's MaxSim, as configured.
"""

from __future__ import annotations

import random
import time
from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch.nn import functional as nnf
from tqdm import tqdm

from rag_app.training.formula_rewrites import EquivalencePair
from rag_app.training.optimization import adamw_with_warmup, step
from retriever.models.formula_encoder import (
    FormulaEncoder,
    FormulaEncoderConfig,
    FormulaVocabulary,
    maxsim_scores,
    mean_pool,
)
from retriever.text.formula_normalizer import normalize_formula


@dataclass(frozen=True, slots=True)
class FormulaTrainingRun:
    encoder: FormulaEncoder
    steps: int
    seconds: float
    first_loss: float
    last_loss: float  # mean of the last 20 steps


class FormulaEncoderTrainer:
    def __init__(
        self,
        config: FormulaEncoderConfig,
        steps: int = 1500,
        batch_size: int = 128,
        learning_rate: float = 5e-4,
        temperature: float = 0.05,
        device: str = "cpu",
        seed: int = 2026,
    ) -> None:
        self.config = config
        self.steps = steps
        self.batch_size = batch_size
        self.learning_rate = learning_rate
        self.temperature = temperature
        self.device = torch.device(device)
        self.seed = seed

    def train(
        self, examples: Sequence[EquivalencePair], vocabulary_formulas: Sequence[str], show_progress: bool = False
    ) -> FormulaTrainingRun:
        torch.manual_seed(self.seed)
        rng = random.Random(self.seed)
        texts = [*vocabulary_formulas, *(e.anchor for e in examples), *(e.positive for e in examples)]
        vocabulary = FormulaVocabulary.build(normalize_formula(text).tokens for text in texts)
        encoder = FormulaEncoder.new(vocabulary, self.config)
        model = encoder.model.to(self.device)
        optimizer, schedule = adamw_with_warmup(model, self.learning_rate, self.steps)
        losses: list[float] = []
        started = time.perf_counter()
        model.train()
        for _ in tqdm(range(self.steps), desc=f"formula encoder ({self.config.scoring})", disable=not show_progress):
            batch = _batch(examples, self.batch_size, rng)
            loss = self._loss(encoder, batch)
            losses.append(step(loss, model, optimizer, schedule))
        model.to("cpu").eval()
        tail = losses[-20:]
        return FormulaTrainingRun(encoder, self.steps, time.perf_counter() - started, losses[0], sum(tail) / len(tail))

    def _loss(self, encoder: FormulaEncoder, batch: list[EquivalencePair]) -> torch.Tensor:
        negatives = [e.negative for e in batch if e.negative]
        anchors = self._states(encoder, [e.anchor for e in batch])
        candidates = self._states(encoder, [e.positive for e in batch] + negatives)
        scores = self._scores(anchors, candidates) / self.temperature
        labels = torch.arange(len(batch), device=self.device)
        forward = nnf.cross_entropy(scores, labels)
        backward = nnf.cross_entropy(scores[:, : len(batch)].T, labels)
        return (forward + backward) / 2

    def _states(self, encoder: FormulaEncoder, formulas: list[str]) -> tuple[torch.Tensor, torch.Tensor]:
        ids, mask = encoder.batch(formulas)
        ids, mask = ids.to(self.device), mask.to(self.device)
        return encoder.model(ids, mask), mask

    def _scores(
        self, queries: tuple[torch.Tensor, torch.Tensor], documents: tuple[torch.Tensor, torch.Tensor]
    ) -> torch.Tensor:
        if self.config.scoring == "maxsim":
            return maxsim_scores(queries[0], queries[1], documents[0], documents[1])
        return mean_pool(*queries) @ mean_pool(*documents).T


def _batch(examples: Sequence[EquivalencePair], size: int, rng: random.Random) -> list[EquivalencePair]:
    """A random batch with each anchor at most once (two rewrites of one anchor would be false negatives)."""
    batch: list[EquivalencePair] = []
    anchors: set[str] = set()
    for _ in range(size * 20):
        if len(batch) >= size:
            break
        example = examples[rng.randrange(len(examples))]
        if example.anchor not in anchors and example.positive not in anchors:
            anchors.update((example.anchor, example.positive))
            batch.append(example)
    return batch
