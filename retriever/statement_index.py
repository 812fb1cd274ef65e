"""The statement index: vectors in Chroma, BM25 beside them, searched by mode.

Layout of an index directory::

    manifest.json   which embedder built the vectors (searching with another is refused; ``reindex``
                    re-embeds) and which Chroma collection holds them
    papers.sqlite   which papers are in, at which version and content hash (``ingest arxiv``)
    chroma/         the Chroma persistent store (records and vectors)
    bm25/           the BM25 index, updated in place with the store (segments, see retriever.bm25_index)
    formula_bm25/   the lexical formula channel (BM25 over normalized formula terms), updated with bm25/
    bm25.stale      present while the store is being changed and BM25 not yet updated: found after a
                    crash, it makes the next search or ingest rebuild both from the store
"""

from __future__ import annotations

import json
import logging
import shutil
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
from tqdm import tqdm

from ingestion.records import StatementRecord
from retriever.atomic_files import write_text_atomically
from retriever.bm25_index import DATABASE as BM25_DATABASE
from retriever.bm25_index import BM25Index
from retriever.bm25_segment import BM25SegmentError
from retriever.chroma_connection import EMBEDDED, ChromaConnection
from retriever.chroma_store import COLLECTION, ChromaStatementStore
from retriever.companion_index import CompanionIndex
from retriever.duplicate_groups import DuplicateGroups
from retriever.embedder import Embedder
from retriever.formulas.formula_lexical_searcher import (
    FORMULA_B,
    FORMULA_K1,
    FormulaIndexStats,
    formula_documents,
)
from retriever.formulas.marf_encoder import FormulaModelError, FormulaModels, MarfEncoder
from retriever.formulas.marf_index import MarfIndex, MarfIndexError
from retriever.math_tokenizer import tokenize
from retriever.paper_manifest import PaperManifest
from retriever.types import VectorUpdate

logger = logging.getLogger(__name__)

