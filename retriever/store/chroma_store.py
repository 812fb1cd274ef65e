"""Statement records and their vectors in a Chroma collection on disk."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
from chromadb.api.models.Collection import Collection
from chromadb.errors import InternalError

from ingestion.records import Citation, LabelReference, Source, StatementKind, StatementRecord
from retriever.storage.chroma_connection import EMBEDDED, ChromaConnection, chroma_client_settings
from retriever.storage.commit_log import CommittedState
from retriever.storage.hnsw_files import VectorFilesStamp, check_vector_files, vector_files_stamp
from retriever.store.exact_neighbours import ExactNeighbours, collection_matrix
from retriever.store.record_cache import DEFAULT_MAX_STATEMENTS, RecordCache
from retriever.types import ScoredId

COLLECTION = "statements"


__all__ = ["COLLECTION", "ChromaStatementStore", "StatementSummary", "chroma_client_settings"]


class ChromaStatementStore:
    """The vector store and the system of record for statements.

    We always pass our own embeddings: Chroma's default embedding function would download a
    model. Records round-trip through the document and its metadata. The statements searches read
    last are kept in memory (``cached_statements``; :class:`RecordCache`), cleared at every write.
    """

    def __init__(
        self,
        path: Path,
        collection: str = COLLECTION,
        connection: ChromaConnection = EMBEDDED,
        cached_statements: int = DEFAULT_MAX_STATEMENTS,
    ) -> None:
        self.path = path
        self.cache = RecordCache(cached_statements)
        self.collection_name = collection
        self.connection = connection
        self._vector_files_checked: VectorFilesStamp | None = None
        self.exact = ExactNeighbours(connection.hnsw.exact_limit())  # the same ranking in every process
        # The generation this process reads at (``StatementIndex`` pins it); None: an index that has no commit
        # log yet (made by an older version, until its first write or search catches one up): the graph answers.
        self.committed: CommittedState | None = None
        self._client = connection.client(path)
        self._opened = connection.open_collection(self._client, collection)

    @property
    def _collection(self) -> Collection:
        """The collection, its vector files checked first (every read and write goes through here)."""
        self.check_vector_files()
        return self._opened

    def check_vector_files(self) -> None:
        """Before the first query (and again after the files change): Chroma trusts its HNSW files, and a
        damaged one fails every read with an error naming no file, or crashes the process. A damaged
        file raises :class:`VectorIndexDamagedError` naming it. Embedded stores only (a server's files
        are its own); a stat per query, a full read only when the files changed since a check passed, in
        this process or in any other (the passed check is remembered beside the files)."""
        if self.connection.is_server:
            return
        self._vector_files_checked = check_vector_files(self.path, self._vector_files_checked)

    def reconnect(self) -> None:
        """Open the client and collection again (after the process's Chroma cache was cleared).

        A new client's first read loads the vector index and writes its files again (Chroma persists what
        it loaded). That read is made here, inside the reload (``StatementIndex.follow_other_writers``, no
        search of this process reading), and the files it wrote are taken as checked: they are what
        Chroma wrote of an index that had just passed the check."""
        self.cache.clear()
        self.exact.clear()
        self._client = self.connection.client(self.path)
        self._opened = self.connection.open_collection(self._client, self.collection_name)
        if not self.connection.is_server:
            self._collection.get(limit=1, include=[])
            self._vector_files_checked = vector_files_stamp(self.path)

    def collection_names(self) -> list[str]:
        """This index's collections (a reindex leaves one behind only if it crashed), without the prefix."""
        prefix = self.connection.collection_prefix
        names = (collection.name for collection in self._client.list_collections())
        return sorted(name[len(prefix) :] for name in names if name.startswith(prefix))

    def drop_collection(self, name: str) -> None:
        if name == self.collection_name:
            raise ValueError(f"refusing to drop the collection in use ({name})")
        self._client.delete_collection(self.connection.collection(name))

    def all_ids(self) -> set[str]:
        return set(self._ordered_ids())

    def _ordered_ids(self) -> list[str]:
        """Every id, in one query. Paging with ``offset`` instead costs time linear in the offset (a page
        of 2,000 took 0.39 s at offset 0 and 3.2 s at 900,000), so reading a 1M store page by page was
        quadratic: about 17 minutes, against about 5 s for the ids plus 0.2 s per page fetched by id."""
        return list(self._collection.get(include=[])["ids"])

    def vectors(self, ids: Sequence[str]) -> dict[str, np.ndarray]:
        """The stored vectors of ``ids`` (unknown ids are left out)."""
        return collection_vectors(self._collection, ids)

    def count(self) -> int:
        return self._collection.count()

    def existing_ids(self, ids: Sequence[str]) -> set[str]:
        found: set[str] = set()
        for batch in _batches(list(dict.fromkeys(ids)), 1000):  # Chroma refuses repeated ids
            found.update(self._collection.get(ids=batch, include=[])["ids"])
        return found

    def ids_for_paper(self, paper_id: str) -> set[str]:
        return set(self._collection.get(where={"paper_id": paper_id}, include=[])["ids"])

    def ids_for_papers(self, paper_ids: Sequence[str]) -> set[str]:
        found: set[str] = set()
        for batch in _batches(list(paper_ids), 500):
            found.update(self._collection.get(where={"paper_id": {"$in": batch}}, include=[])["ids"])
        return found

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

    def upsert(self, records: Sequence[StatementRecord], embeddings: np.ndarray) -> None:
        batch_size = self._client.get_max_batch_size()
        try:
            for start in range(0, len(records), batch_size):
                chunk = records[start : start + batch_size]
                self._collection.upsert(
                    ids=[r.id for r in chunk],
                    documents=[r.text for r in chunk],
                    metadatas=[_to_metadata(r) for r in chunk],
                    embeddings=embeddings[start : start + batch_size],
                )
        finally:
            self.cache.clear()  # after the write: a read that began before it keeps nothing
            self.exact.clear()

    def delete(self, ids: Sequence[str]) -> None:
        try:
            for batch in _batches(list(ids), 1000):
                self._collection.delete(ids=batch)
        finally:
            self.cache.clear()
            self.exact.clear()

    def preload(self, batch_size: int = 2000) -> list[StatementRecord]:
        """Read every statement into the cache when all fit in it (a server's warm-up: its searches then
        read no statement from Chroma); the records read, or none when the store is larger than the cache."""
        if not 0 < self.count() <= self.cache.max_statements:
            return []
        records: list[StatementRecord] = []
        for batch in _batches(self._ordered_ids(), batch_size):
            generation = self.cache.generation
            page = self._collection.get(ids=batch, include=["documents", "metadatas", "embeddings"])
            rows = zip(page["ids"], page["documents"], page["metadatas"], page["embeddings"], strict=True)
            read = [(_from_metadata(i, d, m), np.asarray(v, dtype=np.float32)) for i, d, m, v in rows]
            self.cache.keep(generation, read)
            records.extend(record for record, _vector in read)
        return records

    def forget_cached(self) -> None:
        """Drop the statements kept in memory (another writer changed the store: a Chroma server)."""
        self.cache.clear()
        self.exact.clear()

    def query(self, embedding: np.ndarray, k: int) -> list[ScoredId]:
        if k <= 0:
            return []
        query = np.asarray(embedding, dtype=np.float32).reshape(1, -1)
        committed = self.committed
        if committed is not None:  # exact, from the vectors of the pinned generation (never half a write)
            exact = self.exact.nearest(committed.key, committed.count, committed.vectors, query, k)
        else:  # a store with no commit log (outside an index, or an index made before it): its own vectors
            collection = self._collection
            exact = self.exact.nearest("collection", collection.count, lambda: collection_matrix(collection), query, k)
        if exact is not None:
            return exact[0]
        # No count() first: it scans the collection (72 ms at 1M statements), and Chroma returns fewer
        # results when fewer exist.
        return collection_nearest(self._collection, embedding, k)

    def query_many(self, embeddings: np.ndarray, k: int) -> list[list[ScoredId]]:
        """The ``k`` nearest stored statements of each embedding (one batched query)."""
        if k <= 0 or len(embeddings) == 0:
            return [[] for _ in range(len(embeddings))]
        # The graph's neighbours, not the exact ones: this is the ingest's duplicate check, between writes
        # that each drop the exact search's matrix (reading it again per batch would cost seconds).
        result = self._collection.query(query_embeddings=list(embeddings), n_results=k, include=["distances"])
        return [
            [ScoredId(i, 1.0 - d) for i, d in zip(ids, distances, strict=True)]
            for ids, distances in zip(result["ids"], result["distances"], strict=True)
        ]

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

    def get_with_vectors(self, ids: Sequence[str]) -> tuple[list[StatementRecord], dict[str, np.ndarray]]:
        """Records for ``ids`` in the order asked, and their stored vectors: those searches read lately
        from memory, the others from one read (the vectors add no measurable time to it: 33.5 ms against
        34.5 ms for 100 records of 17,780). Callers must not write into the vectors: those kept are read-only."""
        if not ids:
            return [], {}
        generation = self.cache.generation
        cached = self.cache.find(ids)
        missing = [i for i in dict.fromkeys(ids) if i not in cached]
        by_id = {i: record for i, (record, _vector) in cached.items()}
        vectors = {i: vector for i, (_record, vector) in cached.items()}
        if missing:
            try:
                result = self._collection.get(ids=missing, include=["documents", "metadatas", "embeddings"])
            except InternalError:
                return self._get_beside_a_writer(ids)
            read: list[tuple[StatementRecord, np.ndarray]] = []
            rows = zip(result["ids"], result["documents"], result["metadatas"], result["embeddings"], strict=True)
            for doc_id, document, metadata, vector in rows:
                read.append((_from_metadata(doc_id, document, metadata), np.asarray(vector, dtype=np.float32)))
            self.cache.keep(generation, read)
            by_id.update((record.id, record) for record, _vector in read)
            vectors.update((record.id, vector) for record, vector in read)
        return [by_id[i] for i in ids if i in by_id], vectors

    def _get_beside_a_writer(self, ids: Sequence[str]) -> tuple[list[StatementRecord], dict[str, np.ndarray]]:
        """The read of :meth:`get_with_vectors` while another process writes: Chroma commits a statement's
        record (SQLite) before this process's copy of the vector index has it, and a read of both fails
        with "Error finding id". The records are read alone, the vectors one by one, and a statement whose
        vector this process cannot see yet is left out (found again once the writer's batch is complete)."""
        vectors: dict[str, np.ndarray] = {}
        for doc_id in ids:
            try:
                found = self._collection.get(ids=[doc_id], include=["embeddings"])
            except InternalError:
                continue
            if found["ids"]:
                vectors[doc_id] = np.asarray(found["embeddings"][0], dtype=np.float32)
        return [record for record in self.get(ids) if record.id in vectors], vectors

    def iter_records(self, batch_size: int = 2000) -> Iterator[StatementRecord]:
        """Every record in insertion order, read in pages fetched by id (see ``_ordered_ids``)."""
        for batch in _batches(self._ordered_ids(), batch_size):
            page = self._collection.get(ids=batch, include=["documents", "metadatas"])
            by_id = {
                doc_id: _from_metadata(doc_id, document, metadata)
                for doc_id, document, metadata in zip(page["ids"], page["documents"], page["metadatas"], strict=True)
            }
            yield from (by_id[doc_id] for doc_id in batch if doc_id in by_id)  # deleted meanwhile: skipped

    def iter_summaries(self, batch_size: int = 5000) -> Iterator[StatementSummary]:
        """Source, kind, paper and extra metadata of every record, without texts or vectors (library stats)."""
        for batch in _batches(self._ordered_ids(), batch_size):
            for metadata in self._collection.get(ids=batch, include=["metadatas"])["metadatas"]:
                yield StatementSummary(
                    metadata["source"],
                    metadata["kind"],
                    metadata["paper_id"],
                    json.loads(metadata.get("metadata_json", "{}")),
                )


