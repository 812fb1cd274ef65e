"""The statement index: records and vectors in Chroma, and the stores derived from them.

Layout of an index directory::

    manifest.json   which embedder built the vectors (searching with another is refused; ``reindex``
                    re-embeds) and which Chroma collection holds them; rewritten at every write
    papers.sqlite   which papers are in, at which version and content hash (``ingest arxiv``)
    chroma/         the Chroma persistent store (records and vectors): the source of truth
    bm25/, formula_bm25/, bm25.stale   the lexical indexes (``retriever.store.lexical_indexes``)
    committed.sqlite which statements each complete write committed, by generation: what readers pin
                    (``retriever.storage.commit_log``)
    duplicates.sqlite, dense2/, marf/, graph.sqlite, ranking_profiles.sqlite
                    the other derived stores (``retriever.store.derived_stores``)

Every write goes to Chroma first, then to each derived store in ``StatementIndex.derived``, then is committed
in the commit log (a new generation), and last the manifest names that generation. A search reads at the
generation its process pinned: the statements of complete writes only, in every store.
"""

from __future__ import annotations

import functools
import json
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
from tenacity import Retrying, stop_after_attempt, wait_incrementing

from ingestion.records import StatementRecord
from retriever.models.embedder import Embedder
from retriever.storage.atomic_files import file_stamp, write_text_atomically
from retriever.storage.bm25_index import BM25Index
from retriever.storage.chroma_connection import EMBEDDED, ChromaConnection
from retriever.storage.index_lock import IndexWriterBusyError, WriterLock
from retriever.storage.statement_graph import StatementGraph
from retriever.store.chroma_store import COLLECTION, ChromaStatementStore
from retriever.store.committed_generations import CommittedGenerations, CommittedStatementsStore
from retriever.store.companion_index import CompanionIndex
from retriever.store.derived_stores import (
    CitingTextStore,
    CompanionVectorsStore,
    DerivedStore,
    DuplicateGroupsStore,
    FormulaIndexStore,
    MarfVectorsStore,
    RankingProfilesStore,
    StatementGraphStore,
    WordIndexStore,
)
from retriever.store.duplicate_groups import DuplicateGroups
from retriever.store.lexical_indexes import LexicalIndexes
from retriever.store.marf_index import MarfIndex, MarfIndexError
from retriever.store.paper_manifest import PaperManifest
from retriever.store.ranking_profiles import RankingProfiles
from retriever.store.reload_guard import ReloadGuard
from retriever.types import VectorUpdate

if TYPE_CHECKING:  # torch loads with it (2.6 s): imported where a formula encoder is built
    from retriever.models.marf_encoder import MarfEncoder

logger = logging.getLogger(__name__)

MANIFEST = "manifest.json"
PAPERS = "papers.sqlite"
FUSION_OFF = "formula fusion is off: set formula.models (`packaged` or a model directory)"
CREATE_ATTEMPTS = 4  # a new index's first open of Chroma, while another process may be creating it


class IndexDamagedError(RuntimeError):
    """A file of the index cannot be read; the message names it and what to run."""


class IndexNotFoundError(FileNotFoundError):
    """A directory named as an index to search holds none (a mistyped path, not an empty index)."""


class IndexMismatchError(RuntimeError):
    """The index was built with another embedding model than the one configured."""


@dataclass(frozen=True, slots=True)
class AddResult:
    added: int
    unchanged: int
    updated: int = 0  # already stored under the same id, but shown differently (a renamed theorem): replaced


def shown_fields(record: StatementRecord) -> tuple[object, ...]:
    """What a reader sees of a statement beyond the text its id hashes: its name, labels, section, title,
    link, formulas, proof, metadata, references and citations. A re-ingest that changes any of them replaces the
    stored record (and its vector: the name and section are embedded with the text)."""
    return (record.name, record.label, record.labels, record.section, record.title, record.url,
            record.formulas, record.proof, sorted((str(k), str(v)) for k, v in record.metadata.items()),
            record.references, record.citations)  # fmt: skip


F = TypeVar("F", bound=Callable[..., Any])


def _by_the_writer(method: F) -> F:
    """The method runs holding the index's writer lock (``self.writer``: re-entrant, so inside an ingest that
    holds it already it costs nothing; else it waits for another process's ingest to end)."""

    @functools.wraps(method)
    def held(self: StatementIndex, *args: Any, **kwargs: Any) -> Any:
        with self.writer.hold():
            return method(self, *args, **kwargs)

    return held  # type: ignore[return-value]


