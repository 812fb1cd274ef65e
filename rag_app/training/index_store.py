"""The ingested index a training job reads its statements from."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from retriever.storage.chroma_connection import EMBEDDED, ChromaConnection
from retriever.store.chroma_store import COLLECTION, ChromaStatementStore
from retriever.store.statement_index import MANIFEST


def open_index_store(
    index_dir: Path, connection: ChromaConnection = EMBEDDED
) -> tuple[ChromaStatementStore, dict[str, Any]]:
    """The live Chroma collection of an index, and its manifest (which embedder built it)."""
    manifest_path = index_dir / MANIFEST
    if not manifest_path.exists():
        raise FileNotFoundError(f"no index in {index_dir}: ingest a corpus first (rag-app ingest ...)")
    manifest = json.loads(manifest_path.read_text())
    collection = str(manifest.get("collection", COLLECTION))
    return ChromaStatementStore(index_dir / "chroma", collection, connection), manifest
