"""Sentence embeddings from an OpenAI-compatible ``/v1/embeddings`` server (vLLM on a GPU, llama.cpp's server).

Spec ``openai:MODEL@BASE_URL``, e.g. ``openai:nomic-ai/nomic-embed-text-v1.5@http://gpu-host:8000/v1``
for ``vllm serve nomic-ai/nomic-embed-text-v1.5 --task embed``. The vectors are the server's, normalized
here; the model's task prefixes are added here (the server sees plain texts).
"""

from __future__ import annotations

from collections.abc import Sequence

import httpx
import numpy as np

from retriever.models.embedding_prefixes import EmbeddingPrefixes
from retriever.text.unicode_math_text import UnicodeMathText

SPEC_PREFIX = "openai:"


class EmbeddingServerError(RuntimeError):
    """The embeddings server did not answer, or answered something other than one vector per text."""


class OpenAIEmbedder:
    """Encode texts into L2-normalized vectors through ``POST BASE_URL/embeddings``."""

    def __init__(
        self,
        model: str,
        base_url: str,
        prefixes: EmbeddingPrefixes | None = None,
        batch_size: int = 32,
        max_seq_length: int | None = 256,
        math_text: str = "unicode",
        timeout_s: float = 120.0,
        api_key: str = "EMPTY",
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        if math_text not in ("unicode", "latex"):
            raise ValueError(f"math_text must be 'unicode' or 'latex', not {math_text!r}")
        self.served_model = model
        self.base_url = base_url.rstrip("/")
        self.model_name = f"{SPEC_PREFIX}{model}@{self.base_url}"
        self.prefixes = prefixes if prefixes is not None else EmbeddingPrefixes.for_model(model)
        self.batch_size = batch_size
        self.max_seq_length = max_seq_length
        self.math_text = math_text
        self.device = "server"
        self._unicode_math = UnicodeMathText()
        self._client = httpx.Client(
            timeout=timeout_s, headers={"Authorization": f"Bearer {api_key}"}, transport=transport
        )
        self._dimension: int | None = None

    @classmethod
    def from_spec(cls, spec: str, **kwargs: object) -> OpenAIEmbedder:
        """``openai:MODEL@BASE_URL``; ValueError naming the form when it is not."""
        body = spec.removeprefix(SPEC_PREFIX)
        model, separator, base_url = body.rpartition("@")
        if not spec.startswith(SPEC_PREFIX) or not separator or not model or "://" not in base_url:
            raise ValueError(f"{spec!r}: an embeddings server is named openai:MODEL@BASE_URL (http://host:port/v1)")
        return cls(model, base_url, **kwargs)  # type: ignore[arg-type]

    @property
    def identity(self) -> str:
        # The model, not the address: the same model served elsewhere builds the same vectors.
        identity = f"{SPEC_PREFIX}{self.served_model}"
        return identity if self.math_text == "latex" else f"{identity}+{self._unicode_math.form}"

    def text_for_model(self, text: str, math_text: str | None = None) -> str:
        return self._unicode_math.render(text) if (math_text or self.math_text) == "unicode" else text

    @property
    def dimension(self) -> int:
        if self._dimension is None:
            self._dimension = int(self.embed_queries(["dimension"]).shape[1])
        return self._dimension

    def embed_documents(self, texts: Sequence[str], show_progress: bool = False) -> np.ndarray:
        return self._encode([self.prefixes.document + self.text_for_model(text) for text in texts])

    def embed_queries(self, texts: Sequence[str], show_progress: bool = False) -> np.ndarray:
        return self._encode([self.prefixes.query + self.text_for_model(text) for text in texts])

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_queries([text])[0]

    def embed_with_tokens(self, *args, **kwargs):
        raise NotImplementedError(f"{self.model_name} serves sentence vectors only: formula fusion needs token states")

    def _encode(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self._dimension or 0), dtype=np.float32)
        rows: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            batch = texts[start : start + self.batch_size]
            rows.extend(self._request(batch))
        matrix = np.asarray(rows, dtype=np.float32)
        self._dimension = int(matrix.shape[1])
        return matrix / np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)

    def _request(self, batch: list[str]) -> list[list[float]]:
        payload: dict[str, object] = {"model": self.served_model, "input": batch}
        if self.max_seq_length:
            payload["truncate_prompt_tokens"] = self.max_seq_length  # vLLM's; other servers ignore it
        url = f"{self.base_url}/embeddings"
        try:
            response = self._client.post(url, json=payload)
            response.raise_for_status()
            data = response.json()["data"]
        except (httpx.HTTPError, ValueError, KeyError, TypeError) as error:
            raise EmbeddingServerError(f"{url}: no embeddings for {len(batch)} texts ({error})") from error
        try:
            ordered = sorted(data, key=lambda item: int(item["index"]))
            vectors = [list(map(float, item["embedding"])) for item in ordered]
        except (KeyError, TypeError, ValueError) as error:
            raise EmbeddingServerError(f"{url}: an embedding in the answer is malformed ({error})") from error
        if len(vectors) != len(batch) or len({len(vector) for vector in vectors}) != 1:
            raise EmbeddingServerError(f"{url}: {len(vectors)} vectors of mixed or wrong count for {len(batch)} texts")
        return vectors
