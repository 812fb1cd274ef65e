"""Where an index's vectors live: embedded Chroma in the index directory, or a Chroma server.

Embedded (``PersistentClient``) is the default: nothing to run. Server mode talks to
``chroma run --path DIR --host 127.0.0.1 --port P`` or to a remote deployment (a URL, with auth
headers such as ``x-chroma-token`` or ``Authorization: Bearer ...``). The BM25 and formula indexes and
the manifests stay in the index directory either way.

HNSW parameters apply when a collection is created; ``ef_search`` and ``num_threads`` can change
later and are applied to existing collections as they are opened.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

import chromadb
from chromadb.api import ClientAPI
from chromadb.api.models.Collection import Collection
from chromadb.config import Settings as ChromaClientSettings
from chromadb.errors import NotFoundError

ChromaMode = Literal["embedded", "server"]


@dataclass(frozen=True, slots=True)
class HNSWParams:
    """Chroma's HNSW index settings (its defaults: ef_construction 100, ef_search 100, max_neighbors 16)."""

    space: Literal["cosine", "ip", "l2"] = "cosine"
    ef_construction: int = 100
    ef_search: int = 100
    max_neighbors: int = 16
    num_threads: int | None = None  # None: every core
    # Not Chroma's: a cosine collection of at most this many vectors is searched exactly, without the graph
    # (retriever/store/exact_neighbours.py); 0: always the graph.
    exact_search_max: int = 100_000

    def exact_limit(self, space: str | None = None) -> int:
        """The exact search's limit for a collection of ``space`` (the graph's own by default): cosine only."""
        return self.exact_search_max if (space or self.space) == "cosine" else 0

    def creation(self) -> dict[str, Any]:
        """The configuration of a new collection."""
        hnsw: dict[str, Any] = {
            "space": self.space,
            "ef_construction": self.ef_construction,
            "ef_search": self.ef_search,
            "max_neighbors": self.max_neighbors,
        }
        if self.num_threads:
            hnsw["num_threads"] = self.num_threads
        return {"hnsw": hnsw}

    def mutable(self) -> dict[str, Any]:
        """What may change on an existing collection."""
        hnsw: dict[str, Any] = {"ef_search": self.ef_search}
        if self.num_threads:
            hnsw["num_threads"] = self.num_threads
        return {"hnsw": hnsw}


@dataclass(frozen=True, slots=True)
class ChromaConnection:
    """How to reach Chroma. ``collection_prefix`` keeps indexes apart on a shared server."""

    mode: ChromaMode = "embedded"
    url: str = "http://127.0.0.1:8000"  # server mode: scheme, host and port
    headers: Mapping[str, str] = field(default_factory=dict)
    tenant: str = chromadb.DEFAULT_TENANT
    database: str = chromadb.DEFAULT_DATABASE
    collection_prefix: str = ""
    hnsw: HNSWParams = field(default_factory=HNSWParams)

    @property
    def is_server(self) -> bool:
        return self.mode == "server"

    def collection(self, name: str) -> str:
        return f"{self.collection_prefix}{name}"

    def describe(self, path: Path) -> str:
        return f"Chroma server {self.url}" if self.is_server else f"embedded Chroma in {path}"

    def open_collection(self, client: ClientAPI, name: str, space: str | None = None) -> Collection:
        """The collection ``name`` (prefixed), created with the HNSW parameters, or opened and given the
        current mutable ones. ``space`` overrides the distance (the fusion vectors use inner product)."""
        params = self.hnsw if space is None else replace(self.hnsw, space=space)  # type: ignore[arg-type]
        full_name = self.collection(name)
        try:
            collection = client.get_collection(full_name, embedding_function=None)  # type: ignore[arg-type]
        except (NotFoundError, ValueError):
            return client.get_or_create_collection(
                full_name,
                configuration=params.creation(),  # type: ignore[arg-type]
                embedding_function=None,  # type: ignore[arg-type]
            )
        current = dict((collection.configuration or {}).get("hnsw") or {})
        wanted = params.mutable()["hnsw"]
        if any(current.get(key) != value for key, value in wanted.items()):
            collection.modify(configuration=params.mutable())  # type: ignore[arg-type]
        return collection

    def client(self, path: Path) -> ClientAPI:
        """A client for the store at ``path`` (embedded) or for the server (``path`` unused)."""
        if not self.is_server:
            path.mkdir(parents=True, exist_ok=True)
            return chromadb.PersistentClient(path=str(path), settings=chroma_client_settings())
        parts = urlsplit(self.url if "://" in self.url else f"http://{self.url}")
        if not parts.hostname:
            raise ValueError(f"store.url {self.url!r} has no host")
        ssl = parts.scheme == "https"
        try:
            return chromadb.HttpClient(
                host=parts.hostname,
                port=parts.port or (443 if ssl else 8000),
                ssl=ssl,
                headers=dict(self.headers),
                settings=chroma_client_settings(),
                tenant=self.tenant,
                database=self.database,
            )
        except Exception as error:  # Chroma raises ValueError/ConnectionError variants; name the server
            raise ConnectionError(f"cannot reach the Chroma server at {self.url}: {error}") from error


def chroma_client_settings() -> ChromaClientSettings:
    """One set of client settings for every client of an index's store: Chroma refuses a second client on
    the same path with different settings. Telemetry off; no reset."""
    return ChromaClientSettings(anonymized_telemetry=False, allow_reset=False)


EMBEDDED = ChromaConnection()
