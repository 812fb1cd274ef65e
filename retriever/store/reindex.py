"""Re-embedding an index with another embedder, resumable, switching collections in one atomic write."""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from pathlib import Path

from tqdm import tqdm

from ingestion.records import StatementRecord
from retriever.models.embedder import Embedder
from retriever.storage.chroma_connection import EMBEDDED, ChromaConnection
from retriever.storage.commit_log import CommitLog
from retriever.store.chroma_store import COLLECTION, ChromaStatementStore
from retriever.store.committed_generations import commit_difference
from retriever.store.statement_index import MANIFEST, save_manifest


@dataclass(frozen=True, slots=True)
class ReindexResult:
    previous: str  # the embedder that built the old vectors
    current: str
    embedded: int  # statements embedded in this run (a resumed run skips those done before)
    statements: int


def reindex(
    directory: Path,
    embedder: Embedder,
    force: bool = False,
    show_progress: bool = False,
    batch: int | None = None,
    connection: ChromaConnection = EMBEDDED,
) -> ReindexResult:
    """Re-embed every statement of the index in ``directory`` with ``embedder``.

    The new vectors go into a new Chroma collection; the manifest then switches to it in one atomic
    write, and the old collection is dropped. A crash leaves the old index usable, and a rerun resumes
    where the last one stopped (statement ids are content hashes). Texts and BM25 are unchanged.
    ``batch``: statements embedded and written together (default: eight encoder batches).
    """
    batch = batch or embedder.batch_size * 8
    manifest_path = directory / MANIFEST
    if not manifest_path.exists():
        raise FileNotFoundError(f"no index in {directory} (no {MANIFEST})")
    manifest = json.loads(manifest_path.read_text())
    previous = str(manifest.get("embedder", ""))
    old_collection = str(manifest.get("collection", COLLECTION))
    old = ChromaStatementStore(directory / "chroma", old_collection, connection)
    if previous == embedder.identity and not force:
        return ReindexResult(previous, embedder.identity, 0, old.count())
    target_name = _collection_for(embedder.identity)
    if target_name == old_collection:
        target_name += "-rebuilt"
    target = ChromaStatementStore(directory / "chroma", target_name, connection)
    wanted = old.all_ids()
    done = target.all_ids()
    if done - wanted:
        target.delete(sorted(done - wanted))
    embedded = 0
    pending: list[StatementRecord] = []
    progress = tqdm(total=len(wanted), initial=len(done & wanted), unit="stmt", desc="re-embedding",
                    disable=not show_progress)  # fmt: skip
    with progress:
        for record in old.iter_records():
            if record.id in done:
                continue
            pending.append(record)
            if len(pending) >= batch:
                embedded += _embed_into(target, embedder, pending)
                progress.update(len(pending))
                pending = []
        if pending:
            embedded += _embed_into(target, embedder, pending)
            progress.update(len(pending))
    switched = {
        **manifest,
        "embedder": embedder.identity,
        "embedder_spec": embedder.model_name,
        "dimension": embedder.dimension,
        "collection": target_name,
        "statements": target.count(),
        "updated": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "reindexed_from": previous,
    }
    switched.pop("generation", None)  # the commit log's vectors are the old model's: committed again, below
    save_manifest(directory, switched)
    save_manifest(directory, {**switched, "generation": _committed_again(directory, target)})
    for name in target.collection_names():
        if name != target_name and name.startswith(COLLECTION):  # other collections (formula fusion) stay
            target.drop_collection(name)
    return ReindexResult(previous, embedder.identity, embedded, target.count())


def _embed_into(store: ChromaStatementStore, embedder: Embedder, records: list[StatementRecord]) -> int:
    store.upsert(records, embedder.embed_documents([r.search_text() for r in records]))
    return len(records)


def _collection_for(identity: str) -> str:
    """A Chroma collection name for an embedder (3-63 characters of [a-zA-Z0-9._-])."""
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", identity).strip("-._")
    return f"statements-{slug}"[:63].rstrip("-._")


def _committed_again(directory: Path, store: ChromaStatementStore) -> int:
    """The commit log made again from the new collection (its vectors are the new model's); the generation."""
    log = CommitLog(directory)
    log.recreate()
    return commit_difference(log, set(), store)
