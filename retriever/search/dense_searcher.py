"""Nearest neighbours of the query embedding in the vector store."""

from __future__ import annotations

from retriever.models.embedder import Embedder
from retriever.models.query_adapter import QueryAdapter, query_vector
from retriever.store.chroma_store import ChromaStatementStore
from retriever.types import ScoredId


class DenseSearcher:
    name = "dense"

    def __init__(
        self, embedder: Embedder, store: ChromaStatementStore, query_adapter: QueryAdapter | None = None
    ) -> None:
        self.embedder = embedder
        self.store = store
        self.query_adapter = query_adapter

    def search(self, query: str, k: int) -> list[ScoredId]:
        return self.store.query(query_vector(self.embedder, query, self.query_adapter), k)
