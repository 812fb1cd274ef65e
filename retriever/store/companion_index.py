"""The companion embedding model's vectors beside a statement index, searched as one more dense channel.

The *companion* is a second, independent embedding model (settings ``[second_embedding]``, CLI
``build-dense2``, channel ``dense2`` in ``channel_ranks``: those names are contracts and stay).

Two embedding models of different sizes and training err on different questions: fused, they rank
the right statement higher than either alone (all-mpnet-base-v2 beside the served MiniLM; the
docs/retrieval-and-evaluation.md, "Second embedding model", has the measurements). The second
model's vectors live in their own Chroma collection of the index's store; the statement texts stay
in the main collection only.

Layout, inside the index directory::

    dense2/manifest.json    which embedder built the vectors (identity), how many statements it holds
    chroma/ (collection)    ``dense2``: one vector per statement (cosine)

The index follows the statement store: :meth:`CompanionIndex.add` and :meth:`CompanionIndex.remove`
as statements are written and deleted (``StatementIndex`` calls them), :meth:`CompanionIndex.update`
to catch up with the whole store (it embeds only the statements it lacks and forgets deleted ones).

Like the first model's dense channel, its query vectors may go through a query adapter trained for
its vectors (``rag-app train query-adapter --second-embedding``; ``second_embedding.query_adapter``):
the statement vectors stay as the model made them.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
from chromadb.api.models.Collection import Collection
from tqdm import tqdm

from ingestion.records import StatementRecord
from retriever.models.embedder import Embedder
from retriever.models.query_adapter import QueryAdapter, query_vector
from retriever.storage.atomic_files import write_text_atomically
from retriever.storage.chroma_connection import EMBEDDED, ChromaConnection
from retriever.store.chroma_store import collection_nearest, collection_vectors
from retriever.store.exact_neighbours import ExactNeighbours, collection_matrix
from retriever.types import ScoredId, VectorUpdate

COMPANION_DIR = "dense2"
COMPANION_COLLECTION = "dense2"
CHANNEL = "dense2"


class CompanionIndexError(RuntimeError):
    """The second model's vectors are missing, or were built by another model than the one configured."""


