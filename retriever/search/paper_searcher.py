"""Paper search: "which paper proves this?" answered from the statements a search finds.

A :class:`PaperSearcher` asks any statement searcher (the index, or the index followed by the reranker)
for a deep list of statements, groups them by paper and ranks the papers by an aggregate of their
statements' scores. An MSE thread counts as one paper: the question with its answers.

The aggregation was chosen by measurement on the development sets' paper-level judgments
(docs/retrieval-and-evaluation.md, "Paper search"): the best statement's score (``max``) ranked papers
as well as or better than sums, which favour long documents (a Stacks chapter has thousands of statements).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from ingestion.latex_ingestor import arxiv_abs_url
from ingestion.records import Source, paper_key
from retriever.search_filter import SearchFilter, metadata_categories, metadata_date
from retriever.types import SearchHit, StatementSearcher

MSE_QUESTION_URL = "https://math.stackexchange.com/q/{id}"


class PaperAggregation(StrEnum):
    """How a paper's score is made from the scores of its statements found by the search."""

    MAX = "max"  # its best statement
    TOP_M = "top-m"  # the sum of its best m
    MAX_PLUS = "max-plus"  # its best, plus a tenth of each of the next m - 1


@dataclass(frozen=True, slots=True)
class PaperHit:
    """A paper (or MSE thread) with its best matching statements, best first."""

    paper_id: str
    title: str
    authors: str
    url: str
    source: str
    categories: tuple[str, ...]
    date: str
    score: float
    rank: int
    hits: tuple[SearchHit, ...]

    def to_dict(self) -> dict[str, object]:
        """The JSON shape of ``search --papers --json`` (a contract: fields are only ever added)."""
        return {
            "paper_id": self.paper_id,
            "title": self.title,
            "authors": self.authors,
            "url": self.url,
            "source": self.source,
            "categories": list(self.categories),
            "date": self.date,
            "score": self.score,
            "rank": self.rank,
            "hits": [hit.to_dict() for hit in self.hits],
        }


def aggregate(scores: Sequence[float], aggregation: PaperAggregation, top_m: int) -> float:
    """A paper's score from its statements' scores (best first)."""
    if aggregation is PaperAggregation.MAX:
        return scores[0]
    if aggregation is PaperAggregation.TOP_M:
        return sum(scores[:top_m])
    return scores[0] + 0.1 * sum(scores[1:top_m])


def group_papers(
    hits: Sequence[SearchHit],
    k: int,
    aggregation: PaperAggregation = PaperAggregation.MAX,
    top_m: int = 3,
    hits_per_paper: int = 3,
) -> list[PaperHit]:
    """The ``k`` best papers among ``hits`` (statements best first), each with its best statements."""
    by_paper: dict[str, list[SearchHit]] = {}
    for hit in hits:
        by_paper.setdefault(paper_key(hit.record), []).append(hit)
    scored = [
        (aggregate([h.score for h in group], aggregation, top_m), -group[0].rank, key, group)
        for key, group in by_paper.items()
    ]
    # Ties (equal aggregates) keep the order of the papers' best statements.
    scored.sort(key=lambda item: (item[0], item[1]), reverse=True)
    return [
        _paper_hit(key, group[:hits_per_paper], score, rank)
        for rank, (score, _, key, group) in enumerate(scored[:k], start=1)
    ]


def _paper_hit(key: str, hits: list[SearchHit], score: float, rank: int) -> PaperHit:
    record = hits[0].record
    metadata = record.metadata
    if record.source is Source.MSE:
        question = metadata.get("question_id")
        url = MSE_QUESTION_URL.format(id=question) if question else record.url
        authors = ""  # a thread has many
    else:
        url = arxiv_abs_url(record.paper_id) or (record.url.split("#", 1)[0] if record.url else "")
        authors = str(metadata.get("authors", "") or "")
    when = metadata_date(metadata)
    return PaperHit(
        paper_id=key,
        title=record.title,
        authors=authors,
        url=url,
        source=record.source.value,
        categories=tuple(metadata_categories(metadata)),
        date=when.isoformat() if when else "",
        score=score,
        rank=rank,
        hits=tuple(hits),
    )


class PaperSearcher:
    """Papers ranked from a deep statement search of ``statements`` (any searcher with ``search``)."""

    def __init__(
        self,
        statements: StatementSearcher,
        depth: int = 100,
        aggregation: PaperAggregation | str = PaperAggregation.MAX,
        top_m: int = 3,
        hits_per_paper: int = 3,
    ) -> None:
        self.statements = statements
        self.depth = depth
        self.aggregation = PaperAggregation(aggregation)
        self.top_m = top_m
        self.hits_per_paper = hits_per_paper

    def search(self, query: str, k: int, mode: str, where: SearchFilter | None = None) -> list[PaperHit]:
        # Deep enough that k papers are found even when the best ones hold many of the statements.
        hits = self.statements.search(query, max(self.depth, k), mode, where)
        return self.group(hits, k)

    def group(self, hits: Sequence[SearchHit], k: int) -> list[PaperHit]:
        """Papers from statement hits found elsewhere (a formula search)."""
        return group_papers(hits, k, self.aggregation, self.top_m, self.hits_per_paper)
