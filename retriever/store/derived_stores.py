"""Every store derived from Chroma, behind one small protocol.

Chroma holds the records and their vectors: the source of truth. Each store below is derived from it,
and ``StatementIndex`` keeps them in step by iterating one list (``StatementIndex.derived``): it writes
to them with each write, catches them up at the end of each ingest, and ``IndexHealth`` compares each
with Chroma by id and repairs the ones behind. A new derived store (the statement graph, say) is one
more class here and one more entry in that list.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import numpy as np
from tqdm import tqdm

from ingestion.records import StatementRecord
from retriever.models.formula_model_error import FormulaModelError
from retriever.storage.sqlite_file import StoreFileBusyError, StoreFileDamagedError

if TYPE_CHECKING:
    from retriever.models.marf_encoder import MarfEncoder
    from retriever.storage.bm25_index import BM25Index
    from retriever.storage.statement_graph import StatementGraph
    from retriever.store.chroma_store import ChromaStatementStore
    from retriever.store.companion_index import CompanionIndex
    from retriever.store.duplicate_groups import DuplicateGroups
    from retriever.store.lexical_indexes import LexicalIndexes
    from retriever.store.marf_index import MarfIndex

logger = logging.getLogger(__name__)
# Statements read from Chroma per batch when a store catches up.
CATCH_UP_BATCH = 20_000


class StatementFile(Protocol):
    """A derived store's SQLite file made from the records alone (the statement graph, the ranking profiles)."""

    path: Path

    def add(self, records: Sequence[StatementRecord]) -> None: ...

    def remove(self, ids: Iterable[str]) -> None: ...

    def ids(self) -> set[str]: ...

    def count(self) -> int: ...

    def recreate(self) -> None: ...


class OwningIndex(Protocol):
    """What the derived stores read of the statement index that owns them (``StatementIndex``)."""

    store: ChromaStatementStore
    lexical: LexicalIndexes
    formula_models: str | None

    def searchable_count(self) -> int: ...

    def sync_lexical(self, show_progress: bool = False, quick: bool = True) -> None: ...

    def marf_index(self) -> MarfIndex: ...

    def marf_encoder(self) -> MarfEncoder: ...


class DerivedStore(Protocol):
    """A store derived from the statements in Chroma."""

    name: str  # as `rag-app status` names it

    def kept(self) -> bool:
        """Whether this index keeps the store (configured, and built where building is a separate step)."""
        ...

    def follows(self, lexical_in_step: bool) -> bool:
        """Whether the write about to happen updates it in place (else a catch-up or repair does later).
        Asked before Chroma is written."""
        ...

    def add(self, records: Sequence[StatementRecord], vectors: np.ndarray) -> None: ...

    def remove(self, ids: Sequence[str], removed: Sequence[StatementRecord]) -> None:
        """Forget ``ids``; ``removed`` are their records as stored (read only where a store needs them)."""
        ...

    def ids(self) -> set[str]:
        """The statements it holds (raises when its files cannot be read)."""
        ...

    def count(self) -> int:
        """How many statements it holds, from its own count (no scan of its ids; raises as ``ids``)."""
        ...

    @property
    def catch_up(self) -> Callable[..., None]:
        """``catch_up(quick=..., show_progress=...)``: bring it in step with Chroma; ``quick`` only when the counts
        differ (the end of an ingest). Stores caught up together share the same callable."""
        ...


class _LexicalStore:
    """One of the two lexical indexes (``retriever.store.lexical_indexes``): written when they are in step
    with Chroma, and caught up together (one rebuild serves both)."""

    name: str

    def __init__(self, index: OwningIndex) -> None:
        self.index = index

    def kept(self) -> bool:
        return True

    def follows(self, lexical_in_step: bool) -> bool:
        return lexical_in_step

    def ids(self) -> set[str]:
        bm25 = self._bm25()
        bm25.verify()
        return set(bm25.ids)

    def count(self) -> int:
        return len(self._bm25())

    @property
    def catch_up(self) -> Callable[..., None]:
        return self.index.sync_lexical

    def _bm25(self) -> BM25Index:
        raise NotImplementedError


