"""Sentence embeddings for statements and queries (sentence-transformers, optionally with a LoRA adapter)."""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from functools import cached_property
from pathlib import Path

import numpy as np

from retriever.models.embedding_registry import ResolvedEmbedder, resolve_embedder
from retriever.models.onnx_query_encoder import OnnxQueryEncoder
from retriever.models.torch_threads import torch_threads
from retriever.text.unicode_math_text import UnicodeMathText


def identity_directory_name(identity: str) -> str:
    """An embedder identity as a directory name (``packaged:all-MiniLM-L6-v2+unicode-math`` to
    ``packaged-all-MiniLM-L6-v2-unicode-math``): development indexes and packaged query adapters are
    kept per embedder."""
    return re.sub(r"[^A-Za-z0-9._@-]+", "-", identity).strip("-")


class Embedder:
    """Encode texts into L2-normalized vectors with a sentence-transformers model.

    ``model`` is an embedder spec (see :mod:`retriever.models.embedding_registry`): a packaged base model,
    a fine-tune from the registry, or any sentence-transformers path or hub id. Packaged models are
    read from site-packages: nothing is downloaded at run time. The model loads on first use so that
    opening an index for BM25-only work stays cheap.

    ``math_text``: ``"unicode"`` (the default) embeds every text, statement or query, with its LaTeX
    rendered as Unicode (:class:`UnicodeMathText`); ``"latex"`` embeds it as written.

    ``query_threads``: the CPU threads one query (``embed_query``) runs on; unset, torch's own. A second
    thread gains a query nothing and loses much when the other core is busy (:mod:`torch_threads`).
    Batches of statements keep every thread.

    ``onnx_dir``: where one query's encoder is exported for ONNX Runtime (:class:`OnnxQueryEncoder`: the
    same vector in half the time, on the CPU); unset, queries run on torch like the batches.
    """

    def __init__(
        self,
        model: str,
        device: str = "cpu",
        batch_size: int = 64,
        max_seq_length: int | None = 256,
        registry_dir: Path | None = None,
        math_text: str = "unicode",
        query_threads: int | None = 1,
        onnx_dir: Path | None = None,
    ) -> None:
        if math_text not in ("unicode", "latex"):
            raise ValueError(f"math_text must be 'unicode' or 'latex', not {math_text!r}")
        self.model_name = model
        self.math_text = math_text
        self._unicode_math = UnicodeMathText()
        self.device = device
        self.batch_size = batch_size
        self.max_seq_length = max_seq_length
        self.registry_dir = registry_dir
        self.query_threads = query_threads
        self.onnx_dir = onnx_dir
        self._query_encoder: OnnxQueryEncoder | None = None
        self._query_encoder_tried = False
        self._query_encoder_lock = threading.Lock()

    @cached_property
    def resolved(self) -> ResolvedEmbedder:
        return resolve_embedder(self.model_name, self.registry_dir)

    @property
    def identity(self) -> str:
        """The concrete model behind the spec and the form of text it reads
        (``registry:math@v3+unicode-math``); indexes record it, so a change of either re-embeds."""
        if self.math_text == "latex":
            return self.resolved.identity
        return f"{self.resolved.identity}+{self._unicode_math.form}"

    def text_for_model(self, text: str, math_text: str | None = None) -> str:
        """What the model reads of ``text`` (in ``math_text``'s form, else the embedder's own)."""
        return self._unicode_math.render(text) if (math_text or self.math_text) == "unicode" else text

    @cached_property
    def model(self):
        """The loaded ``SentenceTransformer`` (with its adapter applied, if any)."""
        from sentence_transformers import SentenceTransformer

        model = SentenceTransformer(self.resolved.model_path, device=self.device)
        if self.resolved.adapter_path is not None:
            model.load_adapter(str(self.resolved.adapter_path))
            _merge_lora(model)
        if self.max_seq_length:
            model.max_seq_length = self.max_seq_length
        return model

    @property
    def dimension(self) -> int:
        return int(self.model.get_embedding_dimension())

    def prompt(self, role: str) -> str:
        """The text the model's own card puts before a ``query`` or a ``document`` (EmbeddingGemma's
        ``task: search result | query: ``); empty for models trained without one, as MiniLM."""
        return str((getattr(self.model, "prompts", None) or {}).get(role, ""))

    def embed_documents(self, texts: Sequence[str], show_progress: bool = False) -> np.ndarray:
        return self._encode(list(texts), show_progress, "document")

    def embed_queries(self, texts: Sequence[str], show_progress: bool = False) -> np.ndarray:
        """Many queries at once, as ``embed_query`` embeds one (training and evaluation)."""
        return self._encode(list(texts), show_progress, "query")

    def embed_query(self, text: str) -> np.ndarray:
        """One query's vector, computed each time: a search keeps it on its
        :class:`retriever.types.Query`, so that every stage reads one embedding."""
        encoder = self.query_encoder()
        if encoder is not None:
            return encoder.embed(self.prompt("query") + self.text_for_model(text))
        with torch_threads(self.query_threads if self.device == "cpu" else None):
            return self._encode([text], show_progress=False, role="query")[0]

    def query_encoder(self) -> OnnxQueryEncoder | None:
        """The ONNX Runtime encoder of one query, built at the first query (None: queries run on torch)."""
        if self.onnx_dir is None or self.device != "cpu":
            return None
        with self._query_encoder_lock:
            if not self._query_encoder_tried:
                self._query_encoder_tried = True
                self._query_encoder = OnnxQueryEncoder.build(
                    self.model, identity_directory_name(self.resolved.identity), self.onnx_dir, self.query_threads or 1
                )
        return self._query_encoder

    def embed_with_tokens(
        self,
        texts: Sequence[str],
        show_progress: bool = False,
        max_seq_length: int | None = None,
        math_text: str | None = None,
    ) -> tuple[np.ndarray, list[np.ndarray]]:
        """Unit-length text vectors and each text's token states (tokens x dim), from one forward pass.

        The token states are what the pooled vector averages; formula fusion attends from them.
        ``math_text``: the text form to read (default the embedder's own); formula fusion reads the form
        its models were trained on.
        """
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32), []
        model = self.model
        previous = model.max_seq_length
        if max_seq_length:
            model.max_seq_length = max_seq_length
        try:
            outputs = model.encode(
                # no prompt: formula fusion reads queries and statements alike, as its models were trained
                [self.text_for_model(text, math_text) for text in texts],
                batch_size=self.batch_size,
                output_value=None,
                show_progress_bar=show_progress,
            )
        finally:
            model.max_seq_length = previous
        vectors = np.stack([output["sentence_embedding"].float().cpu().numpy() for output in outputs])
        tokens = []
        for output in outputs:
            length = int(output["attention_mask"].sum())
            tokens.append(output["token_embeddings"][:length].float().cpu().numpy())
        return vectors.astype(np.float32), tokens

    def _encode(self, texts: list[str], show_progress: bool, role: str) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        prompt = self.prompt(role)
        vectors = self.model.encode(
            [prompt + self.text_for_model(text) for text in texts],
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=show_progress,
        )
        return np.asarray(vectors, dtype=np.float32)


def _merge_lora(model) -> None:
    """Fold LoRA weights into the base layers: same vectors, no extra matmuls per layer (inference only)."""
    from peft.tuners.lora import LoraLayer

    for module in model.modules():
        if isinstance(module, LoraLayer):
            module.merge()
