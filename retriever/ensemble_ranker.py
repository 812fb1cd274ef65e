"""The first stage's ranking fused with a second embedding model's channel."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

from retriever.formulas.formula_share import query_formula_share
from retriever.fusion import linear_fusion
from retriever.search_mode import FUSED_MODES, SearchMode
from retriever.second_dense_index import CHANNEL, SecondDenseIndex
from retriever.types import Ranker, Ranking, ScoredId

logger = logging.getLogger(__name__)

FIRST_STAGE = "first-stage"


@dataclass
class EnsembleRanker:
    """``first``'s fused ranking and the second model's nearest statements, fused linearly.

    Both lists are ``candidates`` deep and min-max normalized; the second model's list counts
    ``weight`` × (1 − the query's formula share) times the first stage's: the second model reads words,
    and alone it ranks formula queries far below the first stage (which has the formula channel), so
    a formula typed alone is ranked as without it. Each statement's channel ranks gain ``dense2``.
    When the second model's vectors are not built (an index ingested before the model was
    configured), rankings fall back to the first stage and say so once in the log.
    """

    first: Ranker
    second: SecondDenseIndex
    weight: float = 1.0
    candidates: int = 50
    index_directory: Path | None = None  # named in the warning about unbuilt vectors
    _warned: set[str] = field(default_factory=set, repr=False)

    def rank(self, query: str, k: int, mode: SearchMode) -> Ranking:
        weight = self.query_weight(query)
        if mode not in FUSED_MODES or weight <= 0 or not query.strip() or not self._ready():
            return self.first.rank(query, k, mode)
        depth = max(k, self.candidates)
        first = self.first.rank(query, depth, mode)
        if not first.ids:
            return first
        second = self.second.search(query, depth)
        fused = linear_fusion({FIRST_STAGE: first.ids, CHANNEL: second}, {FIRST_STAGE: 1.0, CHANNEL: weight})[:k]
        second_ranks = {hit.id: rank for rank, hit in enumerate(second, start=1)}
        channel_ranks: dict[str, dict[str, int]] = {}
        for scored in fused:
            ranks = dict(first.channel_ranks.get(scored.id, {}))
            if scored.id in second_ranks:
                ranks[CHANNEL] = second_ranks[scored.id]
            channel_ranks[scored.id] = ranks
        return Ranking([ScoredId(hit.id, round(hit.score, 6)) for hit in fused], channel_ranks)

    def query_weight(self, query: str) -> float:
        """The second model's weight for ``query``: ``weight`` less the query's formula share."""
        return self.weight * (1.0 - query_formula_share(query))

    def _ready(self) -> bool:
        if self.second.built_by_configured_model():
            return True
        problem = "not built" if not self.second.manifest() else f"built by {self.second.manifest().get('embedder')!r}"
        if problem not in self._warned:
            self._warned.add(problem)
            where = self.index_directory or "the index"
            logger.warning(
                "the second embedding model's vectors in %s are %s; searching without them until "
                "`rag-app build-dense2 --index %s` builds them",
                where,
                problem,
                where,
            )
        return False