class WordIndexStore(_LexicalStore):
    """BM25 over the statements' words."""

    name = "bm25"

    def add(self, records: Sequence[StatementRecord], vectors: np.ndarray) -> None:
        self.index.lexical.add_words(records)

    def remove(self, ids: Sequence[str], removed: Sequence[StatementRecord]) -> None:
        self.index.lexical.remove_words(ids)

    def _bm25(self) -> BM25Index:
        return self.index.lexical.words()


class FormulaIndexStore(_LexicalStore):
    """BM25 over the statements' normalized formula terms."""

    name = "formula index"

    def add(self, records: Sequence[StatementRecord], vectors: np.ndarray) -> None:
        self.index.lexical.add_formulas(records)

    def remove(self, ids: Sequence[str], removed: Sequence[StatementRecord]) -> None:
        self.index.lexical.remove_formulas(ids, removed)

    def _bm25(self) -> BM25Index:
        return self.index.lexical.formulas()


class DuplicateGroupsStore:
    """The same statement in several papers or posts, found from the stored vectors."""

    name = "duplicate groups"

    def __init__(self, index: OwningIndex, groups: DuplicateGroups | None) -> None:
        self.index = index
        self.groups = groups

    def kept(self) -> bool:
        return self.groups is not None

    def follows(self, lexical_in_step: bool) -> bool:
        return self.groups is not None

    def add(self, records: Sequence[StatementRecord], vectors: np.ndarray) -> None:
        if self.groups is not None:
            self.groups.add(records, vectors, self.index.store)

    def remove(self, ids: Sequence[str], removed: Sequence[StatementRecord]) -> None:
        if self.groups is not None:
            self.groups.remove(ids)

    def ids(self) -> set[str]:
        return self.groups.ids() if self.groups is not None else set()

    def count(self) -> int:
        return self.groups.count() if self.groups is not None else 0

    @property
    def catch_up(self) -> Callable[..., None]:
        return self._catch_up

    def _catch_up(self, quick: bool, show_progress: bool) -> None:
        """Statements the groups lack are joined from their stored vectors (nothing re-embedded), those
        Chroma no longer has are forgotten. ``quick``: only when the counts differ; the store's count is
        BM25's, in step with it at no cost, where Chroma's count() scans the collection (5 s at 1M)."""
        groups, store = self.groups, self.index.store
        if groups is None:
            return
        try:
            if quick and groups.count() == self.index.searchable_count():
                return
            known = groups.ids()
        except StoreFileDamagedError:  # everything in it is derived: it starts again (busy: raised, kept)
            logger.warning("the duplicate groups %s are damaged: rebuilt from the stored vectors", groups.path)
            groups.recreate()
            known = set()

        def add(records: list[StatementRecord]) -> None:
            vectors = store.vectors([record.id for record in records])
            records = [record for record in records if record.id in vectors]  # deleted meanwhile
            if records:
                groups.add(records, np.stack([vectors[record.id] for record in records]), store)

        _catch_up_from_chroma(store, known, groups.remove, add, self.name, show_progress)


