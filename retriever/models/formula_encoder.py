"""A small Transformer over normalized formula tokens (MaRF's formula encoder).

Formulas are normalized (:mod:`retriever.text.formula_normalizer`), mapped to ids with a vocabulary
built from the training formulas, and encoded into one state per token. Two scorings are trained
and compared: the mean-pooled vector (cosine) and MaRF's token-level MaxSim. A saved encoder is
a directory holding ``config.json``, ``vocab.json`` and ``weights.pt``.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Literal

import numpy as np
import torch
from torch import nn
from torch.nn import functional as nnf

from retriever.text.formula_normalizer import normalize_formula

PAD, UNK, CLS = "[PAD]", "[UNK]", "[CLS]"
Scoring = Literal["mean", "maxsim"]


@dataclass(frozen=True, slots=True)
class FormulaEncoderConfig:
    dim: int = 128
    layers: int = 2
    heads: int = 4
    ffn_dim: int = 256
    max_tokens: int = 64
    dropout: float = 0.1
    scoring: Scoring = "mean"  # the scoring it was trained with


class FormulaVocabulary:
    """Token ids; the reserved tokens come first, then tokens by descending frequency."""

    def __init__(self, tokens: Sequence[str]) -> None:
        self.tokens = list(tokens)
        self.ids = {token: i for i, token in enumerate(self.tokens)}

    @classmethod
    def build(cls, token_lists: Iterable[Sequence[str]], min_count: int = 2, max_size: int = 8000) -> FormulaVocabulary:
        counts = Counter(token for tokens in token_lists for token in tokens)
        frequent = [token for token, count in counts.most_common(max_size) if count >= min_count]
        return cls([PAD, UNK, CLS, *frequent])

    def __len__(self) -> int:
        return len(self.tokens)

    def encode(self, tokens: Sequence[str], max_tokens: int) -> list[int]:
        unknown = self.ids[UNK]
        return [self.ids[CLS], *(self.ids.get(token, unknown) for token in tokens[: max_tokens - 1])]


class FormulaTransformer(nn.Module):
    """Token and position embeddings, then a pre-norm Transformer encoder."""

    def __init__(self, vocab_size: int, config: FormulaEncoderConfig) -> None:
        super().__init__()
        self.token_embedding = nn.Embedding(vocab_size, config.dim, padding_idx=0)
        self.position_embedding = nn.Embedding(config.max_tokens, config.dim)
        layer = nn.TransformerEncoderLayer(
            config.dim, config.heads, config.ffn_dim, config.dropout, batch_first=True, norm_first=True
        )
        self.encoder = nn.TransformerEncoder(layer, config.layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(config.dim)

    def forward(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """Token states (batch, tokens, dim); ``mask`` is True at real tokens."""
        positions = torch.arange(ids.shape[1], device=ids.device)
        states = self.token_embedding(ids) + self.position_embedding(positions)[None]
        return self.norm(self.encoder(states, src_key_padding_mask=~mask))


def mean_pool(states: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Unit-length mean of the real tokens' states."""
    weights = mask.unsqueeze(-1).to(states.dtype)
    pooled = (states * weights).sum(1) / weights.sum(1).clamp(min=1)
    return nnf.normalize(pooled, dim=-1)


def maxsim_scores(
    query_states: torch.Tensor, query_mask: torch.Tensor, doc_states: torch.Tensor, doc_mask: torch.Tensor
) -> torch.Tensor:
    """MaxSim (ColBERT, MaRF): each query token's best cosine over a document's tokens, averaged.

    Returns (queries, documents).
    """
    q = nnf.normalize(query_states, dim=-1)
    d = nnf.normalize(doc_states, dim=-1)
    similarity = torch.einsum("qid,pjd->qpij", q, d)
    similarity = similarity.masked_fill(~doc_mask[None, :, None, :], -1e4)
    best = similarity.max(dim=-1).values  # (queries, documents, query tokens)
    weights = query_mask[:, None, :].to(best.dtype)
    return (best * weights).sum(-1) / weights.sum(-1).clamp(min=1)


class FormulaEncoder:
    """The trained encoder with its vocabulary: LaTeX in, token states or pooled vectors out."""

    def __init__(self, model: FormulaTransformer, vocabulary: FormulaVocabulary, config: FormulaEncoderConfig) -> None:
        self.model = model
        self.vocabulary = vocabulary
        self.config = config

    @classmethod
    def new(cls, vocabulary: FormulaVocabulary, config: FormulaEncoderConfig) -> FormulaEncoder:
        return cls(FormulaTransformer(len(vocabulary), config), vocabulary, config)

    @property
    def dim(self) -> int:
        return self.config.dim

    def batch(self, formulas: Sequence[str]) -> tuple[torch.Tensor, torch.Tensor]:
        """Padded ids and mask for LaTeX formulas."""
        encoded = [
            self.vocabulary.encode(normalize_formula(formula).tokens, self.config.max_tokens) for formula in formulas
        ]
        width = max((len(ids) for ids in encoded), default=1)
        ids = torch.zeros((len(encoded), width), dtype=torch.long)
        for row, token_ids in enumerate(encoded):
            ids[row, : len(token_ids)] = torch.tensor(token_ids)
        return ids, ids != 0

    def token_states(self, formulas: Sequence[str]) -> tuple[torch.Tensor, torch.Tensor]:
        """(states, mask) for a batch of formulas (no gradient; the model in eval mode)."""
        self.model.eval()
        ids, mask = self.batch(formulas)
        with torch.inference_mode():
            return self.model(ids, mask), mask

    def embed(self, formulas: Sequence[str], batch_size: int = 256) -> np.ndarray:
        """Unit-length mean-pooled vectors, one row per formula."""
        rows = []
        for start in range(0, len(formulas), batch_size):
            states, mask = self.token_states(formulas[start : start + batch_size])
            rows.append(mean_pool(states, mask).numpy())
        return np.concatenate(rows) if rows else np.zeros((0, self.dim), dtype=np.float32)

    def save(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        (directory / "config.json").write_text(json.dumps(asdict(self.config), indent=2))
        (directory / "vocab.json").write_text(json.dumps(self.vocabulary.tokens, ensure_ascii=False))
        # half precision on disk: the shipped weights stay small, the scores do not move measurably
        state = {name: tensor.half() for name, tensor in self.model.state_dict().items()}
        torch.save(state, directory / "weights.pt")

    @classmethod
    def load(cls, directory: Path) -> FormulaEncoder:
        config = FormulaEncoderConfig(**json.loads((directory / "config.json").read_text()))
        vocabulary = FormulaVocabulary(json.loads((directory / "vocab.json").read_text()))
        model = FormulaTransformer(len(vocabulary), config)
        state = torch.load(directory / "weights.pt", map_location="cpu", weights_only=True)
        model.load_state_dict({name: tensor.float() for name, tensor in state.items()})
        model.eval()
        return cls(model, vocabulary, config)
