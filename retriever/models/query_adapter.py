"""A linear map applied to query vectors before the dense search: the embedding, tuned on the query side.

The statement vectors in the index stay as the base model made them, so an adapter needs no
re-embedding and costs one 384 x 384 product per search. It is trained (``rag-app train
query-adapter``) to move the vector of a typed query (a statement's name, the words of its label, a
defined term, a formula) toward the stored vector of its statement, against every other training
statement. Only the dense channel reads it: the question-to-source cosine that decides "not in the
corpus" and the answer checks keep the base vectors they were calibrated on.

An adapter directory holds::

    card.json     kind, the embedder it was trained for (its identity), training data and metrics
    adapter.npz   ``matrix`` (d x d) and ``bias`` (d)

``packaged`` names the one shipped for the embedder in use: ``retriever/query_adapter_weights/`` holds
one directory per embedder identity, so an index embedded in either text form (``math_text``) finds
the adapter trained for its vectors.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from retriever.models.embedder import Embedder
from retriever.models.embedder_artifact import EmbedderArtifact
from retriever.storage.atomic_files import directory_written_whole
from retriever.types import Query

PACKAGED_QUERY_ADAPTER_DIR = Path(__file__).parent / "query_adapter_weights"
CARD = "card.json"
WEIGHTS = "adapter.npz"
KIND = "query-adapter"
BUILD_COMMAND = "rag-app train query-adapter"


class QueryAdapterError(RuntimeError):
    """The query adapter is missing, unreadable, or was trained for another embedder."""


ADAPTERS = EmbedderArtifact("query adapter", PACKAGED_QUERY_ADAPTER_DIR, (CARD, WEIGHTS), BUILD_COMMAND,
                            "retrieval.query_adapter unset", QueryAdapterError)  # fmt: skip
packaged_directory = ADAPTERS.packaged_directory


@dataclass(frozen=True)
class QueryAdapter:
    matrix: np.ndarray  # (d, d), applied as matrix @ vector
    bias: np.ndarray  # (d,)
    card: dict[str, Any] = field(default_factory=dict)

    @property
    def embedder(self) -> str:
        """The identity of the embedder whose query vectors this adapter maps."""
        return str(self.card.get("embedder", ""))

    @property
    def identity(self) -> str:
        return str(self.card.get("identity", ""))

    def apply(self, vector: np.ndarray) -> np.ndarray:
        """The adapted query vector, unit length like the stored statement vectors."""
        mapped = self.matrix @ np.asarray(vector, dtype=np.float32) + self.bias
        norm = float(np.linalg.norm(mapped))
        return (mapped / norm if norm > 0 else mapped).astype(np.float32)

    @classmethod
    def identity_map(cls, dimension: int, card: dict[str, Any] | None = None) -> QueryAdapter:
        return cls(np.eye(dimension, dtype=np.float32), np.zeros(dimension, dtype=np.float32), dict(card or {}))

    @classmethod
    def load(cls, spec: str, embedder_identity: str | None = None) -> QueryAdapter:
        """``packaged`` (the one shipped for ``embedder_identity``) or a directory from ``train
        query-adapter``, checked against the embedder in use."""
        directory, what = ADAPTERS.locate(spec, embedder_identity)
        card_path, weights_path = directory / CARD, directory / WEIGHTS
        try:
            card = json.loads(card_path.read_text(encoding="utf-8"))
            with np.load(weights_path) as weights:
                matrix, bias = weights["matrix"].astype(np.float32), weights["bias"].astype(np.float32)
        except (OSError, ValueError, KeyError) as error:
            raise QueryAdapterError(f"{directory}: unreadable query adapter ({error}); rebuild it with "
                                    f"`{BUILD_COMMAND}`") from error  # fmt: skip
        if card.get("kind") != KIND or matrix.ndim != 2 or matrix.shape[0] != matrix.shape[1] != bias.shape[0]:
            raise QueryAdapterError(f"{directory} is not a query adapter; build one with `{BUILD_COMMAND}`")
        adapter = cls(matrix, bias, card)
        ADAPTERS.check_embedder(what, adapter.embedder, embedder_identity)
        return adapter

    @classmethod
    def configured(cls, spec: str | None, embedder_identity: str) -> QueryAdapter | None:
        """The adapter a setting names: unset or ``none``, no adapter; ``auto``, the packaged one when it
        was trained for this embedder (another embedder searches with its base vectors); else that
        adapter, which must fit the embedder."""
        return ADAPTERS.configured(spec, embedder_identity, cls.load)

    def save(self, directory: Path) -> Path:
        """Write the adapter (replacing what was there)."""
        with directory_written_whole(directory) as partial:
            np.savez(partial / WEIGHTS, matrix=self.matrix.astype(np.float32), bias=self.bias.astype(np.float32))
            (partial / CARD).write_text(json.dumps(self.card, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        return directory


def query_vector(embedder: Embedder, query: str, adapter: QueryAdapter | None) -> np.ndarray:
    """The vector a dense channel searches with: the query's embedding, mapped by its adapter if any.
    A :class:`Query` is embedded once for all the stages of its search."""
    vector = Query.of(query).vector(embedder)
    return adapter.apply(vector) if adapter is not None else vector
