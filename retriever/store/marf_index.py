"""Stored vectors of the formula-fusion retriever, beside a statement index.

Layout, inside the index directory::

    fusion/manifest.json     which models built it, the token projection, sizes
    fusion/ids.json          statement id -> [chunk, first row, rows] of its token vectors
    fusion/projection.npz    the PCA that compresses token states (384 -> token_dim) for MaxSim
    fusion/tokens-NNNNN.npy  compressed token vectors (float16, unit length), appended per batch
    chroma/ (collections)    ``fusion``: pooled fused vectors (inner product) for the first stage;
                             ``formulas``: each statement's formulas by the formula encoder alone

The index follows the statement store: :meth:`MarfIndex.add` and :meth:`MarfIndex.remove` as
statements are written and deleted, :meth:`MarfIndex.update` to catch up with the whole store
(it embeds only the statements it lacks and forgets deleted ones). It writes its id map after every
batch, so a crash loses at most one batch and a rerun resumes.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from chromadb.api.models.Collection import Collection
from tqdm import tqdm

from ingestion.records import StatementRecord
from retriever.storage.atomic_files import write_text_atomically
from retriever.storage.chroma_connection import EMBEDDED, ChromaConnection
from retriever.text.formula_selection import select_formulas
from retriever.types import ScoredId, VectorUpdate

if TYPE_CHECKING:  # torch loads with it (2.6 s): imported where a formula encoder is built
    from retriever.models.marf_encoder import MarfEncoder

FUSION_DIR = "fusion"
FUSION_COLLECTION = "fusion"
FORMULA_COLLECTION = "formulas"


class MarfIndexError(RuntimeError):
    """The fusion index is missing, or was built by other models than the ones configured."""


class MarfIndex:
    def __init__(self, index_directory: Path, token_dim: int = 128, connection: ChromaConnection = EMBEDDED) -> None:
        self.directory = index_directory / FUSION_DIR
        self.token_dim = token_dim
        self.connection = connection
        self._client = connection.client(index_directory / "chroma")
        self._ids: dict[str, list[int]] | None = None
        self._chunks: dict[int, np.ndarray] = {}
        self._projection: tuple[np.ndarray, np.ndarray] | None = None
        self._collections: dict[str, Collection] = {}

    # ------------------------------------------------------------------ state
    def exists(self) -> bool:
        return (self.directory / "manifest.json").exists()

    def manifest(self) -> dict[str, object]:
        path = self.directory / "manifest.json"
        return json.loads(path.read_text()) if path.exists() else {}

    def check_built(self) -> None:
        if not self.manifest().get("identity"):
            raise MarfIndexError(
                f"no formula-fusion vectors in {self.directory.parent}; build them with "
                f"`rag-app build-fusion --index {self.directory.parent}`"
            )

    def check(self, encoder: MarfEncoder) -> None:
        """Refuse to search vectors that other models built."""
        self.check_built()
        built_by = self.manifest().get("identity")
        if built_by != encoder.identity:
            raise MarfIndexError(
                f"the formula-fusion vectors in {self.directory} were built by {built_by!r}, not the configured "
                f"{encoder.identity!r}; rebuild them with "
                f"`rag-app build-fusion --rebuild --index {self.directory.parent}`"
            )

    def ids(self) -> dict[str, list[int]]:
        if self._ids is None:
            path = self.directory / "ids.json"
            self._ids = json.loads(path.read_text()) if path.exists() else {}
        return self._ids

    def __len__(self) -> int:
        return len(self.ids())

    def bytes_on_disk(self) -> dict[str, int]:
        """Bytes of the token vectors (MaxSim) and of the pooled vectors (measured when built)."""
        tokens = sum(path.stat().st_size for path in self.directory.glob("tokens-*.npy"))
        pooled = int(self.manifest().get("pooled_bytes", 0))
        return {"maxsim_tokens": tokens, "pooled": pooled}

    # ------------------------------------------------------------------ writing
    def update(
        self, records: Iterable[StatementRecord], encoder: MarfEncoder, batch: int = 256, show_progress: bool = False,
        rebuild: bool = False,
    ) -> VectorUpdate:  # fmt: skip
        """Embed the statements not yet in the fusion index and forget those no longer in ``records``."""
        started = time.perf_counter()
        if rebuild or (self.exists() and self.manifest().get("identity") != encoder.identity):
            self._clear()
        wanted = {record.id: record for record in records}
        removed = self.remove([statement_id for statement_id in self.ids() if statement_id not in wanted])
        added = self.add(list(wanted.values()), encoder, batch, show_progress)
        return VectorUpdate(added, removed, len(self.ids()), time.perf_counter() - started)

    def add(
        self, records: Sequence[StatementRecord], encoder: MarfEncoder, batch: int = 256, show_progress: bool = False
    ) -> int:
        """Embed the statements not yet in the fusion index; returns how many."""
        self.directory.mkdir(parents=True, exist_ok=True)
        chroma_before = _directory_bytes(self.directory.parent / "chroma")
        known = self.ids()
        missing = list({record.id: record for record in records if record.id not in known}.values())
        progress = tqdm(total=len(missing), desc="formula fusion", unit="stmt", disable=not show_progress)
        with progress:
            for start in range(0, len(missing), batch):
                chunk = missing[start : start + batch]
                self._add(chunk, encoder)
                progress.update(len(chunk))
        manifest = {
            **self.manifest(),
            "identity": encoder.identity,
            "embedder": encoder.embedder.identity,
            "formula_models": encoder.models.identity,
            "token_dim": self.token_dim,
            "statements": len(known),
            "updated": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        }
        if missing:
            grown = _directory_bytes(self.directory.parent / "chroma") - chroma_before
            manifest["pooled_bytes"] = int(manifest.get("pooled_bytes", 0)) + max(0, grown)
        self._write("manifest.json", json.dumps(manifest, indent=2))
        return len(missing)

    def remove(self, ids: Iterable[str]) -> int:
        """Forget deleted statements; returns how many were here."""
        known = self.ids()
        removed = [statement_id for statement_id in dict.fromkeys(ids) if statement_id in known]
        if removed:
            self._pooled().delete(ids=removed)
            self._formulas().delete(where={"statement": {"$in": removed}})
            for statement_id in removed:
                del known[statement_id]
            self._write("ids.json", json.dumps(known))
            self._write("manifest.json", json.dumps({**self.manifest(), "statements": len(known)}, indent=2))
        return len(removed)

    def _add(self, records: Sequence[StatementRecord], encoder: MarfEncoder) -> None:
        fused = encoder.encode([r.search_text() for r in records], [r.formulas for r in records])
        mean, projection = self._fit_projection(fused)
        chunk_number = max((location[0] for location in self.ids().values()), default=-1) + 1
        rows: list[np.ndarray] = []
        offset = 0
        for record, text in zip(records, fused, strict=True):
            compressed = _unit((text.tokens - mean) @ projection).astype(np.float16)
            rows.append(compressed)
            self.ids()[record.id] = [chunk_number, offset, len(compressed)]
            offset += len(compressed)
        np.save(self.directory / f"tokens-{chunk_number:05d}.npy", np.concatenate(rows))
        self._pooled().upsert(ids=[r.id for r in records], embeddings=np.stack([t.vector for t in fused]))
        formula_ids, formula_vectors, formula_meta = [], [], []
        for record in records:
            chosen = select_formulas(record.formulas, 16)
            if chosen:
                vectors = encoder.models.encoder.embed(chosen)
                for number, vector in enumerate(vectors):
                    formula_ids.append(f"{record.id}:{number}")
                    formula_vectors.append(vector)
                    formula_meta.append({"statement": record.id})
        if formula_ids:
            self._formulas().upsert(ids=formula_ids, embeddings=np.stack(formula_vectors), metadatas=formula_meta)
        self._write("ids.json", json.dumps(self.ids()))  # last: a crash before it re-embeds this batch

    def _fit_projection(self, fused: Sequence) -> tuple[np.ndarray, np.ndarray]:
        """The PCA that compresses token states, fitted once on the first batch and kept."""
        if self._projection is None:
            path = self.directory / "projection.npz"
            if path.exists():
                saved = np.load(path)
                self._projection = (saved["mean"], saved["projection"])
            else:
                sample = np.concatenate([text.tokens for text in fused])
                mean = sample.mean(axis=0)
                _, _, components = np.linalg.svd(sample - mean, full_matrices=False)
                projection = components[: self.token_dim].T.astype(np.float32)
                np.savez(path, mean=mean.astype(np.float32), projection=projection)
                self._projection = (mean.astype(np.float32), projection)
        return self._projection

    def _clear(self) -> None:
        for name in map(self.connection.collection, (FUSION_COLLECTION, FORMULA_COLLECTION)):
            if name in {c.name for c in self._client.list_collections()}:
                self._client.delete_collection(name)
        if self.directory.exists():
            for path in self.directory.iterdir():
                path.unlink()
        self._ids, self._chunks, self._projection, self._collections = None, {}, None, {}

    def _write(self, name: str, text: str) -> None:
        write_text_atomically(self.directory / name, text)

    # ------------------------------------------------------------------ reading
    def search_pooled(self, vector: np.ndarray, k: int) -> list[ScoredId]:
        count = len(self)
        if count == 0 or k <= 0:
            return []
        result = self._pooled().query(query_embeddings=[vector], n_results=min(k, count), include=["distances"])
        # Chroma's inner-product distance is 1 - <q, d>
        return [ScoredId(i, 1.0 - float(d)) for i, d in zip(result["ids"][0], result["distances"][0], strict=True)]

    def search_formula_vectors(self, vectors: np.ndarray, k: int) -> list[ScoredId]:
        """Statements whose formulas are nearest to any of the query formulas' vectors (best score each)."""
        if len(vectors) == 0 or k <= 0:
            return []
        # no count() first: it scans the collection; Chroma returns fewer results when fewer exist
        result = self._formulas().query(
            query_embeddings=list(vectors), n_results=4 * k, include=["distances", "metadatas"]
        )
        best: dict[str, float] = {}
        for distances, metadatas in zip(result["distances"], result["metadatas"], strict=True):
            for distance, metadata in zip(distances, metadatas, strict=True):
                statement = str(metadata["statement"])
                best[statement] = max(best.get(statement, -1.0), 1.0 - float(distance))
        ranked = sorted(best.items(), key=lambda item: (-item[1], item[0]))[:k]
        return [ScoredId(statement, score) for statement, score in ranked]

    def maxsim(self, query_tokens: np.ndarray, ids: Sequence[str]) -> list[ScoredId]:
        """MaxSim of the query's fused token states against each candidate's stored token vectors."""
        mean, projection = self._fit_projection(())
        query = _unit((query_tokens - mean) @ projection).astype(np.float32)
        scored = []
        for statement_id in ids:
            location = self.ids().get(statement_id)
            if location is None:
                continue
            chunk, first, rows = location
            document = self._chunk(chunk)[first : first + rows].astype(np.float32)
            scored.append(ScoredId(statement_id, float((query @ document.T).max(axis=1).mean())))
        return sorted(scored, key=lambda hit: (-hit.score, hit.id))

    def _chunk(self, number: int) -> np.ndarray:
        if number not in self._chunks:
            self._chunks[number] = np.load(self.directory / f"tokens-{number:05d}.npy", mmap_mode="r")
        return self._chunks[number]

    def _pooled(self) -> Collection:
        if FUSION_COLLECTION not in self._collections:
            self._collections[FUSION_COLLECTION] = self.connection.open_collection(
                self._client, FUSION_COLLECTION, space="ip"
            )
        return self._collections[FUSION_COLLECTION]

    def _formulas(self) -> Collection:
        if FORMULA_COLLECTION not in self._collections:
            self._collections[FORMULA_COLLECTION] = self.connection.open_collection(
                self._client, FORMULA_COLLECTION, space="cosine"
            )
        return self._collections[FORMULA_COLLECTION]


def _unit(matrix: np.ndarray) -> np.ndarray:
    return matrix / np.maximum(np.linalg.norm(matrix, axis=-1, keepdims=True), 1e-12)


def _directory_bytes(directory: Path) -> int:
    return sum(path.stat().st_size for path in directory.rglob("*") if path.is_file()) if directory.exists() else 0