MANIFEST = "manifest.json"
PAPERS = "papers.sqlite"
LEXICAL_STALE = "bm25.stale"
FORMULA_LEXICAL = "formula_bm25"
FORMULA_STATS = "stats.json"
# Statements read from the store per batch when the lexical indexes are rebuilt.
REBUILD_BATCH = 20_000
# A filtered search looks at most this deep for statements that pass the filter.
MAX_FILTER_DEPTH = 20_000
FUSION_OFF = "formula fusion is off: set formula.models (`packaged` or a model directory)"


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
    link, formulas, proof and metadata. A re-ingest that changes any of them replaces the stored record
    (and its vector: the name and section are embedded with the text)."""
    return (record.name, record.label, record.labels, record.section, record.title, record.url,
            record.formulas, record.proof, sorted((str(k), str(v)) for k, v in record.metadata.items()))  # fmt: skip


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
        self._check_manifest()
        try:
            self.store = ChromaStatementStore(directory / "chroma", self.collection_name, connection)
        except Exception as error:  # Chroma raises many kinds on a damaged database: name the file instead
            if connection.is_server:  # a server's errors are its own (unreachable, refused)
                raise
            raise IndexDamagedError(
                f"{directory / 'chroma' / 'chroma.sqlite3'} cannot be opened ({type(error).__name__}: "
                f"{' '.join(str(error).split())[:200]}); it holds the statements and their vectors: restore it "
                "from a copy, or ingest again into a new --index"
            ) from error
        self._bm25: BM25Index | None = None
        self._formula_bm25: BM25Index | None = None
        self._lexical_checked = False  # sync_lexical ran once for searching in this process
        self._manifest_seen = self._manifest_stamp()  # the last write this process knows of

    @property
    def collection_name(self) -> str:
        """The Chroma collection holding the vectors (a reindex writes a new one, then switches)."""
        return str(self.manifest().get("collection", COLLECTION))

    # ----------------------------------------------------------------- writing
    def add(self, records: Sequence[StatementRecord], show_progress: bool = False) -> AddResult:
        """Embed and store the records not yet indexed (ids are content hashes), and replace those stored
        under the same id whose shown fields changed (:func:`shown_fields`: a renamed theorem)."""
        rows, changed = self._to_write(records)
        to_write = [records[row] for row in rows]
        if to_write:
            vectors = self.embedder.embed_documents([r.search_text() for r in to_write], show_progress)
            self._delete(sorted(changed))  # every derived store forgets the old version first
            self._store(to_write, vectors)
        return AddResult(len(to_write) - len(changed), len(records) - len(to_write), len(changed))

    def add_embedded(self, records: Sequence[StatementRecord], vectors: np.ndarray) -> AddResult:
        """Store records whose vectors were computed elsewhere (parallel workers, another machine).

        The vectors must come from this index's embedder (``embedder.identity``); the caller checks that.
        """
        if len(records) != len(vectors):
            raise ValueError(f"{len(records)} records but {len(vectors)} vectors")
        rows, changed = self._to_write(records)
        if rows:
            self._delete(sorted(changed))
            self._store([records[row] for row in rows], np.asarray(vectors, dtype=np.float32)[rows])
        return AddResult(len(rows) - len(changed), len(records) - len(rows), len(changed))

    def _to_write(self, records: Sequence[StatementRecord]) -> tuple[list[int], set[str]]:
        """The rows of ``records`` to write (one per id, the last wins) and the ids among them that are
        stored already with other shown fields."""
        last = {record.id: row for row, record in enumerate(records)}
        existing = self.store.existing_ids(list(last))
        stored = {record.id: record for record in self.store.get(sorted(existing))} if existing else {}
        changed = {
            record_id for record_id, row in last.items()
            if record_id in stored and shown_fields(stored[record_id]) != shown_fields(records[row])
        }  # fmt: skip
        return [row for record_id, row in last.items() if record_id not in existing or record_id in changed], changed

    def _store(self, records: Sequence[StatementRecord], vectors: np.ndarray) -> None:
        in_step = self._lexical_in_step()
        if not (self.directory / MANIFEST).exists():  # a new index names its embedder before any vector
            self._write_manifest()
        self._mark_lexical_stale()  # until the lexical indexes have the new statements too
        # The second model's vectors follow the store from its first statement, or from `build-dense2`:
        # started on an index that has statements already, they would cover only the new ones.
        second = self.companion
        follows = second is not None and (second.built_by_configured_model() or self.store.count() == 0)
        self.store.upsert(records, vectors)
        if self.duplicates is not None:
            self.duplicates.add(records, vectors, self.store)
        if follows and second is not None:
            second.add(records)
        if not in_step:
            self._write_manifest()
            return
        self._index_lexical(records)
        self._update_fusion(records)
        self._write_manifest(statements=len(self.lexical_index()))
        (self.directory / LEXICAL_STALE).unlink(missing_ok=True)

    def _delete(self, ids: Sequence[str]) -> None:
        if not ids:
            return
        in_step = self._lexical_in_step()
        removed = self.store.get(ids) if in_step else []  # their formula counts leave the statistics
        self._mark_lexical_stale()
        self.store.delete(ids)
        if self.duplicates is not None:
            self.duplicates.remove(ids)
        if self.companion is not None:
            self.companion.remove(ids)
        if not in_step:
            self._write_manifest()
            return
        self.lexical_index().delete(ids)
        self.formula_lexical_index().delete(ids)
        self._write_formula_stats(self._formula_stats_or_zero() - formula_documents(removed)[2])
        if self.formula_models is not None and self.marf_index().exists():
            self.marf_index().remove(ids)
        self._write_manifest(statements=len(self.lexical_index()))
        (self.directory / LEXICAL_STALE).unlink(missing_ok=True)

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
    def sync_duplicates(self, quick: bool = False, show_progress: bool = False) -> tuple[int, int]:
        """Bring the duplicate groups in step with the store, the source of truth: statements the
        groups lack are joined (from their stored vectors, nothing re-embedded), those the store no
        longer has are forgotten. ``quick``: only when the counts differ (the end of an ingest; a kill
        between the Chroma write and the groups' leaves them behind); the store's count is BM25's,
        which is in step with it at no cost, where Chroma's count() scans the collection (5 s at 1M).
        Returns (added, removed)."""
        groups = self.duplicates
        if groups is None or (quick and groups.count() == self.searchable_count()):
            return 0, 0
        stored, known = self.store.all_ids(), groups.ids()
        extra, missing = sorted(known - stored), sorted(stored - known)
        groups.remove(extra)
        for start in tqdm(range(0, len(missing), REBUILD_BATCH), desc="duplicate groups", unit="batch",
                          disable=not show_progress or not missing):  # fmt: skip
            records = self.store.get(missing[start : start + REBUILD_BATCH])
            vectors = self.store.vectors([record.id for record in records])
            records = [record for record in records if record.id in vectors]  # deleted meanwhile
            if records:
                groups.add(records, np.stack([vectors[record.id] for record in records]), self.store)
        return len(missing), len(extra)

    def sync_companion(self, quick: bool = False, show_progress: bool = False) -> int:
        """Bring the second model's vectors in step with the store once they are built (a kill between
        the Chroma write and theirs leaves them behind); ``quick``: only when the counts differ. The
        missing statements are embedded by the second model; returns how many changed."""
        second = self.companion
        if second is None or not second.built_by_configured_model():
            return 0
        if quick and second.statements() == self.searchable_count():
            return 0
        update = second.update(self.store.iter_records(), show_progress=show_progress)
        return update.added + update.removed

    def sync_lexical(self, show_progress: bool = False) -> None:
        """Make sure BM25 and the formula index hold the store's statements.

        Writes keep them in step as they go, so this rebuilds only after a crash mid-write, for an
        index made by an older version, or when their counts disagree with the store's.
        """
        if self.lexical_stale or len(self.lexical_index()) != self.count():
            self.rebuild_lexical(show_progress)
        self._lexical_checked = True  # searches and the catch-ups after it need not check again

    def rebuild_lexical(self, show_progress: bool = False) -> None:
        """Rebuild the BM25 index and the lexical formula index from every record in the store."""
        self._mark_lexical_stale()
        self._emptied_lexical()
        stats = FormulaIndexStats(0, 0, 0)
        batch: list[StatementRecord] = []
        with tqdm(total=self.count(), unit="stmt", desc="BM25 + formula index", disable=not show_progress) as bar:
            for record in self.store.iter_records():
                batch.append(record)
                if len(batch) >= REBUILD_BATCH:
                    stats += self._add_lexical(batch)
                    bar.update(len(batch))
                    batch = []
            stats += self._add_lexical(batch)
            bar.update(len(batch))
        self._write_formula_stats(stats)
        if self.formula_models is not None and self.marf_index().exists():
            # the fusion vectors follow the store: new statements embedded, deleted ones forgotten
            try:
                self.marf_index().update(self.store.iter_records(), self.marf_encoder())
            except FormulaModelError as error:  # an ingest never dies on the optional fusion channel
                logger.warning("formula-fusion vectors not updated: %s", error)
        if (self.directory / MANIFEST).exists():  # its count too: a crash may have left the old one
            self._write_manifest(statements=len(self.lexical_index()))
        (self.directory / LEXICAL_STALE).unlink(missing_ok=True)

    def _emptied_lexical(self) -> None:
        """Both lexical indexes emptied for a rebuild. One whose files are damaged (its catalogue
        malformed, a segment truncated) cannot be cleared in place: its directory is removed and a
        fresh one made, for Chroma holds everything it is rebuilt from."""
        for name in ("bm25", FORMULA_LEXICAL):
            opener = self.lexical_index if name == "bm25" else self.formula_lexical_index
            try:
                opener().clear()
            except BM25SegmentError as error:
                logger.warning("%s; removing %s and rebuilding it", error, self.directory / name)
                self._close_lexical(name)
                shutil.rmtree(self.directory / name)
                opener().clear()

    def _close_lexical(self, name: str) -> None:
        index = self._bm25 if name == "bm25" else self._formula_bm25
        if index is not None:
            index.close()
        if name == "bm25":
            self._bm25 = None
        else:
            self._formula_bm25 = None

    def _lexical_in_step(self) -> bool:
        """Whether the lexical indexes hold exactly the store's statements, so a write can update them."""
        if not self.lexical_stale:
            return True
        if self.count() == 0:  # a new index: empty lexical indexes are in step
            self.lexical_index().clear()
            self.formula_lexical_index().clear()
            self._write_formula_stats(FormulaIndexStats(0, 0, 0))
            return True
        return False

    def _index_lexical(self, records: Sequence[StatementRecord]) -> None:
        self._write_formula_stats(self._formula_stats_or_zero() + self._add_lexical(records))

    def _add_lexical(self, records: Sequence[StatementRecord]) -> FormulaIndexStats:
        if not records:
            return FormulaIndexStats(0, 0, 0)
        self.lexical_index().add([r.id for r in records], [tokenize(r.search_text()) for r in records])
        ids, documents, stats = formula_documents(records)
        self.formula_lexical_index().add(ids, documents)
        return stats

    def _update_fusion(self, records: Sequence[StatementRecord]) -> None:
        if self.formula_models is None or not self.marf_index().exists():
            return
        try:  # an ingest never dies on the optional fusion channel
            encoder = self.marf_encoder()
            if self.marf_index().manifest().get("identity") != encoder.identity:
                logger.warning("formula-fusion vectors not updated: built by other models (run build-fusion --rebuild)")
                return
            self.marf_index().add(records, encoder)
        except FormulaModelError as error:
            logger.warning("formula-fusion vectors not updated: %s", error)

    def _formula_stats_or_zero(self) -> FormulaIndexStats:
        return self.formula_stats() or FormulaIndexStats(0, 0, 0)

    def _write_formula_stats(self, stats: FormulaIndexStats) -> None:
        path = self.directory / FORMULA_LEXICAL / FORMULA_STATS
        path.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomically(path, json.dumps(asdict(stats)))

    @property
    def lexical_stale(self) -> bool:
        return (
            (self.directory / LEXICAL_STALE).exists()
            or not (self.directory / "bm25" / BM25_DATABASE).exists()  # absent too in an older index (bm25s)
            or not (self.directory / FORMULA_LEXICAL / BM25_DATABASE).exists()
            or not (self.directory / FORMULA_LEXICAL / FORMULA_STATS).exists()
        )

    def _mark_lexical_stale(self) -> None:
        (self.directory / LEXICAL_STALE).touch()

    def papers(self) -> PaperManifest:
        """The per-paper manifest (a new connection; close it when done)."""
        return PaperManifest(self.directory / PAPERS)

    # ----------------------------------------------------------------- reading
    def count(self) -> int:
        return self.store.count()

    def get(self, ids: Sequence[str]) -> list[StatementRecord]:
        return self.store.get(ids)

    # ----------------------------------------------------------------- formula fusion
    def marf_encoder(self) -> MarfEncoder:
        if self.formula_models is None:
            raise MarfIndexError(FUSION_OFF)
        if self._marf_encoder is None:
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

    def formula_stats(self) -> FormulaIndexStats | None:
        """Formulas indexed and how many were malformed (fell back to raw tokens)."""
        path = self.directory / FORMULA_LEXICAL / FORMULA_STATS
        return FormulaIndexStats(**json.loads(path.read_text())) if path.exists() else None

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

    # ----------------------------------------------------------------- helpers
    def lexical_index(self) -> BM25Index:
        """BM25 over the statements' words (opened once; it follows writes from other processes)."""
        if self._bm25 is None:
            self._bm25 = BM25Index(self.directory / "bm25")
        return self._bm25

    def formula_lexical_index(self) -> BM25Index:
        """BM25 over the statements' normalized formula terms (the lexical formula channel)."""
        if self._formula_bm25 is None:
            self._formula_bm25 = BM25Index(self.directory / FORMULA_LEXICAL, k1=FORMULA_K1, b=FORMULA_B)
        return self._formula_bm25

    def follow_other_writers(self) -> bool:
        """See what another process wrote since this one last looked (the chat beside an ingest).

        BM25 and the duplicate groups read their files afresh; embedded Chroma keeps its vector index in
        the memory of each process, so when the manifest (rewritten at every write) changed under this
        process, its Chroma cache is dropped and the store and the companion's vectors are opened again.
        A stat per search; a reload only after another process wrote. Returns whether it reloaded.
        """
        stamp = self._manifest_stamp()
        if stamp == self._manifest_seen:
            return False
        self._manifest_seen = stamp
        if self.connection.is_server:  # a server serves every writer's statements already
            return False
        from chromadb.api.client import SharedSystemClient

        SharedSystemClient.clear_system_cache()
        self.store.reconnect()
        if self.companion is not None:
            self.companion.reconnect()
        self._marf_index = None  # read again when next asked for
        return True

    def _manifest_stamp(self) -> tuple[int, int]:
        try:
            stat = (self.directory / MANIFEST).stat()
        except FileNotFoundError:
            return (0, 0)
        return (stat.st_mtime_ns, stat.st_size)

    def searchable_count(self) -> int:
        """Statements in the index, as searching sees them: BM25 keeps the store's count at no cost,
        while Chroma's count() scans the collection (72 ms at 1M statements, on every search)."""
        return len(self._searchable_lexical())

    def _searchable_lexical(self) -> BM25Index:
        """The word index, rebuilt first when it is not in step with the store (see ``sync_lexical``)."""
        if not self._lexical_checked:
            self.sync_lexical()
            self._lexical_checked = True
        return self.lexical_index()

    def _check_manifest(self) -> None:
        built_with = self.manifest().get("embedder")
        if built_with and built_with != self.embedder.identity:
            raise IndexMismatchError(
                f"the index in {self.directory} was built with the embedder {built_with!r}, but the settings "
                f"name {self.embedder.identity!r}; vectors of two models cannot be mixed. Re-embed it with "
                f"`rag-app reindex --index {self.directory}`, or set embedding.model back to {built_with!r}"
            )

    def write_manifest(self) -> None:
        """Rewrite the manifest with the store's count (``rag-app repair``)."""
        self._write_manifest()

    def _write_manifest(self, collection: str | None = None, statements: int | None = None) -> None:
        """``statements``: the count when the caller knows it; Chroma's count() scans the collection,
        and right after a write it took 5.3 s at 1M statements (the lexical index knows it for free)."""
        manifest = {
            "format": 1,
            "embedder": self.embedder.identity,
            "embedder_spec": self.embedder.model_name,
            # the embedder cannot change under an index (checked on open): no need to load the model for it
            "dimension": self.manifest().get("dimension") or self.embedder.dimension,
            "collection": collection or self.collection_name,
            "statements": self.count() if statements is None else statements,
            "updated": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        }
        others_wrote = self._manifest_stamp() != self._manifest_seen
        save_manifest(self.directory, manifest)
        if not others_wrote:  # this process's own write: nothing to reload for it
            self._manifest_seen = self._manifest_stamp()


def save_manifest(directory: Path, manifest: dict[str, object]) -> None:
    """Written whole or not at all: the manifest says which collection is live."""
    write_text_atomically(directory / MANIFEST, json.dumps(manifest, indent=2))
