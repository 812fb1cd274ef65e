"""The formula-fusion retriever's encoder: text encoder + formula encoder + MaRF fusion layer.

A saved model is a directory::

    card.json    identity, how it was trained and what it measured
    encoder/     the formula encoder (:class:`FormulaEncoder`)
    fusion/      the fusion layer (:class:`MaRFFusion`)

``packaged`` names the one shipped in ``retriever/models/formula_weights/`` (rebuilt by
``scripts/build_formula_models.sh``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from tqdm import tqdm

from retriever.models.embedder import Embedder
from retriever.models.formula_encoder import FormulaEncoder
from retriever.models.formula_model_error import FormulaModelError
from retriever.models.marf_fusion import MaRFFusion, fuse_texts
from retriever.text.formula_selection import select_formulas

PACKAGED_FORMULA_MODELS = Path(__file__).resolve().parent / "weights"


@dataclass(frozen=True, slots=True)
class FusedText:
    vector: np.ndarray  # the text's vector for the first stage (inner product)
    tokens: np.ndarray  # fused token states (tokens x text dim), for MaxSim


@dataclass(frozen=True, slots=True)
class FormulaModels:
    """A trained formula encoder and fusion layer, with their card."""

    directory: Path
    encoder: FormulaEncoder
    fusion: MaRFFusion
    card: dict[str, object]

    @property
    def identity(self) -> str:
        return str(self.card.get("identity", self.directory.name))

    @property
    def text_form(self) -> str | None:
        """The text form (``embedding.math_text``) whose token states the fusion layer was trained on.
        Models trained before the Unicode form record the plain embedder identity and read LaTeX; a card
        that names no embedder reads the embedder's own form (None)."""
        trained_with = self.card.get("text_embedder")
        if not trained_with:
            return None
        return "unicode" if str(trained_with).endswith("+unicode-math") else "latex"

    @classmethod
    def load(cls, spec: str | Path) -> FormulaModels:
        directory = resolve_formula_models(spec)
        card = json.loads((directory / "card.json").read_text()) if (directory / "card.json").exists() else {}
        return cls(directory, FormulaEncoder.load(directory / "encoder"), MaRFFusion.load(directory / "fusion"), card)


def resolve_formula_models(spec: str | Path) -> Path:
    directory = PACKAGED_FORMULA_MODELS if str(spec) == "packaged" else Path(spec).expanduser()
    if not (directory / "encoder" / "weights.pt").exists() or not (directory / "fusion" / "weights.pt").exists():
        raise FormulaModelError(
            f"no formula models in {directory} (expected encoder/ and fusion/); build them with "
            "`bash scripts/build_formula_models.sh` or `rag-app train formula`"
        )
    return directory


class MarfEncoder:
    """Texts and their formulas in, fused vectors and token states out."""

    def __init__(self, embedder: Embedder, models: FormulaModels, batch_size: int = 32) -> None:
        self.embedder = embedder
        self.models = models
        self.batch_size = batch_size

    @property
    def identity(self) -> str:
        return f"{self.embedder.identity}+{self.models.identity}"

    @property
    def max_formulas(self) -> int:
        return self.models.fusion.config.max_formulas

    def encode(
        self, texts: Sequence[str], formulas: Sequence[Sequence[str]], show_progress: bool = False
    ) -> list[FusedText]:
        _, token_lists = self.embedder.embed_with_tokens(
            texts, show_progress=show_progress, math_text=self.models.text_form
        )
        out: list[FusedText] = []
        starts = range(0, len(texts), self.batch_size)
        for start in tqdm(starts, desc="fusing formulas", unit="batch", disable=not show_progress or len(starts) < 2):
            stop = start + self.batch_size
            out.extend(self._fuse(token_lists[start:stop], formulas[start:stop]))
        return out

    def _fuse(self, token_lists: Sequence[np.ndarray], formulas: Sequence[Sequence[str]]) -> list[FusedText]:
        width = max(len(tokens) for tokens in token_lists)
        text_states = torch.zeros((len(token_lists), width, token_lists[0].shape[1]))
        text_mask = torch.zeros((len(token_lists), width), dtype=torch.bool)
        for row, tokens in enumerate(token_lists):
            text_states[row, : len(tokens)] = torch.from_numpy(tokens)
            text_mask[row, : len(tokens)] = True
        chosen = [select_formulas(text_formulas, self.max_formulas) for text_formulas in formulas]
        flat = [formula for text_formulas in chosen for formula in text_formulas]
        owner = torch.tensor([row for row, text_formulas in enumerate(chosen) for _ in text_formulas], dtype=torch.long)
        with torch.inference_mode():
            if flat:
                formula_states, formula_mask = self.models.encoder.token_states(flat)
            else:
                formula_states = torch.zeros((0, 1, self.models.encoder.dim))
                formula_mask = torch.zeros((0, 1), dtype=torch.bool)
            vectors, states = fuse_texts(
                self.models.fusion, text_states, text_mask, formula_states, formula_mask, owner
            )
        return [
            FusedText(vectors[row].numpy().astype(np.float32), states[row, : len(tokens)].numpy().astype(np.float32))
            for row, tokens in enumerate(token_lists)
        ]
