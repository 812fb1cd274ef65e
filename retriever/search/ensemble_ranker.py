"""The first stage's ranking fused with a companion embedding model's channel."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

from retriever.search.rank_fusion import linear_fusion
from retriever.search_mode import FUSED_MODES, SearchMode
from retriever.store.companion_index import CHANNEL, CompanionIndex
from retriever.text.formula_share import query_formula_share
from retriever.types import Ranker, Ranking, ScoredId

logger = logging.getLogger(__name__)

FIRST_STAGE = "first-stage"


@dataclass
class EnsembleRanker:
    """``first``'s fused ranking and the companion model's nearest statements, fused linearly.

    Both lists are ``candidates`` deep and min-max normalized; the companion model's list counts
    ``weight`` × (1 − the query's formula share) times the first stage's: the companion model reads words,
    and alone it ranks formula queries far below the first stage (which has the formula channel), so
    a formula typed alone is ranked as without it. Each statement's channel ranks gain ``dense2``.
    When the companion model's vectors are not built (an index ingested before the model was
    configured), rankings fall back to the first stage and say so once in the log.
    """

    first: Ranker
    companion: CompanionIndex
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
        companion = self.companion.search(query, depth)
        fused = linear_fusion({FIRST_STAGE: first.ids, CHANNEL: companion}, {FIRST_STAGE: 1.0, CHANNEL: weight})[:k]
        second_ranks = {hit.id: rank for rank, hit in enumerate(companion, start=1)}
        second_scores = {hit.id: float(hit.score) for hit in companion}
        channel_ranks: dict[str, dict[str, int]] = {}
        channel_scores: dict[str, dict[str, float]] = {}
        for scored in fused:
            ranks = dict(first.channel_ranks.get(scored.id, {}))
            scores = dict(first.channel_scores.get(scored.id, {}))
            if scored.id in second_ranks:
                ranks[CHANNEL] = second_ranks[scored.id]
                scores[CHANNEL] = second_scores[scored.id]
            channel_ranks[scored.id] = ranks
            channel_scores[scored.id] = scores
        return Ranking(
            [ScoredId(hit.id, round(hit.score, 6)) for hit in fused],
            channel_ranks,
            channel_scores,
            second_embedding=self.companion.embedder.identity,
        )

    def query_weight(self, query: str) -> float:
        """The companion model's weight for ``query``: ``weight`` less the query's formula share."""
        return self.weight * (1.0 - query_formula_share(query))

    def _ready(self) -> bool:
        if self.companion.built_by_configured_model():
            return True
        manifest = self.companion.manifest()
        problem = f"built by {manifest.get('embedder')!r}" if manifest else "not built"
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
