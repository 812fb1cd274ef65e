"""The index's search fused with a second embedding model's channel (composed around StatementIndex)."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from retriever.formulas.formula_share import query_formula_share
from retriever.fusion import linear_fusion
from retriever.search_filter import SearchFilter
from retriever.second_dense_index import CHANNEL, SecondDenseIndex
from retriever.statement_index import SearchMode, StatementIndex
from retriever.types import ScoredId, SearchHit

logger = logging.getLogger(__name__)

# The modes that fuse text channels; dense, BM25 and formula-only searches ask for one channel by name.
FUSED_MODES = frozenset({SearchMode.HYBRID, SearchMode.HYBRID_FORMULA, SearchMode.FUSION, SearchMode.FUSION_MAXSIM})
FIRST_STAGE = "first-stage"


@dataclass
class EnsembleSearcher:
    """``index.search``'s fused list and the second model's nearest statements, fused linearly.

    Both lists are ``candidates`` deep and min-max normalized; the second model's list counts
    ``weight`` × (1 − the query's formula share) times the first stage's: the second model reads words,
    and alone it ranks formula queries far below the first stage (which has the formula channel), so
    a formula typed alone is searched as without it. Each hit's ``channel_ranks`` gain ``dense2``.
    When the second model's vectors are not built (an index ingested before the model was
    configured), searches fall back to the first stage and say so once in the log.
    """

    index: StatementIndex
    second: SecondDenseIndex
    weight: float = 1.0
    candidates: int = 50
    _warned: set[str] = field(default_factory=set, repr=False)

    def search(
        self, query: str, k: int, mode: SearchMode | str = SearchMode.HYBRID, where: SearchFilter | None = None
    ) -> list[SearchHit]:
        mode = SearchMode(mode)
        weight = self.query_weight(query)
        if mode not in FUSED_MODES or weight <= 0 or not query.strip() or not self._ready():
            return self.index.search(query, k, mode, where)
        depth = max(k, self.candidates)
        first = self.index.search(query, depth, mode, where)
        if not first:
            return []
        second = self.second.search(query, depth)
        records = {hit.record.id: hit.record for hit in first}
        records.update((r.id, r) for r in self.index.get([hit.id for hit in second if hit.id not in records]))
        if where is not None and where.active:
            second = [hit for hit in second if hit.id in records and where.matches(records[hit.id])]
        runs = {FIRST_STAGE: [ScoredId(hit.record.id, hit.score) for hit in first], CHANNEL: second}
        fused = linear_fusion(runs, {FIRST_STAGE: 1.0, CHANNEL: weight})
        channel_ranks = {hit.record.id: hit.channel_ranks for hit in first}
        second_ranks = {hit.id: rank for rank, hit in enumerate(second, start=1)}
        hits: list[SearchHit] = []
        for scored in fused:
            record = records.get(scored.id)
            if record is None:
                continue  # deleted from the store since the second model's vectors were written
            ranks = dict(channel_ranks.get(scored.id, {}))
            if scored.id in second_ranks:
                ranks[CHANNEL] = second_ranks[scored.id]
            hits.append(SearchHit(record, round(scored.score, 6), len(hits) + 1, ranks))
            if len(hits) == k:
                break
        return hits

    def query_weight(self, query: str) -> float:
        """The second model's weight for ``query``: ``weight`` less the query's formula share."""
        return self.weight * (1.0 - query_formula_share(query))

    def _ready(self) -> bool:
        if self.second.built_by_configured_model():
            return True
        problem = "not built" if not self.second.manifest() else f"built by {self.second.manifest().get('embedder')!r}"
        if problem not in self._warned:
            self._warned.add(problem)
            logger.warning(
                "the second embedding model's vectors in %s are %s; searching without them until "
                "`rag-app build-dense2 --index %s` builds them",
                self.index.directory,
                problem,
                self.index.directory,
            )
        return False
