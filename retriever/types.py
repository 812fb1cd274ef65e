"""Small typed values passed between searchers."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple, Protocol

from ingestion.records import StatementRecord

if TYPE_CHECKING:
    from retriever.search_filter import SearchFilter


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
    # Other places the same statement appears (see retriever.duplicate_groups), when results are collapsed.
    duplicates: tuple[DuplicatePlace, ...] = ()

    def to_dict(self) -> dict[str, object]:
        """The JSON shape of ``search --json`` (a contract: fields are only ever added)."""
        return {
            "id": self.record.id,
            "score": self.score,
            "rank": self.rank,
            **record_to_dict(self.record),
            "channel_ranks": dict(self.channel_ranks),
            "duplicates": [place.to_dict() for place in self.duplicates],
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
    record's own serialization plus what is derived from it (its display name and docno)."""
    return record.to_dict() | {"display_name": record.display_name, "docno": record.docno}


class ChannelSearcher(Protocol):
    """One retrieval channel (dense, BM25, the formula channels): statement ids with its own scores,
    which a :class:`retriever.hybrid_searcher.HybridSearcher` fuses into one ranking."""

    name: str

    def search(self, query: str, k: int) -> list[ScoredId]: ...


class StatementSearcher(Protocol):
    """Anything that searches statements: the index, the reranking searcher, the collapsing searcher."""

    def search(self, query: str, k: int, mode: str = ..., where: SearchFilter | None = None) -> list[SearchHit]: ...
