"""The errors a client of the HTTP API or the MCP server is told about in words, and the status each gets;
anything else is a 500 (the server logs its traceback)."""

from __future__ import annotations

from rag_app.search.statement_links import AmbiguousLabelError, StatementNotFoundError
from retriever.store.bm25_segment import BM25SegmentError
from retriever.store.hnsw_files import VectorIndexDamagedError
from retriever.store.index_lock import IndexWriterBusyError
from retriever.store.sqlite_file import StoreFileBusyError, StoreFileDamagedError
from retriever.store.statement_index import IndexDamagedError, IndexNotFoundError


class BadRequestError(ValueError):
    """A request refused before any work (400), with the reason."""


STATUS_OF: tuple[tuple[tuple[type[Exception], ...], int], ...] = (
    ((BadRequestError, AmbiguousLabelError), 400),
    ((StatementNotFoundError,), 404),
    (
        (
            IndexNotFoundError,
            IndexDamagedError,
            BM25SegmentError,
            VectorIndexDamagedError,
            StoreFileDamagedError,
            StoreFileBusyError,
            IndexWriterBusyError,
        ),
        503,
    ),
)