class _StatementFileStore:
    """A derived store kept in one SQLite file of its own, made from each statement's record alone (it needs
    no vectors): kept for every index, written with every write, and never the reason an ingest fails (left
    behind, `rag-app status` says so and `repair` rebuilds it). ``file``: its add, remove, ids, count, recreate
    and path; ``what``: how the warnings name it."""

    name: str
    what: str

    def __init__(self, index: OwningIndex, file: StatementFile) -> None:
        self.index = index
        self.file = file

    def kept(self) -> bool:
        return True

    def follows(self, lexical_in_step: bool) -> bool:
        return True

    def add(self, records: Sequence[StatementRecord], vectors: np.ndarray) -> None:
        try:
            self.file.add(records)
        except sqlite3.DatabaseError as error:
            logger.warning("%s %s not updated (%s): run `rag-app repair`", self.what, self.file.path, error)

    def remove(self, ids: Sequence[str], removed: Sequence[StatementRecord]) -> None:
        try:
            self.file.remove(ids)
        except sqlite3.DatabaseError as error:
            logger.warning("%s %s not updated (%s): run `rag-app repair`", self.what, self.file.path, error)

    def ids(self) -> set[str]:
        return self.file.ids()

    def count(self) -> int:
        return self.file.count()

    @property
    def catch_up(self) -> Callable[..., None]:
        return self._catch_up

    def _catch_up(self, quick: bool, show_progress: bool) -> None:
        """The statements it lacks are read from Chroma (all it needs is in their records), those Chroma no
        longer has are forgotten; ``quick``: only when the counts differ."""
        try:
            known = self.file.ids()
        except StoreFileBusyError:
            raise  # another process holds it: the file is fine, and deleting it under that process would not be
        except sqlite3.DatabaseError:  # a damaged file: everything in it is derived, so it starts again
            logger.warning("%s %s damaged: made again from the statements", self.what, self.file.path)
            self.file.recreate()
            known = set()
        if quick and len(known) == self.index.searchable_count():
            return
        _catch_up_from_chroma(self.index.store, known, self.file.remove, self.file.add, self.name, show_progress)


class StatementGraphStore(_StatementFileStore):
    """The labels each statement references and what they resolve to (``retriever.storage.statement_graph``)."""

    name = "statement graph"
    what = "the statement graph was"

    @property
    def graph(self) -> StatementGraph:
        return self.file  # type: ignore[return-value]


class CitingTextStore:
    """Each statement's citing text (``retriever.storage.citing_text``), in the graph's file: the graph writes it
    with every write of the references, so it holds a statement when its text is what its citers' sentences
    give, and a repair writes the whole table again from the references."""

    name = "citing text"

    def __init__(self, index: OwningIndex, graph: StatementGraph) -> None:
        self.index = index
        self.graph = graph

    def kept(self) -> bool:
        return True

    def follows(self, lexical_in_step: bool) -> bool:
        return True

    def add(self, records: Sequence[StatementRecord], vectors: np.ndarray) -> None:
        """Written by the statement graph in the same transaction as the references."""

    def remove(self, ids: Sequence[str], removed: Sequence[StatementRecord]) -> None:
        """Removed by the statement graph with the references."""

    def ids(self) -> set[str]:
        return self.graph.ids() - self.graph.citing_text.out_of_step()

    def count(self) -> int:
        return self.graph.count()

    @property
    def catch_up(self) -> Callable[..., None]:
        return self._catch_up

    def _catch_up(self, quick: bool, show_progress: bool) -> None:
        if quick:
            return  # the graph's writes keep it; only a repair (or a graph caught up) writes it all again
        try:
            self.graph.citing_text.rebuild()
        except sqlite3.DatabaseError as error:
            logger.warning("the citing text in %s not rebuilt (%s): run `rag-app repair`", self.graph.path, error)


class RankingProfilesStore(_StatementFileStore):
    """What the learned ranker reads off each statement alone (``retriever.store.ranking_profiles``), made
    with every write so that no search makes them."""

    name = "ranking profiles"
    what = "the ranking profiles were"


def _catch_up_from_chroma(
    store: ChromaStatementStore,
    known: set[str],
    remove: Callable[[list[str]], None],
    add: Callable[[list[StatementRecord]], None],
    name: str,
    show_progress: bool,
) -> None:
    """A store that holds ``known`` brought in step with Chroma: the ids Chroma no longer has removed,
    the records it has that the store lacks added, read in batches."""
    stored = store.all_ids()
    extra, missing = sorted(known - stored), sorted(stored - known)
    if extra:
        remove(extra)
    for start in tqdm(range(0, len(missing), CATCH_UP_BATCH), desc=name, unit="batch",
                      disable=not show_progress or not missing):  # fmt: skip
        records = store.get(missing[start : start + CATCH_UP_BATCH])
        if records:
            add(records)