class StatementSummary(NamedTuple):
    source: str
    kind: str
    paper_id: str
    metadata: dict[str, Any]


def collection_nearest(collection: Collection, embedding: np.ndarray, k: int) -> list[ScoredId]:
    """The ``k`` stored vectors of a cosine-space Chroma collection nearest to ``embedding``, by similarity."""
    result = collection.query(query_embeddings=[embedding], n_results=k, include=["distances"])
    # Cosine distance is 1 - cosine similarity.
    return [ScoredId(i, 1.0 - float(d)) for i, d in zip(result["ids"][0], result["distances"][0], strict=True)]


def collection_vectors(collection: Collection, ids: Sequence[str]) -> dict[str, np.ndarray]:
    """The stored vectors of ``ids`` in a Chroma collection (unknown ids are left out)."""
    found: dict[str, np.ndarray] = {}
    for batch in _batches(list(dict.fromkeys(ids)), 1000):  # Chroma refuses repeated ids
        result = collection.get(ids=batch, include=["embeddings"])
        for doc_id, vector in zip(result["ids"], result["embeddings"], strict=True):
            found[doc_id] = np.asarray(vector, dtype=np.float32)
    return found


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
        "labels_json": json.dumps(list(record.labels), ensure_ascii=False),
        "references_json": json.dumps([asdict(reference) for reference in record.references], ensure_ascii=False),
        "citations_json": json.dumps([asdict(citation) for citation in record.citations], ensure_ascii=False),
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
        labels=tuple(json.loads(metadata.get("labels_json", "[]"))),
        references=tuple(LabelReference.from_dict(item) for item in json.loads(metadata.get("references_json", "[]"))),
        citations=tuple(Citation.from_dict(item) for item in json.loads(metadata.get("citations_json", "[]"))),
    )