class CompanionIndex:
    """The second embedder's vectors of an index's statements; also the channel searcher (``name``)."""

    name = CHANNEL

    def __init__(
        self,
        index_directory: Path,
        embedder: Embedder,
        connection: ChromaConnection = EMBEDDED,
        batch: int = 256,
        query_adapter: QueryAdapter | None = None,
        at_ingest: bool = True,
    ) -> None:
        self.directory = index_directory / COMPANION_DIR
        # False: writes leave new statements to `build-dense2` (``update``), run in the background.
        self.at_ingest = at_ingest
        self.embedder = embedder
        self.query_adapter = query_adapter
        self.connection = connection
        self.batch = batch
        self._client = connection.client(index_directory / "chroma")
        self._collection: Collection | None = None
        self.exact = ExactNeighbours(connection.hnsw.exact_limit("cosine"))  # the same ranking in every process

    # ------------------------------------------------------------------ state
    def manifest(self) -> dict[str, object]:
        path = self.directory / "manifest.json"
        return json.loads(path.read_text()) if path.exists() else {}

    def statements(self) -> int:
        """Statements holding a vector (from the manifest: Chroma's count() scans the collection)."""
        return int(self.manifest().get("statements", 0))

    def built_by_configured_model(self) -> bool:
        return self.manifest().get("embedder") == self.embedder.identity

    def check(self) -> None:
        """Refuse to search vectors that another model built (or none)."""
        built_by = self.manifest().get("embedder")
        if built_by != self.embedder.identity:
            found = f"were built by {built_by!r}" if built_by else "are not built"
            raise CompanionIndexError(
                f"the second embedding model's vectors in {self.directory.parent} {found}, not by the configured "
                f"{self.embedder.identity!r}; build them with `rag-app build-dense2 --index {self.directory.parent}`"
            )

    # ------------------------------------------------------------------ writing
    def update(
        self, records: Iterable[StatementRecord], show_progress: bool = False, rebuild: bool = False
    ) -> VectorUpdate:
        """Embed the statements not yet here and forget those no longer in ``records`` (the whole store)."""
        started = time.perf_counter()
        if rebuild or (self.manifest() and not self.built_by_configured_model()):
            self._clear()
        wanted = {record.id: record for record in records}
        present = set(self._vectors().get(include=[])["ids"])
        removed = self.remove(sorted(present - wanted.keys()))
        missing = [record for statement_id, record in wanted.items() if statement_id not in present]
        added = self._embed(missing, show_progress)
        self._write_manifest(self._vectors().count())  # exact again, even after a crash between two writes
        return VectorUpdate(added, removed, self.statements(), time.perf_counter() - started)

    def reconnect(self) -> None:
        """Open the client again (after the process's Chroma cache was cleared); the collection follows."""
        self._client = self.connection.client(self.directory.parent / "chroma")
        self._collection = None
        self.exact.clear()

    def ids(self) -> set[str]:
        """The statements holding a vector here (``rag-app status`` compares them with the store)."""
        return set(self._vectors().get(include=[])["ids"]) if self.manifest() else set()

    def add(self, records: Sequence[StatementRecord], show_progress: bool = False) -> int:
        """Embed the statements not yet here (ids are content hashes); returns how many (none when the
        vectors follow in the background: ``at_ingest`` off)."""
        if not self.at_ingest:
            return 0
        unique = list({record.id: record for record in records}.values())
        present: set[str] = set()
        for start in range(0, len(unique), 1000):
            batch = [record.id for record in unique[start : start + 1000]]
            present.update(self._vectors().get(ids=batch, include=[])["ids"])
        return self._embed([record for record in unique if record.id not in present], show_progress)

    def remove(self, ids: Sequence[str]) -> int:
        """Forget deleted statements; returns how many were here."""
        ids = list(dict.fromkeys(ids))
        if not ids or not self.manifest():
            return 0
        before = self._vectors().count()
        for start in range(0, len(ids), 1000):
            self._vectors().delete(ids=ids[start : start + 1000])
        removed = before - self._vectors().count()
        self.exact.clear()
        self._write_manifest(self.statements() - removed)
        return removed

    def _embed(self, records: Sequence[StatementRecord], show_progress: bool) -> int:
        progress = tqdm(total=len(records), desc="second embedding", unit="stmt", disable=not show_progress)
        with progress:
            for start in range(0, len(records), self.batch):
                chunk = records[start : start + self.batch]
                vectors = self.embedder.embed_documents([record.search_text() for record in chunk])
                self._vectors().upsert(ids=[record.id for record in chunk], embeddings=vectors)
                self.exact.clear()
                self._write_manifest(self.statements() + len(chunk))  # after each batch: a rerun resumes
                progress.update(len(chunk))
        if not records and not self.manifest():
            self._write_manifest(0)  # built (for an empty store): searching it is not an error
        return len(records)

    def _write_manifest(self, statements: int) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        manifest = {
            "embedder": self.embedder.identity,
            "embedder_spec": self.embedder.model_name,
            "statements": max(0, statements),
            "updated": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        }
        write_text_atomically(self.directory / "manifest.json", json.dumps(manifest, indent=2))

    def _clear(self) -> None:
        name = self.connection.collection(COMPANION_COLLECTION)
        if name in {collection.name for collection in self._client.list_collections()}:
            self._client.delete_collection(name)
        (self.directory / "manifest.json").unlink(missing_ok=True)
        self._collection = None
        self.exact.clear()

    # ------------------------------------------------------------------ reading
    def search(self, query: str, k: int) -> list[ScoredId]:
        statements = self.statements()
        if k <= 0 or statements == 0:
            return []
        vector = query_vector(self.embedder, query, self.query_adapter)
        # Kept under the manifest's count: `build-dense2` in another process changes it when it adds vectors.
        exact = self.exact.nearest(
            ("second model", statements), lambda: statements, lambda: collection_matrix(self._vectors()),
            vector.reshape(1, -1), k,
        )  # fmt: skip
        return exact[0] if exact is not None else collection_nearest(self._vectors(), vector, k)

    def vectors(self, ids: Sequence[str]) -> dict[str, np.ndarray]:
        """The stored vectors of ``ids`` (those present), as ``train query-adapter`` reads them."""
        return collection_vectors(self._vectors(), ids)

    def _vectors(self) -> Collection:
        if self._collection is None:
            self._collection = self.connection.open_collection(self._client, COMPANION_COLLECTION, space="cosine")
        return self._collection
