"""Statement records and their vectors in a Chroma collection on disk."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from ingestion.records import Source, StatementKind, StatementRecord
from retriever.chroma_connection import EMBEDDED, ChromaConnection, chroma_client_settings
from retriever.types import ScoredId

COLLECTION = "statements"


__all__ = ["COLLECTION", "ChromaStatementStore", "StatementSummary", "chroma_client_settings"]


class ChromaStatementStore:
    """The vector store and the system of record for statements.

    We always pass our own embeddings: Chroma's default embedding function would download a
    model. Records round-trip through the document and its metadata.
    """

    def __init__(self, path: Path, collection: str = COLLECTION, connection: ChromaConnection = EMBEDDED) -> None:
        self.path = path
        self.collection_name = collection
        self.connection = connection
        self._client = connection.client(path)
        self._collection = connection.open_collection(self._client, collection)

    def collection_names(self) -> list[str]:
        """This index's collections (a reindex leaves one behind only if it crashed), without the prefix."""
        prefix = self.connection.collection_prefix
        names = (collection.name for collection in self._client.list_collections())
        return sorted(name[len(prefix) :] for name in names if name.startswith(prefix))

    def drop_collection(self, name: str) -> None:
        if name == self.collection_name:
            raise ValueError(f"refusing to drop the collection in use ({name})")
        self._client.delete_collection(self.connection.collection(name))

    def all_ids(self, page: int = 10_000) -> set[str]:
        found: set[str] = set()
        offset = 0
        while True:
            batch = self._collection.get(include=[], limit=page, offset=offset)["ids"]
            if not batch:
                return found
            found.update(batch)
            offset += len(batch)

    def vectors(self, ids: Sequence[str]) -> dict[str, np.ndarray]:
        """The stored vectors of ``ids`` (unknown ids are left out)."""
        found: dict[str, np.ndarray] = {}
        for batch in _batches(list(dict.fromkeys(ids)), 1000):  # Chroma refuses repeated ids
            result = self._collection.get(ids=batch, include=["embeddings"])
            for doc_id, vector in zip(result["ids"], result["embeddings"], strict=True):
                found[doc_id] = np.asarray(vector, dtype=np.float32)
        return found

    def count(self) -> int:
        return self._collection.count()

    def existing_ids(self, ids: Sequence[str]) -> set[str]:
        found: set[str] = set()
        for batch in _batches(list(dict.fromkeys(ids)), 1000):  # Chroma refuses repeated ids
            found.update(self._collection.get(ids=batch, include=[])["ids"])
        return found

    def ids_for_paper(self, paper_id: str) -> set[str]:
        return set(self._collection.get(where={"paper_id": paper_id}, include=[])["ids"])

    def paper_ids(self, source: str, page: int = 5000) -> set[str]:
        """Every paper id of one source (``mse``: one per post)."""
        found: set[str] = set()
        offset = 0
        while True:
            batch = self._collection.get(where={"source": source}, include=["metadatas"], limit=page, offset=offset)
            if not batch["ids"]:
                return found
            found.update(str(metadata["paper_id"]) for metadata in batch["metadatas"])
            offset += len(batch["ids"])

    def delete_papers(self, paper_ids: Sequence[str]) -> None:
        for batch in _batches(list(paper_ids), 500):
            self._collection.delete(where={"paper_id": {"$in": batch}})

    def upsert(self, records: Sequence[StatementRecord], embeddings: np.ndarray) -> None:
        batch_size = self._client.get_max_batch_size()
        for start in range(0, len(records), batch_size):
            chunk = records[start : start + batch_size]
            self._collection.upsert(
                ids=[r.id for r in chunk],
                documents=[r.text for r in chunk],
                metadatas=[_to_metadata(r) for r in chunk],
                embeddings=embeddings[start : start + batch_size],
            )

    def delete(self, ids: Sequence[str]) -> None:
        for batch in _batches(list(ids), 1000):
            self._collection.delete(ids=batch)

    def query(self, embedding: np.ndarray, k: int) -> list[ScoredId]:
        available = self.count()
        if k <= 0 or available == 0:
            return []
        result = self._collection.query(
            query_embeddings=[embedding], n_results=min(k, available), include=["distances"]
        )
        # Cosine distance is 1 - cosine similarity.
        return [ScoredId(i, 1.0 - d) for i, d in zip(result["ids"][0], result["distances"][0], strict=True)]

    def get(self, ids: Sequence[str]) -> list[StatementRecord]:
        """Records for ``ids`` in the order asked (unknown ids are left out)."""
        if not ids:
            return []
        result = self._collection.get(ids=list(ids), include=["documents", "metadatas"])
        by_id = {
            doc_id: _from_metadata(doc_id, document, metadata)
            for doc_id, document, metadata in zip(result["ids"], result["documents"], result["metadatas"], strict=True)
        }
        return [by_id[i] for i in ids if i in by_id]

    def iter_records(self, batch_size: int = 2000) -> Iterator[StatementRecord]:
        """Every record in insertion order, read in pages."""
        offset = 0
        while True:
            page = self._collection.get(include=["documents", "metadatas"], limit=batch_size, offset=offset)
            if not page["ids"]:
                return
            for doc_id, document, metadata in zip(page["ids"], page["documents"], page["metadatas"], strict=True):
                yield _from_metadata(doc_id, document, metadata)
            offset += len(page["ids"])

    def iter_summaries(self, batch_size: int = 5000) -> Iterator[StatementSummary]:
        """Source, kind, paper and extra metadata of every record, without texts or vectors (library stats)."""
        offset = 0
        while True:
            page = self._collection.get(include=["metadatas"], limit=batch_size, offset=offset)
            if not page["ids"]:
                return
            for metadata in page["metadatas"]:
                yield StatementSummary(
                    metadata["source"],
                    metadata["kind"],
                    metadata["paper_id"],
                    json.loads(metadata.get("metadata_json", "{}")),
                )
            offset += len(page["ids"])


class StatementSummary(NamedTuple):
    source: str
    kind: str
    paper_id: str
    metadata: dict[str, Any]


def _batches(items: list[str], size: int) -> Iterator[list[str]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _to_metadata(record: StatementRecord) -> dict[str, str]:
    return {
        "source": record.source.value,
        "kind": record.kind.value,
        "paper_id": record.paper_id,
        "name": record.name,
        "label": record.label,
        "section": record.section,
        "url": record.url,
        "title": record.title,
        "proof": record.proof,
        "formulas_json": json.dumps(list(record.formulas), ensure_ascii=False),
        "metadata_json": json.dumps(dict(record.metadata), ensure_ascii=False),
    }


def _from_metadata(doc_id: str, document: str | None, metadata: dict) -> StatementRecord:
    return StatementRecord(
        id=doc_id,
        source=Source(metadata["source"]),
        kind=StatementKind(metadata["kind"]),
        text=document or "",
        paper_id=metadata["paper_id"],
        name=metadata.get("name", ""),
        formulas=tuple(json.loads(metadata.get("formulas_json", "[]"))),
        label=metadata.get("label", ""),
        section=metadata.get("section", ""),
        url=metadata.get("url", ""),
        proof=metadata.get("proof", ""),
        title=metadata.get("title", ""),
        metadata=json.loads(metadata.get("metadata_json", "{}")),
    )
