"""Small typed values passed between searchers."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, NamedTuple, Protocol

import numpy as np

from ingestion.records import StatementRecord

if TYPE_CHECKING:
    from retriever.search_filter import SearchFilter
    from retriever.search_mode import SearchMode


class QueryEmbedder(Protocol):
    """What embeds a query (:class:`retriever.models.embedder.Embedder`, one layer up): its identity keys
    the vector a :class:`Query` keeps."""

    @property
    def identity(self) -> str: ...

    def embed_query(self, text: str) -> np.ndarray: ...


class Query(str):
    """The text of one search, carrying its embedding by each model once a stage has computed it.

    Every stage of a search (each channel, each deeper pass of a filtered or collapsed search, the
    answer's relevance check) reads the same vector: a question is embedded once per search, with no
    cache kept between searches. It is the query's text everywhere a ``str`` is expected; a stage that
    changes the text (typed notation read as LaTeX, a rewrite) searches a new ``Query``.
    """

    _vectors: dict[str, np.ndarray]
    notation_read: bool  # its typed notation was read as LaTeX already (``ask`` reads it to show it): not again

    def __new__(cls, text: str, notation_read: bool = False) -> Query:
        query = super().__new__(cls, text)
        query._vectors = {}
        query.notation_read = notation_read
        return query

    @classmethod
    def of(cls, text: str) -> Query:
        """``text`` itself when it is a ``Query`` already (its vectors kept), else a new one."""
        return text if isinstance(text, Query) else cls(text)

    def vector(self, embedder: QueryEmbedder) -> np.ndarray:
        """The query's embedding by ``embedder``, computed on first use."""
        vector = self._vectors.get(embedder.identity)
        if vector is None:
            vector = self._vectors[embedder.identity] = embedder.embed_query(str(self))
        return vector

    def embedded_by(self, embedder: QueryEmbedder) -> bool:
        """Whether a stage has embedded this query with ``embedder`` (tests and benchmarks ask)."""
        return embedder.identity in self._vectors


@dataclass(frozen=True, slots=True)
class VectorUpdate:
    """What catching up a set of vectors beside the store did (formula fusion, the second model)."""

    added: int
    removed: int
    statements: int
    seconds: float

    def to_dict(self) -> dict[str, int | float]:
        """The JSON shape of `build-fusion --json`, `build-dense2 --json` and the eval's provenance."""
        return {"added": self.added, "removed": self.removed, "statements": self.statements,
                "seconds": round(self.seconds, 1)}  # fmt: skip

    def describe(self) -> str:
        return f"{self.added} added, {self.removed} removed, {self.statements} in all ({self.seconds:.0f} s)"


class ScoredId(NamedTuple):
    """A document id with the score one searcher gave it (higher is better)."""

    id: str
    score: float


@dataclass(frozen=True, slots=True)
class SearchHit:
    """A retrieved statement with its fused score and what each channel said of it."""

    record: StatementRecord
    score: float
    rank: int
    channel_ranks: dict[str, int] = field(default_factory=dict)
    # Other places the same statement appears (see retriever.store.duplicate_groups), when results are collapsed.
    duplicates: tuple[DuplicatePlace, ...] = ()
    # Each channel's own score of the statement (cosine, BM25, ...): the learned ranker's features.
    channel_scores: dict[str, float] = field(default_factory=dict)
    # How many statements it uses and how many use it (the statement graph); None where not counted.
    uses_count: int | None = None
    used_by_count: int | None = None

    def to_dict(self) -> dict[str, object]:
        """The JSON shape of ``search --json`` (a contract: fields are only ever added)."""
        return {
            "id": self.record.id,
            "score": self.score,
            "rank": self.rank,
            **record_to_dict(self.record),
            "channel_ranks": dict(self.channel_ranks),
            "duplicates": [place.to_dict() for place in self.duplicates],
            "uses_count": self.uses_count,
            "used_by_count": self.used_by_count,
        }


@dataclass(frozen=True, slots=True)
class DuplicatePlace:
    """Another place a statement appears: one entry of a result's ``duplicates``."""

    id: str
    paper_id: str
    title: str
    url: str

    def to_dict(self) -> dict[str, str]:
        return {"id": self.id, "paper_id": self.paper_id, "title": self.title, "url": self.url}


def record_to_dict(record: StatementRecord) -> dict[str, object]:
    """A statement's fields as ``search --json`` and ``ingest --parse-only --json`` print them: the
    record's own serialization plus what is derived from it (its display name, docno, and the title a reader
    knows its paper by: ``source_title``, as MCP's hits say it too)."""
    derived = {"display_name": record.display_name, "docno": record.docno, "source_title": record.source_title}
    return record.to_dict() | derived


@dataclass(frozen=True, slots=True)
class Ranking:
    """A ranking of statement ids, before any record is read: what one ranker hands the next."""

    ids: list[ScoredId]  # best first
    channel_ranks: dict[str, dict[str, int]]  # statement id -> channel -> the statement's rank there
    channel_scores: dict[str, dict[str, float]] = field(default_factory=dict)  # id -> channel -> its score there
    second_embedding: str = ""  # the companion embedding model fused in (its identity), "" when not

    @classmethod
    def of(cls, fused: Sequence[ScoredId], runs: Mapping[str, Sequence[ScoredId]]) -> Ranking:
        """``fused`` (scores rounded to 6 decimals, as shown), with each channel's rank and score of its ids."""
        ranks = {name: {hit.id: rank for rank, hit in enumerate(run, start=1)} for name, run in runs.items()}
        scores = {name: {hit.id: float(hit.score) for hit in run} for name, run in runs.items()}
        return cls(
            [ScoredId(hit.id, round(hit.score, 6)) for hit in fused],
            {hit.id: {name: by_id[hit.id] for name, by_id in ranks.items() if hit.id in by_id} for hit in fused},
            {hit.id: {name: by_id[hit.id] for name, by_id in scores.items() if hit.id in by_id} for hit in fused},
        )


class Ranker(Protocol):
    """A first stage that ranks statement ids for a query (the channels fused, or that fused again
    with another model's channel); :class:`retriever.search.first_stage_searcher.FirstStageSearcher` reads
    their records and applies the filter."""

    def rank(self, query: str, k: int, mode: SearchMode) -> Ranking: ...


class ChannelSearcher(Protocol):
    """One retrieval channel (dense, BM25, the formula channels): statement ids with its own scores,
    which a :class:`retriever.search.hybrid_searcher.HybridSearcher` fuses into one ranking."""

    name: str

    def search(self, query: str, k: int) -> list[ScoredId]: ...


class ScoredBy:
    """Whose scores a search's hits carry (:attr:`SearchResult.scored_by`)."""

    FUSION = "fusion"  # the first stage's fused channels
    LEARNED_RANKER = "learned ranker"  # comparable across questions: the quoting answer may trust its lead
    CROSS_ENCODER = "cross-encoder"
    REWRITE_FUSION = "rewrite fusion"  # the query's ranking fused with its statement rewrite's


@dataclass(frozen=True, slots=True)
class SearchResult:
    """A search's hits with how they were found: what each stage did, and what the store gave with them.

    ``query`` is what the first stage searched (a :class:`Query`: with its embedding when a channel
    computed it); ``vectors`` are the hits' stored vectors, read from the store with their records.
    """

    hits: list[SearchHit]
    query: Query
    vectors: Mapping[str, np.ndarray] = field(default_factory=dict)
    scored_by: str = ScoredBy.FUSION
    reranker: str = ""  # the cross-encoder's identity, when it reordered the hits
    second_embedding: str = ""  # the companion embedding model fused into the first stage ("" when not)
    timings_ms: Mapping[str, float] = field(default_factory=dict)  # each later stage's own time ("rerank", ...)

    @property
    def rerank_ms(self) -> float:
        """The cross-encoder's share of the search (0 when it did not run)."""
        return self.timings_ms.get("rerank", 0.0)

    def with_hits(self, hits: list[SearchHit], **changes: object) -> SearchResult:
        """This result with other hits (reordered, collapsed, fused), and any other field changed."""
        return replace(self, hits=hits, **changes)  # type: ignore[arg-type]


class StatementSearcher(Protocol):
    """Anything that searches statements: the index, the reranking searcher, the collapsing searcher."""

    def search(self, query: str, k: int, mode: str = ..., where: SearchFilter | None = None) -> list[SearchHit]: ...


class ResultSearcher:
    """A statement searcher that says how it found its hits: :meth:`run` gives a :class:`SearchResult`,
    :meth:`search` the hits alone. The searchers that compose others call :func:`run_search` on them."""

    def run(self, query: str, k: int, mode: str, where: SearchFilter | None = None) -> SearchResult:
        raise NotImplementedError

    def search(self, query: str, k: int, mode: str = "hybrid", where: SearchFilter | None = None) -> list[SearchHit]:
        return self.run(query, k, mode, where).hits


def run_search(
    searcher: StatementSearcher, query: str, k: int, mode: str, where: SearchFilter | None = None
) -> SearchResult:
    """``searcher``'s result for ``query``; a searcher with ``search`` alone (one written outside this
    package) gives its hits, found by fusion as far as anyone can tell, without vectors."""
    if isinstance(searcher, ResultSearcher):
        return searcher.run(query, k, mode, where)
    query = Query.of(query)
    return SearchResult(searcher.search(query, k, mode, where), query)
