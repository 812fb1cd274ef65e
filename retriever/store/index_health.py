"""Every store derived from the statements, checked against Chroma (the source of truth) and repaired.

An index is Chroma (records and vectors) plus the stores derived from it (``StatementIndex.derived``:
BM25, the lexical formula index, the duplicate groups, the companion model's vectors, the MaRF vectors)
and the manifest's count. Writes
keep them in step, and every ingest ends by catching up what a kill left behind; ``rag-app status``
compares each with Chroma by id and ``rag-app repair`` rebuilds what is behind without re-embedding the
statements (the companion model embeds only the statements it lacks).
"""

from __future__ import annotations

import contextlib
import logging
import shutil
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from retriever.storage.bm25_segment import BM25SegmentError
from retriever.storage.hnsw_files import VECTOR_REPAIR, check_segment, segment_directories
from retriever.storage.sqlite_file import StoreFileBusyError, StoreFileDamagedError
from retriever.store.reindex import reindex
from retriever.store.statement_index import StatementIndex

logger = logging.getLogger(__name__)
T = TypeVar("T")
VECTOR_INDEX = "vector index"
MANIFEST_STATE = "manifest"


@dataclass(frozen=True, slots=True)
class StoreState:
    """One store against the store of record: how many statements it lacks and has too many."""

    name: str
    statements: int | None  # None: unreadable
    missing: int = 0
    extra: int = 0
    problem: str = ""  # why it could not be read
    # Built in the background by design (the second model with `second_embedding.at_ingest` off): the
    # statements it lacks are work in progress, not a store out of step.
    in_background: bool = False
    busy: bool = False  # another process held its file past the timeout: not damaged, never rebuilt

    @property
    def in_step(self) -> bool:
        return not self.problem and self.extra == 0 and (self.missing == 0 or self.in_background)

    def describe(self) -> str:
        if self.problem:
            return f"{self.name}: {self.problem}"
        if self.in_background and self.missing and self.in_step:
            return (f"{self.name}: built in the background ({self.statements:,} statements, {self.missing:,} to "
                    "embed: `rag-app build-dense2 --background`)")  # fmt: skip
        if self.in_step:
            return f"{self.name}: in step ({self.statements:,} statements)"
        return f"{self.name}: behind ({self.statements:,} statements; {self.missing:,} missing, {self.extra:,} extra)"

    def to_dict(self) -> dict[str, object]:
        return {"store": self.name, "statements": self.statements, "missing": self.missing, "extra": self.extra,
                "problem": self.problem, "in_step": self.in_step, "in_background": self.in_background,
                "busy": self.busy}  # fmt: skip


