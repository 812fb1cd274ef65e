"""Training the MaRF fusion layer with both encoders frozen.

Examples are (query, statement, hard negative) triples: the fine-tuning issue's pairs (names,
defined terms, section titles, label words, MSE questions) and formula pairs (a statement's
formula, alone or after its section title, finds the statement). The text encoder's token states
are computed once per distinct text and cached; formula states come from the frozen formula
encoder. The loss is InfoNCE with in-batch negatives on the pooled vectors plus the same on MaxSim
scores, so both scorings are trained.
"""

from __future__ import annotations

import random
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import torch
from torch.nn import functional as nnf
from tqdm import tqdm

from ingestion.records import StatementRecord
from rag_app.training.optimization import adamw_with_warmup, step
from retriever.models.embedder import Embedder
from retriever.models.formula_encoder import FormulaEncoder, maxsim_scores
from retriever.models.marf_fusion import FusionConfig, MaRFFusion, fuse_texts
from retriever.text.formula_selection import select_formulas
from retriever.text.query_formulas import query_formulas


@dataclass(frozen=True, slots=True)
class FusionExample:
    query: str
    positive_id: str
    negative_id: str = ""
    kind: str = ""


@dataclass(frozen=True, slots=True)
class FusionTrainingRun:
    model: MaRFFusion
    steps: int
    seconds: float
    encode_seconds: float
    first_loss: float
    last_loss: float


class FusionTrainer:
    def __init__(
        self,
        embedder: Embedder,
        formula_encoder: FormulaEncoder,
        config: FusionConfig,
        steps: int = 400,
        batch_size: int = 32,
        learning_rate: float = 3e-4,
        temperature: float = 0.05,
        maxsim_weight: float = 0.5,
        max_seq_length: int = 128,
        device: str = "cpu",
        seed: int = 2026,
    ) -> None:
        self.embedder = embedder
        self.formula_encoder = formula_encoder
        self.config = config
        self.steps = steps
        self.batch_size = batch_size
        self.learning_rate = learning_rate
        self.temperature = temperature
        self.maxsim_weight = maxsim_weight
        self.max_seq_length = max_seq_length
        self.device = torch.device(device)
        self.seed = seed

    def train(
        self, examples: Sequence[FusionExample], records: Mapping[str, StatementRecord], show_progress: bool = False
    ) -> FusionTrainingRun:
        torch.manual_seed(self.seed)
        rng = random.Random(self.seed)
        started = time.perf_counter()
        texts, formulas = self._texts(examples, records)
        states = self._text_states(texts, show_progress)
        encode_seconds = time.perf_counter() - started
        model = MaRFFusion(self.config).to(self.device)
        self.formula_encoder.model.to(self.device).eval()
        optimizer, schedule = adamw_with_warmup(model, self.learning_rate, self.steps)
        losses: list[float] = []
        model.train()
        for _ in tqdm(range(self.steps), desc="fusion layer", disable=not show_progress):
            batch = _batch(examples, self.batch_size, rng)
            query_keys = [("q", e.query) for e in batch]
            doc_keys = [("d", e.positive_id) for e in batch] + [("d", e.negative_id) for e in batch if e.negative_id]
            query_vectors, query_states, query_mask = self._fuse(model, query_keys, formulas, states)
            doc_vectors, doc_states, doc_mask = self._fuse(model, doc_keys, formulas, states)
            labels = torch.arange(len(batch), device=self.device)
            pooled = (query_vectors @ doc_vectors.T) / self.temperature
            loss = nnf.cross_entropy(pooled, labels)
            if self.maxsim_weight:
                maxsim = maxsim_scores(query_states, query_mask, doc_states, doc_mask) / self.temperature
                loss = loss + self.maxsim_weight * nnf.cross_entropy(maxsim, labels)
            losses.append(step(loss, model, optimizer, schedule))
        model.to("cpu").eval()
        self.formula_encoder.model.to("cpu")
        tail = losses[-20:]
        return FusionTrainingRun(
            model, self.steps, time.perf_counter() - started, encode_seconds, losses[0], sum(tail) / len(tail)
        )

    def _texts(
        self, examples: Sequence[FusionExample], records: Mapping[str, StatementRecord]
    ) -> tuple[dict[tuple[str, str], str], dict[tuple[str, str], list[str]]]:
        texts: dict[tuple[str, str], str] = {}
        formulas: dict[tuple[str, str], list[str]] = {}
        for example in examples:
            texts[("q", example.query)] = example.query
            formulas[("q", example.query)] = select_formulas(query_formulas(example.query), self.config.max_formulas)
            for statement_id in filter(None, (example.positive_id, example.negative_id)):
                record = records[statement_id]
                texts[("d", statement_id)] = record.search_text()
                formulas[("d", statement_id)] = select_formulas(record.formulas, self.config.max_formulas)
        return texts, formulas

    def _text_states(
        self, texts: Mapping[tuple[str, str], str], show_progress: bool
    ) -> dict[tuple[str, str], torch.Tensor]:
        """The frozen text encoder's token states of every distinct text, computed once (float16)."""
        keys = list(texts)
        states: dict[tuple[str, str], torch.Tensor] = {}
        chunk = 512
        progress = tqdm(total=len(keys), desc="text token states", unit="text", disable=not show_progress)
        with progress:
            for start in range(0, len(keys), chunk):
                part = keys[start : start + chunk]
                _, tokens = self.embedder.embed_with_tokens(
                    [texts[key] for key in part], max_seq_length=self.max_seq_length
                )
                for key, token_states in zip(part, tokens, strict=True):
                    states[key] = torch.from_numpy(token_states).half()
                progress.update(len(part))
        return states

    def _fuse(
        self,
        model: MaRFFusion,
        keys: list[tuple[str, str]],
        formulas: Mapping[tuple[str, str], list[str]],
        states: Mapping[tuple[str, str], torch.Tensor],
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        width = max(states[key].shape[0] for key in keys)
        text_states = torch.zeros((len(keys), width, self.config.text_dim), device=self.device)
        text_mask = torch.zeros((len(keys), width), dtype=torch.bool, device=self.device)
        for row, key in enumerate(keys):
            length = states[key].shape[0]
            text_states[row, :length] = states[key].to(self.device).float()
            text_mask[row, :length] = True
        flat = [formula for key in keys for formula in formulas[key]]
        owner = torch.tensor(
            [row for row, key in enumerate(keys) for _ in formulas[key]], dtype=torch.long, device=self.device
        )
        with torch.no_grad():
            if flat:
                ids, mask = self.formula_encoder.batch(flat)
                formula_mask = mask.to(self.device)
                formula_states = self.formula_encoder.model(ids.to(self.device), formula_mask)
            else:
                formula_states = torch.zeros((0, 1, self.config.formula_dim), device=self.device)
                formula_mask = torch.zeros((0, 1), dtype=torch.bool, device=self.device)
        vectors, fused = fuse_texts(model, text_states, text_mask, formula_states, formula_mask, owner)
        return vectors, fused, text_mask


def _batch(examples: Sequence[FusionExample], size: int, rng: random.Random) -> list[FusionExample]:
    """A random batch with each statement at most once (it would be a false negative for the other)."""
    batch: list[FusionExample] = []
    used: set[str] = set()
    for _ in range(size * 20):
        if len(batch) >= size:
            break
        example = examples[rng.randrange(len(examples))]
        ids = {example.positive_id, example.negative_id} - {""}
        if not ids & used:
            used |= ids
            batch.append(example)
    return batch
