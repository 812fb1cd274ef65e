"""MaRF representation-level fusion (section 3.3): formula states fused into the text states.

Cross-attention takes the text encoder's token states as queries and the formula encoder's token
states as keys and values; a gated feed-forward ``sigmoid(FFN_G(H)) * FFN(H)`` of the attended
states is added back onto the text states (the residual). Both encoders stay frozen; only this
layer trains. The output feed-forward starts at zero, so before training the fused text is the
text: the pooled vector is exactly the dense vector, and training can only move away from it
where formulas help.

A text with several formulas is fused with each one separately (MaRF's multi-formula inference):
the pooled vectors are averaged, which averages the inner-product scores exactly; the token states
are averaged for MaxSim, an approximation that keeps one token set per statement.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from torch import nn
from torch.nn import functional as nnf


@dataclass(frozen=True, slots=True)
class FusionConfig:
    text_dim: int = 384
    formula_dim: int = 128
    heads: int = 4
    ffn_dim: int = 768
    max_formulas: int = 4  # per text: the longest ones (the most specific)


class MaRFFusion(nn.Module):
    def __init__(self, config: FusionConfig) -> None:
        super().__init__()
        self.config = config
        self.attention = nn.MultiheadAttention(
            config.text_dim, config.heads, kdim=config.formula_dim, vdim=config.formula_dim, batch_first=True
        )
        self.norm = nn.LayerNorm(config.text_dim)
        self.ffn = nn.Sequential(
            nn.Linear(config.text_dim, config.ffn_dim), nn.GELU(), nn.Linear(config.ffn_dim, config.text_dim)
        )
        self.gate = nn.Sequential(
            nn.Linear(config.text_dim, config.ffn_dim), nn.GELU(), nn.Linear(config.ffn_dim, config.text_dim)
        )
        nn.init.zeros_(self.ffn[2].weight)
        nn.init.zeros_(self.ffn[2].bias)

    def forward(
        self,
        text_states: torch.Tensor,
        text_mask: torch.Tensor,
        formula_states: torch.Tensor,
        formula_mask: torch.Tensor,
    ) -> torch.Tensor:
        """Fused token states (batch, text tokens, text_dim); masks are True at real tokens."""
        attended, _ = self.attention(text_states, formula_states, formula_states, key_padding_mask=~formula_mask)
        hidden = self.norm(text_states + attended)
        fused = text_states + torch.sigmoid(self.gate(hidden)) * self.ffn(hidden)
        return fused * text_mask.unsqueeze(-1).to(fused.dtype)

    def save(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        (directory / "config.json").write_text(json.dumps(asdict(self.config), indent=2))
        torch.save({name: tensor.half() for name, tensor in self.state_dict().items()}, directory / "weights.pt")

    @classmethod
    def load(cls, directory: Path) -> MaRFFusion:
        model = cls(FusionConfig(**json.loads((directory / "config.json").read_text())))
        state = torch.load(directory / "weights.pt", map_location="cpu", weights_only=True)
        model.load_state_dict({name: tensor.float() for name, tensor in state.items()})
        model.eval()
        return model


def masked_mean(states: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    weights = mask.unsqueeze(-1).to(states.dtype)
    return (states * weights).sum(-2) / weights.sum(-2).clamp(min=1)


def pooled_vector(states: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """The text vector of (fused) token states: the unit-length mean, as MiniLM pools."""
    return nnf.normalize(masked_mean(states, mask), dim=-1)


def fuse_texts(
    fusion: MaRFFusion,
    text_states: torch.Tensor,
    text_mask: torch.Tensor,
    formula_states: torch.Tensor,
    formula_mask: torch.Tensor,
    owner: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Fuse each text with each of its formulas and average (multi-formula inference).

    ``owner[p]`` is the text the ``p``-th formula belongs to. Returns the texts' vectors (the mean of
    the unit-length fused vectors; a text without formulas keeps its own unit vector) and token
    states (the mean of the fused states; unchanged without formulas).
    """
    vectors = pooled_vector(text_states, text_mask)
    if owner.numel() == 0:
        return vectors, text_states
    fused = fusion(text_states[owner], text_mask[owner], formula_states, formula_mask)
    per_formula = pooled_vector(fused, text_mask[owner])
    count = torch.bincount(owner, minlength=text_states.shape[0]).to(fused.dtype)
    has = count > 0
    divisor = count.clamp(min=1)
    fused_vectors = torch.zeros_like(vectors).index_add(0, owner, per_formula) / divisor[:, None]
    fused_states = torch.zeros_like(text_states).index_add(0, owner, fused) / divisor[:, None, None]
    vectors = torch.where(has[:, None], fused_vectors, vectors)
    states = torch.where(has[:, None, None], fused_states, text_states)
    return vectors, states
