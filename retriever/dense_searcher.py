"""Nearest neighbours of the query embedding in the vector store."""

from __future__ import annotations

from retriever.chroma_store import ChromaStatementStore
from retriever.embedder import Embedder
from retriever.query_adapter import QueryAdapter
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
        vector = self.embedder.embed_query(query)
        if self.query_adapter is not None:
            vector = self.query_adapter.apply(vector)
        return self.store.query(vector, k)
