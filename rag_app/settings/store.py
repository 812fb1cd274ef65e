"""Settings of where the vectors live: embedded Chroma or a Chroma server, and its HNSW index."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from retriever.storage.chroma_connection import ChromaConnection, HNSWParams


class HNSWSettings(BaseModel):
    """Chroma's HNSW index. Set at a collection's creation; ef_search and num_threads also later."""

    space: Literal["cosine", "ip", "l2"] = "cosine"
    ef_construction: int = Field(100, ge=1, description="candidates explored while building the graph")
    ef_search: int = Field(100, ge=1, description="candidates explored per query (recall against latency)")
    max_neighbors: int = Field(16, ge=2, description="HNSW's M: links per node (recall against memory)")
    num_threads: int | None = Field(None, ge=1, description="threads for HNSW; unset: every core")
    # Exact below it: the same ranking in every process; bench/results/exact_dense.md measured it.
    exact_search_max: int = Field(
        100_000,
        ge=0,
        description="a cosine collection of at most this many vectors is searched exactly in memory instead of "
        "through the graph (the same ranking in every process; about 4 bytes x dimension per vector); 0: never",
    )


class StoreSettings(BaseModel):
    """Where the vectors live: embedded Chroma in the index directory (default) or a Chroma server."""

    mode: Literal["embedded", "server"] = "embedded"
    url: str = Field(
        "http://127.0.0.1:8000",
        description="server mode: `chroma run --path DIR --host 127.0.0.1 --port 8000`, or a remote URL",
    )
    headers: dict[str, str] = Field(
        default_factory=dict, description='auth headers for a remote server, e.g. {"x-chroma-token" = "..."}'
    )
    tenant: str = "default_tenant"
    database: str = "default_database"
    collection_prefix: str = Field("", description="keeps several indexes apart on one server")
    hnsw: HNSWSettings = Field(default_factory=HNSWSettings)

    def connection(self) -> ChromaConnection:
        return ChromaConnection(
            mode=self.mode,
            url=self.url,
            headers=dict(self.headers),
            tenant=self.tenant,
            database=self.database,
            collection_prefix=self.collection_prefix,
            hnsw=HNSWParams(**self.hnsw.model_dump()),
        )
