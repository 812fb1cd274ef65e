"""Nearest neighbours of the query embedding in the vector store."""

from __future__ import annotations

from retriever.chroma_store import ChromaStatementStore
from retriever.embedder import Embedder
from retriever.types import ScoredId


class DenseSearcher:
    name = "dense"

    def __init__(self, embedder: Embedder, store: ChromaStatementStore) -> None:
        self.embedder = embedder
        self.store = store

    def search(self, query: str, k: int) -> list[ScoredId]:
        return self.store.query(self.embedder.embed_query(query), k)
