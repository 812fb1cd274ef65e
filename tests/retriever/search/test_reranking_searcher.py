"""The reranking stage composed around an index: only the top N is reordered; formula search is left alone."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ingestion import Source, StatementKind, StatementRecord
from retriever.models.cross_encoder_reranker import CrossEncoderReranker
from retriever.search.reranking_searcher import RerankingSearcher
from retriever.search_mode import SearchMode
from retriever.types import SearchHit
from tests.conftest import RERANK_FIXTURE_DOCS


@dataclass
class RankedIndex:
    """A stand-in first stage (a unit test of the composition): fixed hits, falling scores."""

    texts: tuple[str, ...]
    calls: list[tuple[str, int, SearchMode]] = field(default_factory=list)

    def search(self, query: str, k: int, mode: SearchMode | str = SearchMode.HYBRID, where=None) -> list[SearchHit]:
        self.calls.append((query, k, SearchMode(mode)))
        records = [
            StatementRecord(f"id{i}", Source.LOCAL, StatementKind.LEMMA, text, "paper")
            for i, text in enumerate(self.texts)
        ]
        return [SearchHit(r, 1.0 - 0.01 * i, i + 1) for i, r in enumerate(records)][:k]


def test_only_the_top_n_is_reranked_and_the_rest_keeps_its_order(tiny_reranker_dir: Path) -> None:
    texts = (*RERANK_FIXTURE_DOCS, "Remark. Filler one.", "Remark. Filler two.", "Remark. Filler three.")
    index = RankedIndex(texts)
    reranker = CrossEncoderReranker(str(tiny_reranker_dir), max_length=64)
    searcher = RerankingSearcher(index, reranker, candidates=5, weight=1.0)  # type: ignore[arg-type]
    hits = searcher.search("zorblax quimby", k=8)
    assert index.calls == [("zorblax quimby", 8, SearchMode.HYBRID)]
    assert hits[0].record.id == "id3"  # the trained answer, from rank 4 of the first stage
    assert {h.record.id for h in hits[:5]} == {f"id{i}" for i in range(5)}
    assert [h.record.id for h in hits[5:]] == ["id5", "id6", "id7"]  # past N: the first stage's order
    assert [h.rank for h in hits] == list(range(1, 9))
    scores = [h.score for h in hits]
    assert scores == sorted(scores, reverse=True)  # run files are ordered by score
    result = searcher.run("zorblax quimby", 8, SearchMode.HYBRID)  # how the hits were found, with them
    assert result.rerank_ms > 0 and result.reranker == reranker.identity and result.scored_by == "cross-encoder"
    assert [h.record.id for h in result.hits] == [h.record.id for h in hits]
    assert len(searcher.search("zorblax quimby", k=2)) == 2 and index.calls[-1][1] == 5  # N candidates even for k=2


def test_formula_only_search_is_not_reranked(tiny_reranker_dir: Path) -> None:
    index = RankedIndex(RERANK_FIXTURE_DOCS)
    searcher = RerankingSearcher(index, CrossEncoderReranker(str(tiny_reranker_dir)), candidates=5)  # type: ignore[arg-type]
    result = searcher.run("$x^2$", 3, SearchMode.FORMULA)
    assert [h.record.id for h in result.hits] == ["id0", "id1", "id2"]
    assert result.rerank_ms == 0.0 and result.reranker == "" and result.scored_by == "fusion"
    assert index.calls == [("$x^2$", 3, SearchMode.FORMULA)]