class CompanionVectorsStore:
    """The second embedding model's vectors of every statement."""

    name = "second model's vectors"

    def __init__(self, index: OwningIndex, companion: CompanionIndex | None) -> None:
        self.index = index
        self.companion = companion

    def kept(self) -> bool:
        return self.companion is not None and self.companion.built_by_configured_model()

    @property
    def in_background(self) -> bool:
        """Its vectors follow in the background (``build-dense2 --background``), not at each write."""
        return self.companion is not None and not self.companion.at_ingest

    def follows(self, lexical_in_step: bool) -> bool:
        # They follow the store from its first statement, or from `build-dense2`: started on an index
        # that has statements already, they would cover only the new ones.
        return self.companion is not None and (self.kept() or self.index.store.count() == 0)

    def add(self, records: Sequence[StatementRecord], vectors: np.ndarray) -> None:
        if self.companion is not None:
            self.companion.add(records)

    def remove(self, ids: Sequence[str], removed: Sequence[StatementRecord]) -> None:
        if self.companion is not None:
            self.companion.remove(ids)

    def ids(self) -> set[str]:
        return self.companion.ids() if self.companion is not None else set()

    def count(self) -> int:
        return self.companion.statements() if self.companion is not None else 0

    @property
    def catch_up(self) -> Callable[..., None]:
        return self._catch_up

    def _catch_up(self, quick: bool, show_progress: bool) -> None:
        """The statements they lack are embedded by the second model (a kill between the Chroma write
        and theirs leaves them behind); ``quick``: only when the counts differ."""
        second = self.companion
        if second is None or not second.built_by_configured_model():
            return
        if quick and not second.at_ingest:
            return  # an ingest's catch-up: `build-dense2 --background` embeds them
        if quick and second.statements() == self.index.searchable_count():
            return
        second.update(self.index.store.iter_records(), show_progress=show_progress)


class MarfVectorsStore:
    """The formula-fusion (MaRF) vectors, once `build-fusion` has built them."""

    name = "formula-fusion vectors"

    def __init__(self, index: OwningIndex) -> None:
        self.index = index

    def kept(self) -> bool:
        return self.index.formula_models is not None and self.index.marf_index().exists()

    def follows(self, lexical_in_step: bool) -> bool:
        return lexical_in_step and self.kept()

    def add(self, records: Sequence[StatementRecord], vectors: np.ndarray) -> None:
        try:  # an ingest never dies on the optional fusion channel
            encoder = self.index.marf_encoder()
            if self.index.marf_index().manifest().get("identity") != encoder.identity:
                logger.warning("formula-fusion vectors not updated: built by other models (run build-fusion --rebuild)")
                return
            self.index.marf_index().add(records, encoder)
        except FormulaModelError as error:
            logger.warning("formula-fusion vectors not updated: %s", error)

    def remove(self, ids: Sequence[str], removed: Sequence[StatementRecord]) -> None:
        self.index.marf_index().remove(ids)

    def ids(self) -> set[str]:
        return set(self.index.marf_index().ids())

    def count(self) -> int:
        return len(self.index.marf_index().ids())

    @property
    def catch_up(self) -> Callable[..., None]:
        return self._catch_up

    def _catch_up(self, quick: bool, show_progress: bool) -> None:
        """New statements embedded, deleted ones forgotten (only where the counts differ, if ``quick``)."""
        if not self.kept() or (quick and len(self.ids()) == self.index.searchable_count()):
            return
        try:  # an ingest never dies on the optional fusion channel
            self.index.marf_index().update(
                self.index.store.iter_records(), self.index.marf_encoder(), show_progress=show_progress
            )
        except FormulaModelError as error:
            logger.warning("formula-fusion vectors not updated: %s", error)

