"""Small typed values passed between searchers."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

from ingestion.records import StatementRecord


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

    def to_dict(self) -> dict[str, object]:
        """The JSON shape of ``search --json`` (a contract: fields are only ever added)."""
        return {
            "id": self.record.id,
            "score": self.score,
            "rank": self.rank,
            **record_to_dict(self.record),
            "channel_ranks": dict(self.channel_ranks),
        }


def record_to_dict(record: StatementRecord) -> dict[str, object]:
    """A statement's fields as ``search --json`` and ``ingest --parse-only --json`` print them."""
    return {
        "id": record.id,
        "kind": record.kind.value,
        "name": record.name,
        "display_name": record.display_name,
        "text": record.text,
        "paper_id": record.paper_id,
        "title": record.title,
        "label": record.label,
        "section": record.section,
        "url": record.url,
        "source": record.source.value,
        "formulas": list(record.formulas),
        "docno": record.docno,
        "proof": record.proof,
        "metadata": dict(record.metadata),
    }
