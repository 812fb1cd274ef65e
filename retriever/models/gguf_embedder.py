"""Sentence embeddings from a GGUF model read by llama.cpp in this process (llama-cpp-python), on the CPU.

The embedders that ship inside PyPI packages only as GGUF files (nomic-embed-text-v1.5) run here; on a
GPU machine the same model is better served by vLLM and read over HTTP (:class:`OpenAIEmbedder`).
Each text is embedded alone: on 2 CPUs llama.cpp embedded nomic-embed-text-v1.5 at 2.8 statements/s
one at a time and 1.1 statements/s sixty to a batch (bench/results/embedders/).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from functools import cached_property
from pathlib import Path

import numpy as np

from retriever.models.embedding_prefixes import EmbeddingPrefixes
from retriever.text.unicode_math_text import UnicodeMathText


class GgufEmbedder:
    """Encode texts into L2-normalized vectors with a GGUF embedding model (mean pooling).

    ``identity`` names the model and the text form it reads, as :class:`retriever.models.embedder.Embedder`'s
    does; ``prefixes`` are the model's task prefixes (``search_query: `` ...), part of what it was trained on.
    The model loads on first use.
    """

    def __init__(
        self,
        identity: str,
        model_path: Path | Callable[[], Path],
        prefixes: EmbeddingPrefixes | None = None,
        device: str = "cpu",
        max_seq_length: int | None = 256,
        math_text: str = "unicode",
        threads: int | None = None,
    ) -> None:
        if math_text not in ("unicode", "latex"):
            raise ValueError(f"math_text must be 'unicode' or 'latex', not {math_text!r}")
        self.model_name = identity
        self._identity = identity
        self._model_path = model_path
        self.prefixes = prefixes or EmbeddingPrefixes()
        self.device = device
        self.max_seq_length = max_seq_length
        self.math_text = math_text
        self.threads = threads or max(1, os.cpu_count() or 1)
        self.batch_size = 1
        self._unicode_math = UnicodeMathText()

    @property
    def identity(self) -> str:
        return self._identity if self.math_text == "latex" else f"{self._identity}+{self._unicode_math.form}"

    def text_for_model(self, text: str, math_text: str | None = None) -> str:
        return self._unicode_math.render(text) if (math_text or self.math_text) == "unicode" else text

    @cached_property
    def model(self):
        """The loaded ``llama_cpp.Llama`` in embedding mode."""
        import llama_cpp

        path = self._model_path() if callable(self._model_path) else self._model_path
        # Room for the task prefix and the special tokens, in whole 256s: llama.cpp's mean pooling
        # aborted the process (GGML_ASSERT in build_pooling) with a context of 288.
        context = -(-((self.max_seq_length or 480) + 32) // 256) * 256
        return llama_cpp.Llama(
            str(path),
            embedding=True,
            pooling_type=llama_cpp.LLAMA_POOLING_TYPE_MEAN,
            n_ctx=context,
            n_batch=context,
            n_ubatch=context,
            n_threads=self.threads,
            n_gpu_layers=-1 if self.device.startswith("cuda") else 0,
            verbose=False,
        )

    @cached_property
    def dimension(self) -> int:
        return int(self.model.n_embd())

    def embed_documents(self, texts: Sequence[str], show_progress: bool = False) -> np.ndarray:
        return self._encode([self.prefixes.document + self.text_for_model(text) for text in texts], show_progress)

    def embed_queries(self, texts: Sequence[str], show_progress: bool = False) -> np.ndarray:
        return self._encode([self.prefixes.query + self.text_for_model(text) for text in texts], show_progress)

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_queries([text])[0]

    def embed_with_tokens(self, *args, **kwargs):
        raise NotImplementedError(
            f"{self._identity} serves sentence vectors only: formula fusion needs a sentence-transformers embedder"
        )

    def _encode(self, texts: list[str], show_progress: bool) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        from tqdm import tqdm

        model = self.model
        limit = self.max_seq_length or model.n_ctx() - 2
        vectors = []
        for text in tqdm(texts, desc="embedding", unit="text", disable=not show_progress):
            tokens = model.tokenize(text.encode("utf-8"), add_bos=False)
            if len(tokens) > limit:  # cut at a token, as sentence-transformers does at max_seq_length
                text = model.detokenize(tokens[:limit]).decode("utf-8", errors="ignore")
            vectors.append(model.embed(text, truncate=True))
        matrix = np.asarray(vectors, dtype=np.float32)
        return matrix / np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)