class IndexHealth:
    """Checks and repairs the derived stores of one index."""

    def __init__(self, index: StatementIndex) -> None:
        self.index = index

    def check(self) -> list[StoreState]:
        """Chroma first (its count), its vector index files, then every derived store compared with it id by id."""
        damaged_vectors = self._damaged_vector_files()
        try:
            truth = self.index.store.all_ids()
        except Exception as error:  # whatever Chroma raises on a damaged file: named here, not a traceback
            if damaged_vectors:
                # Chroma fails every read over a damaged vector file, naming none: the file is named here.
                problem = f"unreadable: {damaged_vectors[0][1]}; {VECTOR_REPAIR}"
                return [StoreState("chroma", None, problem=problem), self._vector_state(None, damaged_vectors)]
            where = self.index.directory / "chroma" / "chroma.sqlite3"
            problem = f"unreadable ({where}: {_line(error)}); restore it or re-ingest"
            return [StoreState("chroma", None, problem=problem)]
        states = [StoreState("chroma", len(truth)), self._vector_state(len(truth), damaged_vectors)]
        index = self.index
        states += [
            self._compare(store.name, truth, store.ids, getattr(store, "in_background", False))
            for store in index.derived
            if store.kept()
        ]
        return states + self._manifest_state(len(truth))

    def _manifest_state(self, truth: int) -> list[StoreState]:
        """The manifest's count, where it differs from Chroma's."""
        manifest_count = self.index.manifest().get("statements")
        if isinstance(manifest_count, int) and manifest_count != truth:
            return [StoreState(MANIFEST_STATE, manifest_count, max(0, truth - manifest_count),
                               max(0, manifest_count - truth))]  # fmt: skip
        return []

    def counts(self) -> list[StoreState]:
        """Chroma's count and every derived store's own count, compared; no store's ids are read and no vector
        file is checked (the HTTP API's ``/v1/status``, asked often: :meth:`check` reads every id of every
        store). A store whose count matches with other ids passes here; :meth:`check` finds it."""
        try:
            truth = self.index.store.count()
        except Exception as error:  # whatever Chroma raises on a damaged file: named here, not a traceback
            where = self.index.directory / "chroma" / "chroma.sqlite3"
            return [StoreState("chroma", None, problem=f"unreadable ({where}: {_line(error)}); run `rag-app status`")]
        states = [StoreState("chroma", truth)]
        states += [
            self._compare_count(store.name, truth, store.count, getattr(store, "in_background", False))
            for store in self.index.derived
            if store.kept()
        ]
        return states + self._manifest_state(truth)

    def repair(self, show_progress: bool = False) -> list[StoreState]:
        """Rebuild each store that is behind or unreadable from Chroma; returns the states found before.

        Damaged vector index files are moved aside (Chroma keeps no other copy of the vectors, so they
        cannot be rebuilt from stored embeddings) and every statement is embedded again from its stored
        text, into a new collection (``retriever.store.reindex``); the moved files are deleted once it is
        done. The caller opens the index again afterwards (its collection changed)."""
        before = self.check()
        if any(state.name == VECTOR_INDEX and state.problem for state in before):
            self._reembed(show_progress)
            return before
        if before[0].problem:
            return before  # nothing to rebuild from
        behind = {state.name for state in before if not state.in_step and not state.busy}
        steps = dict.fromkeys(store.catch_up for store in self.index.derived if store.name in behind)
        for catch_up in steps:  # the lexical pair is rebuilt once
            catch_up(quick=False, show_progress=show_progress)
        if behind:
            self.index.write_manifest()
        return before

    def _damaged_vector_files(self) -> list[tuple[Path, str]]:
        """Each HNSW segment directory with a damaged file, and the sentence naming it."""
        if self.index.connection.is_server:
            return []  # a server's files are its own
        states = (check_segment(directory) for directory in segment_directories(self.index.directory / "chroma"))
        return [(state.directory, state.problem) for state in states if state.problem]

    @staticmethod
    def _vector_state(statements: int | None, damaged: list[tuple[Path, str]]) -> StoreState:
        if damaged:
            return StoreState(
                VECTOR_INDEX, None, problem=f"{damaged[0][1]}; `rag-app repair` embeds the statements again"
            )
        return StoreState(VECTOR_INDEX, statements)

    def _reembed(self, show_progress: bool) -> None:
        from chromadb.api.client import SharedSystemClient

        aside = self.index.directory / "damaged" / time.strftime("%Y%m%dT%H%M%S")
        aside.mkdir(parents=True, exist_ok=True)
        moved = []
        for directory, problem in self._damaged_vector_files():
            logger.warning("%s: moving %s aside to %s", problem, directory.name, aside)
            moved.append(shutil.move(directory, aside / directory.name))
        SharedSystemClient.clear_system_cache()  # this process's Chroma still holds the damaged reader
        self.index.store.reconnect()
        reindex(self.index.directory, self.index.embedder, force=True, show_progress=show_progress,
                connection=self.index.connection)  # fmt: skip
        shutil.rmtree(aside)
        with contextlib.suppress(OSError):
            aside.parent.rmdir()  # "damaged/", when no earlier repair left files there

    @staticmethod
    def _compare(name: str, truth: set[str], read: Callable[[], set[str]], in_background: bool = False) -> StoreState:
        def state(ids: set[str]) -> StoreState:
            return StoreState(name, len(ids), len(truth - ids), len(ids - truth), in_background=in_background)

        return _read_state(name, read, state)

    @staticmethod
    def _compare_count(name: str, truth: int, read: Callable[[], int], in_background: bool = False) -> StoreState:
        def state(count: int) -> StoreState:
            return StoreState(name, count, max(0, truth - count), max(0, count - truth), in_background=in_background)

        return _read_state(name, read, state)


def _read_state(name: str, read: Callable[[], T], state: Callable[[T], StoreState]) -> StoreState:
    """``state(read())``, or the state of a store that could not be read, saying why."""
    try:
        value = read()
    except BM25SegmentError as error:  # its message names the file and what to run
        return StoreState(name, None, problem=str(error))
    except StoreFileBusyError as error:  # a writer at work, not damage: `repair` leaves it alone
        return StoreState(name, None, problem=str(error), busy=True)
    except StoreFileDamagedError as error:  # its message names the file and what to run
        return StoreState(name, None, problem=str(error))
    except (OSError, ValueError, KeyError, EOFError, sqlite3.Error) as error:
        return StoreState(name, None, problem=f"damaged ({_line(error)}); `rag-app repair` rebuilds it from Chroma")
    return state(value)


def _line(error: BaseException) -> str:
    text = " ".join(str(error).split())
    return f"{type(error).__name__}: {text[:200]}" if text else type(error).__name__
