"""The statement graph as :class:`rag_app.pipeline.MathRAG` offers it: a statement with what it uses
and what uses it, and the definitions in its scope. Its own class keeps the facade small."""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Sequence

from ingestion.unreadable_text import check_readable
from rag_app.search.statement_links import StatementLink, StatementLinks, StatementView
from rag_app.settings import Settings
from retriever.store.statement_index import StatementIndex
from retriever.types import SearchHit

logger = logging.getLogger(__name__)


class GraphQueries:
    """Mixed into ``MathRAG``, which gives ``settings`` and ``index``."""

    settings: Settings
    index: StatementIndex

    @property
    def statement_links(self) -> StatementLinks:
        return StatementLinks(self.index)  # a mistyped --index raises there: an error, never an empty index

    def statement(self, id_or_label: str, depth: int = 2) -> StatementView:
        """The statement an id or label names (``PAPER#LABEL``, a Stacks project label such as
        ``algebra-lemma-NAK``, or a label one paper defines), with what it ``uses`` (each resolved to a
        statement or section, or not), what it is ``used_by``, and the definitions it depends on up to
        ``depth`` (nearest first)."""
        id_or_label = check_readable(id_or_label, "the id or label")
        links = self.statement_links
        with self.index.reads.reading():  # not while a reload replaces the Chroma client
            return links.view(id_or_label, depth)

    def definitions_for(self, id_or_label: str, depth: int = 2) -> list[StatementLink]:
        """The definitions a statement depends on: those it references, then through the statements it
        references, up to ``depth``; nearest first."""
        return self.statement_links.definitions_for(id_or_label, depth)

    def _counted(self, hits: Sequence[SearchHit]) -> list[SearchHit]:
        """``hits`` with their uses and used-by counts (left unset where the graph cannot be read:
        `rag-app status` names a damaged one)."""
        try:
            return self.statement_links.counted(hits)
        except sqlite3.DatabaseError as error:  # said once a search, not swallowed (issue 86)
            logger.warning("the statement graph could not be read for the uses counts (%s): `rag-app status`", error)
            return list(hits)
