"""One index as the Python API, the HTTP API and the chat read it: its stores and the search stack over
them, each opened on first use and once: an object of its own, which ``MathRAG`` holds as ``rag.indexes``."""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import TypeVar

import numpy as np

from prompts import load_prompt
from rag_app.search.embedder_factory import make_embedder, make_second_embedder
from rag_app.search.search_stack import SearchStack
from rag_app.search.statement_links import StatementLinks
from rag_app.search.statement_rewrite import StatementRewriter
from rag_app.serving.llm_client import ChatClient
from rag_app.settings import Settings
from retriever.models.query_adapter import QueryAdapter
from retriever.store.companion_index import CompanionIndex
from retriever.store.duplicate_groups import DuplicateGroups
from retriever.store.statement_index import StatementIndex, require_index
from retriever.types import SearchHit

logger = logging.getLogger(__name__)

T = TypeVar("T")


class OpenedIndex:
    """The index of ``settings.index_dir`` and what is built from it, each made once, even for two first
    callers in two threads (the API and the chat call from many): two first searches must not open two
    indexes or load two models."""

    def __init__(self, settings: Settings, llm_client: Callable[[], ChatClient]) -> None:
        self.settings = settings
        self._llm_client = llm_client  # asked only when a statement rewrite is asked for
        self._building = threading.RLock()
        self._built: dict[str, object] = {}
        # set by MathRAG.open(index_dir): searching a directory that holds no index is an error, until an
        # ingest makes one there
        self.must_exist = False

    def _once(self, name: str, build: Callable[[], T]) -> T:
        value = self._built.get(name)
        if value is None:
            with self._building:
                value = self._built.get(name)
                if value is None:
                    value = self._built[name] = build()
        return value  # type: ignore[return-value]

    def require(self) -> None:
        """:class:`IndexNotFoundError` where the index must exist and does not: a mistyped path is an error,
        never a new empty index."""
        if self.must_exist:
            require_index(self.settings.resolved_index_dir, "MathRAG.open(...).ingest(paths) builds one there")

    @property
    def index(self) -> StatementIndex:
        """The index's stores; reading it where the index must exist and does not raises and creates nothing."""
        self.require()
        return self._once("index", self._open_index)

    def _open_index(self) -> StatementIndex:
        settings = self.settings
        return StatementIndex(
            settings.resolved_index_dir,
            make_embedder(settings),
            formula_models=settings.formula.models,
            token_dim=settings.formula.token_dim,
            connection=settings.store.connection(),
            duplicates=self.duplicate_groups() if settings.duplicates.detect else None,
            companion=self.companion_index(),
            writer_wait_s=settings.ingestion.writer_wait_s,
        )

    @property
    def search_stack(self) -> SearchStack:
        """This index's searchers, composed from the settings once (see ``rag_app.search.search_stack``)."""
        return self._once("search_stack", self._compose_search_stack)

    def _compose_search_stack(self) -> SearchStack:
        # The LLM that writes the statement a query looks for (``retrieval.statement_rewrite``); its rewrites
        # are cached under the data directory.
        rewriter = StatementRewriter(
            load_prompt("statement_rewrite"),
            self._llm_client,
            self.settings.data_dir / "cache" / "statement-rewrites.jsonl",
        )
        index = self.index  # raises for a directory that must hold an index and does not
        return SearchStack(
            self.settings, index, self.companion_index(), self.duplicate_groups(), rewriter=rewriter.rewrite
        )

    def companion_index(self) -> CompanionIndex | None:
        """The companion embedding model's vectors (settings ``[second_embedding]``), or None when it is off."""
        second = self.settings.second_embedding
        if not second.enabled or second.model is None:  # off (make_second_embedder says None the same way)
            return None
        return self._once("companion", self._open_companion)

    def _open_companion(self) -> CompanionIndex:
        settings = self.settings
        embedder = make_second_embedder(settings)
        assert embedder is not None  # companion_index checked the settings
        return CompanionIndex(
            settings.resolved_index_dir,
            embedder,
            settings.store.connection(),
            query_adapter=QueryAdapter.configured(settings.second_embedding.query_adapter, embedder.identity),
            at_ingest=settings.second_embedding.at_ingest,
        )

    def duplicate_groups(self) -> DuplicateGroups:
        """The index's duplicate groups (``[duplicates]`` settings), opened once: every search reads them."""
        self.require()  # never a directory made for a mistyped path
        return self._once("duplicates", self._open_duplicates)

    def _open_duplicates(self) -> DuplicateGroups:
        duplicates, directory = self.settings.duplicates, self.settings.resolved_index_dir
        directory.mkdir(parents=True, exist_ok=True)
        return DuplicateGroups(directory, duplicates.threshold, duplicates.max_word_difference)

    @property
    def statement_links(self) -> StatementLinks:
        return StatementLinks(self.index)  # a mistyped --index raises there: an error, never an empty index

    def counted(self, hits: Sequence[SearchHit]) -> list[SearchHit]:
        """``hits`` with their uses and used-by counts (left unset where the graph cannot be read:
        `rag-app status` names a damaged one)."""
        try:
            return self.statement_links.counted(hits)
        except sqlite3.DatabaseError as error:  # said once a search, not swallowed
            logger.warning("the statement graph could not be read for the uses counts (%s): `rag-app status`", error)
            return list(hits)

    def stored_vectors(self, ids: Sequence[str]) -> dict[str, np.ndarray]:
        """The stored vectors of ``ids``, not while a reload replaces the Chroma client (an answer's sources
        whose vectors its search did not bring)."""
        index = self.index
        with index.reads.reading():
            return index.store.vectors(ids)

    def one_writer(self) -> AbstractContextManager[None]:
        """The index's writer lock for a whole ingest: a second ingest into this index waits for this one."""

        def say_waiting() -> None:
            logger.warning(
                "another ingest is writing the index %s; waiting for it to finish (at most %g s) ...",
                self.settings.resolved_index_dir,
                self.settings.ingestion.writer_wait_s,
            )

        self.must_exist = False  # an ingest makes the index (MathRAG.open: "an ingest makes it")
        return self.index.writer.hold(on_wait=say_waiting)
