"""The one map of known failures: each kind's CLI exit code and HTTP status (the MCP tools report all of them
to the model in words). Known failures are one sentence naming what to do; anything else is a crash.

The CLI (``rag_app.cli.common``) and the HTTP API (``rag_app.api.errors``) read this table, so a new error
kind is added once and no front end answers it as an internal error (an index built with another embedder,
or ``mode=fusion`` before ``build-fusion``, is the same known failure in the API as in the CLI).
"""

from __future__ import annotations

from typing import NamedTuple

from ingestion.unreadable_text import UnreadableTextError
from rag_app.answering.source_chooser import SourceChooserError
from rag_app.search.statement_links import AmbiguousLabelError, StatementNotFoundError
from rag_app.serving.packaged_models import PackagedModelError
from rag_app.settings import SettingsOverrideError
from retriever.models.cross_encoder_reranker import RerankerModelError
from retriever.models.embedding_registry import EmbedderSpecError
from retriever.models.formula_model_error import FormulaModelError
from retriever.models.learned_ranker import LearnedRankerError
from retriever.models.query_adapter import QueryAdapterError
from retriever.storage.bm25_segment import BM25SegmentError
from retriever.storage.hnsw_files import VectorIndexDamagedError
from retriever.storage.index_lock import IndexWriterBusyError
from retriever.storage.sqlite_file import StoreFileBusyError, StoreFileDamagedError
from retriever.store.marf_index import MarfIndexError
from retriever.store.statement_index import IndexDamagedError, IndexMismatchError, IndexNotFoundError

# Exit codes (README, "Exit codes"): scripts tell these apart.
EXIT_REFUSED = 1  # some input was refused (each with its file, line or record and reason); the rest is in
EXIT_USAGE = 2  # a bad option, a missing file, an index that is not there, a model that does not fit
EXIT_DAMAGED = 3  # a file of the index cannot be read: named, with what to run; nothing was written
EXIT_NO_LLM = 4  # `ask`: the answer needed the language model and none could be had (sources still printed)
EXIT_BUSY = 5  # another process held a file of the index past the wait (a writer at work): try again
EXIT_WRITER_BUSY = 6  # another ingest was writing the index for longer than ingestion.writer_wait_s: run again
EXIT_PAST_DEADLINE = 7  # `search`, `ask`: past api.search_timeout_s or api.ask_timeout_s (as HTTP's 504)


class KnownError(NamedTuple):
    kinds: tuple[type[Exception], ...]
    exit_code: int
    http_status: int


KNOWN_ERRORS: tuple[KnownError, ...] = (
    KnownError((UnreadableTextError,), EXIT_USAGE, 400),  # a lone surrogate or NUL in a query
    KnownError((AmbiguousLabelError,), EXIT_USAGE, 400),
    KnownError((StatementNotFoundError,), EXIT_USAGE, 404),
    KnownError((MarfIndexError,), EXIT_USAGE, 409),  # the index cannot serve this mode yet: `build-fusion`
    # what the server was started with does not fit: the operator's to mend, not the client's
    KnownError(
        (
            IndexNotFoundError,
            IndexMismatchError,
            PackagedModelError,
            EmbedderSpecError,
            FormulaModelError,
            QueryAdapterError,
            LearnedRankerError,
            SourceChooserError,  # `answers.quote.chooser` names weights that cannot be read
            RerankerModelError,  # the configured cross-encoder is not there: `rag-app train rerank`
            SettingsOverrideError,
        ),
        EXIT_USAGE,
        503,
    ),
    KnownError(
        (IndexDamagedError, BM25SegmentError, VectorIndexDamagedError, StoreFileDamagedError), EXIT_DAMAGED, 503
    ),
    KnownError((StoreFileBusyError,), EXIT_BUSY, 503),
    KnownError((IndexWriterBusyError,), EXIT_WRITER_BUSY, 503),
)