class StatementIndex:
    def __init__(
        self,
        directory: Path,
        embedder: Embedder,
        formula_models: str | None = None,
        token_dim: int = 128,
        connection: ChromaConnection = EMBEDDED,
        duplicates: DuplicateGroups | None = None,
        companion: CompanionIndex | None = None,
        writer_wait_s: float = 900.0,
    ) -> None:
        self.directory = directory
        self.duplicates = duplicates  # kept in step with the store: found at add, forgotten at delete
        self.companion = companion  # the companion embedding model's vectors, kept in step the same way
        self.connection = connection
        self.formula_models = formula_models  # None: the fusion modes are off
        self.token_dim = token_dim
        self._marf_encoder: MarfEncoder | None = None
        self._marf_index: MarfIndex | None = None
        self.embedder = embedder
        if directory.exists() and not directory.is_dir():
            raise IndexDamagedError(f"{directory} is a file, not an index directory; give --index a directory")
        directory.mkdir(parents=True, exist_ok=True)
        self.writer = WriterLock(directory, writer_wait_s)  # one writer at a time, across processes
        self._manifest_seen = file_stamp(directory / MANIFEST)  # the last write this process knows of
        opened_at = self.manifest()  # read before Chroma opens: the clients then hold at least its generation
        built_with = opened_at.get("embedder")
        if built_with and built_with != embedder.identity:
            raise IndexMismatchError(
                f"the index in {directory} was built with the embedder {built_with!r}, but the settings "
                f"name {embedder.identity!r}; vectors of two models cannot be mixed. Re-embed it with "
                f"`rag-app reindex --index {directory}`, or set embedding.model back to {built_with!r}"
            )
        # Chroma creates its database on first open; two processes creating one index at once raced (one
        # failed with the file "cannot be opened"), so a new index's first open is tried again once the
        # other process has made it (the writer lock is not taken here: a waiting ingest says so itself).
        creating = not connection.is_server and not (directory / "chroma" / "chroma.sqlite3").exists()
        opening = Retrying(
            stop=stop_after_attempt(CREATE_ATTEMPTS if creating else 1), wait=wait_incrementing(0.5, 0.5), reraise=True
        )
        try:
            self.store = opening(ChromaStatementStore, directory / "chroma", self.collection_name, connection)
        except Exception as error:  # Chroma raises many kinds on a damaged database: name the file instead
            if connection.is_server:  # a server's errors are its own (unreachable, refused)
                raise
            raise IndexDamagedError(
                f"{directory / 'chroma' / 'chroma.sqlite3'} cannot be opened ({type(error).__name__}: "
                f"{' '.join(str(error).split())[:200]}); it holds the statements and their vectors: restore it "
                "from a copy, or ingest again into a new --index"
            ) from error
        self.lexical = LexicalIndexes(directory)
        self.graph = StatementGraph(directory)  # what each statement references, and what references it
        self.ranking_profiles = RankingProfiles(directory)  # what the learned ranker reads off each statement
        # Every store derived from Chroma, in the order a write reaches them (see derived_stores).
        self.derived: list[DerivedStore] = [
            DuplicateGroupsStore(self, duplicates),
            CompanionVectorsStore(self, companion),
            WordIndexStore(self),
            FormulaIndexStore(self),
            MarfVectorsStore(self),
            StatementGraphStore(self, self.graph),
            CitingTextStore(self, self.graph),
            RankingProfilesStore(self, self.ranking_profiles),
        ]
        self.commits = CommittedGenerations(self)  # which statements each complete write committed; what reads pin
        self.derived.append(CommittedStatementsStore(self.commits))  # last: committed once every store has the write
        self.commits.pin(opened_at.get("generation"))
        self._lexical_checked = False  # sync_lexical ran once for searching in this process
        self.reads = ReloadGuard()  # searches read Chroma inside reads.reading(); a reload waits for them

    @property
    def collection_name(self) -> str:
        """The Chroma collection holding the vectors (a reindex writes a new one, then switches)."""
        return str(self.manifest().get("collection", COLLECTION))

    # ----------------------------------------------------------------- writing
    def add(self, records: Sequence[StatementRecord], show_progress: bool = False) -> AddResult:
        """Embed and store the records not yet indexed (ids are content hashes), and replace those stored
        under the same id whose shown fields changed (:func:`shown_fields`: a renamed theorem). A changed
        record whose embedded text is the same (new references, say) keeps its stored vector: a re-ingest
        after an upgrade re-embeds nothing it need not."""
        with self.writer.hold():  # what is stored is read and written by one writer
            rows, changed, kept_vectors = self._to_write(records)
            to_write = [records[row] for row in rows]
            if to_write:
                fresh = [record for record in to_write if record.id not in kept_vectors]
                texts = [r.search_text() for r in fresh]
                embedded = self.embedder.embed_documents(texts, show_progress) if fresh else []
                by_id = {**dict(zip([r.id for r in fresh], embedded, strict=True)), **kept_vectors}
                self._delete(sorted(changed))  # every derived store forgets the old version first
                self._store(to_write, np.stack([by_id[record.id] for record in to_write]))
        return AddResult(len(to_write) - len(changed), len(records) - len(to_write), len(changed))

    def add_embedded(self, records: Sequence[StatementRecord], vectors: np.ndarray) -> AddResult:
        """Store records whose vectors were computed elsewhere (parallel workers, another machine).

        The vectors must come from this index's embedder (``embedder.identity``); the caller checks that.
        """
        if len(records) != len(vectors):
            raise ValueError(f"{len(records)} records but {len(vectors)} vectors")
        with self.writer.hold():
            rows, changed, _ = self._to_write(records)
            if rows:
                self._delete(sorted(changed))
                self._store([records[row] for row in rows], np.asarray(vectors, dtype=np.float32)[rows])
        return AddResult(len(rows) - len(changed), len(records) - len(rows), len(changed))

    def _to_write(self, records: Sequence[StatementRecord]) -> tuple[list[int], set[str], dict[str, np.ndarray]]:
        """The rows of ``records`` to write (one per id, the last wins), the ids among them that are
        stored already with other shown fields, and the stored vectors of those whose embedded text
        (:meth:`StatementRecord.search_text`) is unchanged."""
        last = {record.id: row for row, record in enumerate(records)}
        existing = self.store.existing_ids(list(last))
        stored, vectors = self.store.get_with_vectors(sorted(existing)) if existing else ([], {})
        stored_by_id = {record.id: record for record in stored}
        changed = {
            record_id for record_id, row in last.items()
            if record_id in stored_by_id and shown_fields(stored_by_id[record_id]) != shown_fields(records[row])
        }  # fmt: skip
        kept_vectors = {
            record_id: vectors[record_id] for record_id in changed
            if stored_by_id[record_id].search_text() == records[last[record_id]].search_text()
        }  # fmt: skip
        rows = [row for record_id, row in last.items() if record_id not in existing or record_id in changed]
        return rows, changed, kept_vectors

    @_by_the_writer
    def _store(self, records: Sequence[StatementRecord], vectors: np.ndarray) -> None:
        """Chroma first, then every derived store that follows this write. The lexical indexes are
        marked stale until they have the new statements too: a kill in between is caught up later."""
        in_step = self.lexical.in_step(self.count)
        if not (self.directory / MANIFEST).exists():  # a new index names its embedder before any vector
            self.write_manifest(generation=self.commits.log.generation())
        log_in_step = self.commits.in_step()
        self.lexical.mark_stale()
        followers = [store for store in self.derived if store.follows(in_step)]  # asked before the write
        self.store.upsert(records, vectors)
        for store in followers:
            store.add(records, vectors)
        self._written(in_step, self.commits.commit([record.id for record in records], vectors, (), log_in_step))

    @_by_the_writer
    def _delete(self, ids: Sequence[str]) -> None:
        if not ids:
            return
        in_step = self.lexical.in_step(self.count)
        removed = self.store.get(ids) if in_step else []  # their formula counts leave the statistics
        log_in_step = self.commits.in_step()
        self.lexical.mark_stale()
        followers = [store for store in self.derived if store.follows(in_step)]
        self.store.delete(ids)
        for store in followers:
            store.remove(ids, removed)
        self._written(in_step, self.commits.commit([], None, ids, log_in_step))

    def _written(self, lexical_in_step: bool, generation: int) -> None:
        """The write committed as ``generation``: this process reads at it, and the manifest is rewritten (its
        count, its generation, and the stamp other processes watch); the lexical indexes in step again if they
        were before the write."""
        self.commits.pin(generation)
        if not lexical_in_step:
            self.write_manifest(generation=generation)
            return
        self.write_manifest(statements=len(self.lexical_index()), generation=generation)
        self.lexical.mark_in_step()

    def remove_stale(self, ids_by_paper: Mapping[str, set[str]]) -> int:
        """Delete statements a re-ingested paper no longer has; returns how many."""
        stale: set[str] = set()
        for paper_id, ids in ids_by_paper.items():
            stale |= self.store.ids_for_paper(paper_id) - ids
        self._delete(sorted(stale))
        return len(stale)

    def remove_papers(self, paper_ids: Sequence[str]) -> None:
        """Delete every statement of these papers (posts deleted from a newer dump)."""
        if paper_ids:
            self._delete(sorted(self.store.ids_for_papers(paper_ids)))

    # ----------------------------------------------------------------- derived stores
    def catch_up(self, quick: bool = True, show_progress: bool = False) -> None:
        """Bring every derived store in step with Chroma, the source of truth (what every ingest ends
        with: a kill between the Chroma write and theirs leaves them behind). ``quick``: only those whose
        counts differ; otherwise each is compared id by id (``rag-app repair``)."""
        steps = dict.fromkeys(store.catch_up for store in self.derived if store.kept())  # the lexical pair once
        with self.writer.hold():
            for catch_up in steps:
                catch_up(quick=quick, show_progress=show_progress)

    def sync_lexical(self, show_progress: bool = False, quick: bool = True) -> None:
        """Make sure BM25 and the formula index hold the store's statements.

        Writes keep them in step as they go, so this rebuilds only after a crash mid-write, for an
        index made by an older version, or when their counts disagree with the store's; ``quick=False``
        rebuilds them in any case (a repair found their ids differ).
        """
        if not quick or self.lexical.stale or len(self.lexical_index()) != self.count():
            if self.writer.held_elsewhere():
                # An ingest in another process is between its Chroma write and BM25's: it brings them in
                # step itself. Searching reads what is there now, and looks again next time.
                return
            try:
                with self.writer.hold(wait_s=0):
                    self.rebuild_lexical(show_progress)
            except IndexWriterBusyError:
                return  # a writer started meanwhile: as above
        self._lexical_checked = True  # searches and the catch-ups after it need not check again

    @_by_the_writer
    def rebuild_lexical(self, show_progress: bool = False) -> None:
        """Rebuild the BM25 index and the lexical formula index from every record in the store."""
        self.lexical.rebuild(self.store.iter_records(), self.count(), show_progress)
        if (self.directory / MANIFEST).exists():  # its count too: a crash may have left the old one
            self.write_manifest(statements=len(self.lexical_index()))
        self.lexical.mark_in_step()

    def papers(self) -> PaperManifest:
        """The per-paper manifest (a new connection; close it when done)."""
        return PaperManifest(self.directory / PAPERS)

    # ----------------------------------------------------------------- reading
    def count(self) -> int:
        return self.store.count()

    def get(self, ids: Sequence[str]) -> list[StatementRecord]:
        return self.store.get(ids)

    def searchable_count(self) -> int:
        """Statements in the index, as searching sees them: BM25 keeps the store's count at no cost,
        while Chroma's count() scans the collection (72 ms at 1M statements, on every search)."""
        if not self._lexical_checked:  # rebuilt first when not in step with the store
            self.commits.sync()
            self.sync_lexical()
        return len(self.lexical_index())

    def lexical_index(self) -> BM25Index:
        """BM25 over the statements' words (opened once; it follows writes from other processes)."""
        return self.lexical.words()

    def formula_lexical_index(self) -> BM25Index:
        """BM25 over the statements' normalized formula terms (the lexical formula channel)."""
        return self.lexical.formulas()

    # ----------------------------------------------------------------- formula fusion
    def marf_encoder(self) -> MarfEncoder:
        if self.formula_models is None:
            raise MarfIndexError(FUSION_OFF)
        if self._marf_encoder is None:
            from retriever.models.marf_encoder import FormulaModels, MarfEncoder

            self._marf_encoder = MarfEncoder(self.embedder, FormulaModels.load(self.formula_models))
        return self._marf_encoder

    def marf_index(self) -> MarfIndex:
        """The formula-fusion vectors (kept open: its id map and token chunks are read once)."""
        if self._marf_index is None:
            self._marf_index = MarfIndex(self.directory, self.token_dim, self.connection)
        return self._marf_index

    def build_marf(self, rebuild: bool = False, show_progress: bool = False) -> VectorUpdate:
        """Bring the formula-fusion vectors up to date with the store (only new statements are embedded)."""
        return self.marf_index().update(
            self.store.iter_records(), self.marf_encoder(), show_progress=show_progress, rebuild=rebuild
        )

    # ----------------------------------------------------------------- manifest
    def manifest(self) -> dict[str, object]:
        path = self.directory / MANIFEST
        if not path.exists():
            return {}
        try:
            manifest = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
            raise IndexDamagedError(
                f"{path} is damaged ({type(error).__name__}: {error}); it names the index's embedder and "
                "collection, so the index cannot be opened: restore the file, or ingest again into a new --index"
            ) from error
        if not isinstance(manifest, dict):
            raise IndexDamagedError(f"{path} is damaged (not a JSON object); restore it or ingest into a new --index")
        return manifest

    def write_manifest(
        self, collection: str | None = None, statements: int | None = None, generation: int | None = None
    ) -> None:
        """Rewrite the manifest (also ``rag-app repair``). ``statements``: the count when the caller knows
        it; Chroma's count() scans the collection, and right after a write it took 5.3 s at 1M statements
        (the lexical index knows it for free). ``generation``: the commit this write ended with (else the
        manifest's own is kept: a rewrite that changes no statement commits nothing)."""
        if generation is None:
            kept = self.manifest().get("generation")
            generation = kept if isinstance(kept, int) else None
        manifest = {
            "format": 1,
            "embedder": self.embedder.identity,
            "embedder_spec": self.embedder.model_name,
            # the embedder cannot change under an index (checked on open): no need to load the model for it
            "dimension": self.manifest().get("dimension") or self.embedder.dimension,
            "collection": collection or self.collection_name,
            "statements": self.count() if statements is None else statements,
            "updated": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            **({} if generation is None else {"generation": generation}),
        }
        others_wrote = file_stamp(self.directory / MANIFEST) != self._manifest_seen
        save_manifest(self.directory, manifest)
        if not others_wrote:  # this process's own write: nothing to reload for it
            self._manifest_seen = file_stamp(self.directory / MANIFEST)

    def follow_other_writers(self) -> bool:
        """See what another process wrote since this one last looked (the chat beside an ingest).

        BM25 and the duplicate groups read their files afresh; embedded Chroma keeps its vector index in
        the memory of each process, so when the manifest (rewritten at every write) changed under this
        process, its Chroma cache is dropped and the store and the companion's vectors are opened again.
        A stat per search; a reload only after another process wrote. Returns whether it reloaded.
        """
        if file_stamp(self.directory / MANIFEST) == self._manifest_seen:
            return False
        if self.connection.is_server:  # a server serves every writer's statements already
            self._manifest_seen = file_stamp(self.directory / MANIFEST)
            self.commits.pin(self.manifest().get("generation"))
            self.store.forget_cached()  # but this process's copies of some may be out of date
            return False
        if self.reads.reading_here():
            return False  # this thread is mid-read (it would wait for itself): its next search reloads
        from chromadb.api.client import SharedSystemClient

        with self.reads.reloading():  # the searches in flight end first; new ones wait (retriever.store.reload_guard)
            stamp = file_stamp(self.directory / MANIFEST)
            if stamp == self._manifest_seen:
                return False  # another thread reloaded while this one waited
            self._manifest_seen = stamp
            generation = self.manifest().get("generation")  # read first: the clients opened next hold all of it
            # Clears every embedded client of the process: the serving process reads one index.
            SharedSystemClient.clear_system_cache()
            self.store.reconnect()
            if self.companion is not None:
                self.companion.reconnect()
            self._marf_index = None  # read again when next asked for
            self.commits.pin(generation)
        return True


def require_index(directory: Path, how_to_build: str) -> None:
    """Raise :class:`IndexNotFoundError` when ``directory`` holds no index: a command or call that reads an
    index must not take a mistyped path for a new, empty one."""
    if not (directory / MANIFEST).is_file():
        what = "holds no index" if directory.is_dir() else "does not exist"
        raise IndexNotFoundError(f"{directory} {what}; {how_to_build}")


def save_manifest(directory: Path, manifest: dict[str, object]) -> None:
    """Written whole or not at all: the manifest says which collection is live."""
    write_text_atomically(directory / MANIFEST, json.dumps(manifest, indent=2))
