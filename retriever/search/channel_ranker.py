"""The first ranking of a search: the channels its mode names, each searched, then fused by rank."""

from __future__ import annotations

from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor

from retriever.models.query_adapter import QueryAdapter
from retriever.search.bm25_searcher import BM25Searcher
from retriever.search.dense_searcher import DenseSearcher
from retriever.search.formula_lexical_searcher import FormulaLexicalSearcher
from retriever.search.hybrid_searcher import HybridSearcher
from retriever.search.marf_searcher import FormulaEncoderSearcher, MarfSearcher
from retriever.search.rank_fusion import RankFusionMethod, fuse
from retriever.search_mode import SearchMode
from retriever.store.marf_index import MarfIndexError
from retriever.store.statement_index import FUSION_OFF, StatementIndex
from retriever.text.query_formulas import query_formulas
from retriever.types import ChannelSearcher, Ranking


class ChannelRanker:
    """Statement ids for a query, from the channels of its :class:`SearchMode` over one index.

    The channels (dense, BM25, the lexical formula channel) are made once and follow the index's
    writes; the MaRF channels are checked at every search, as another process may build them.
    ``weights`` are per channel (``dense``, ``bm25``, ``formula``); the MaRF channel takes dense's.
    """

    def __init__(
        self,
        index: StatementIndex,
        candidates: int = 50,
        rrf_k: float = 60.0,
        weights: Mapping[str, float] | None = None,
        method: RankFusionMethod = "rrf",
        maxsim_candidates: int = 50,
        query_adapter: QueryAdapter | None = None,
    ) -> None:
        self.index = index
        self.candidates = candidates  # each channel's depth before fusion
        self.rrf_k = rrf_k
        self.weights = dict(weights or {})
        self.method = method
        self.maxsim_candidates = maxsim_candidates
        self.query_adapter = query_adapter  # the dense channel's query-side tuning (None: the base vectors)
        self.dense = DenseSearcher(index.embedder, index.store, query_adapter)
        # the vector channel beside the lexical ones (HybridSearcher); threads made as searches need them
        self.executor = ThreadPoolExecutor(max_workers=8, thread_name_prefix="vector-channel")
        self.bm25 = BM25Searcher(index.lexical_index())
        self.formula = FormulaLexicalSearcher(index.formula_lexical_index())

    def with_query_adapter(self, query_adapter: QueryAdapter | None) -> ChannelRanker:
        """The same channels with another query adapter (the evaluation compares them on one index)."""
        return ChannelRanker(
            self.index, self.candidates, self.rrf_k, self.weights, self.method, self.maxsim_candidates, query_adapter
        )

    def rank(self, query: str, k: int, mode: SearchMode) -> Ranking:
        if mode is SearchMode.FORMULA:
            return self.rank_formulas(query, k)
        if mode is SearchMode.DENSE:
            run = self.dense.search(query, k)
            return Ranking.of(run, {"dense": run})
        if mode is SearchMode.BM25:
            run = self.bm25.search(query, k)
            return Ranking.of(run, {"bm25": run})
        first: ChannelSearcher = self.dense
        if mode in (SearchMode.MARF, SearchMode.MARF_MAXSIM):
            first = self._marf_searcher(self.maxsim_candidates if mode is SearchMode.MARF_MAXSIM else 0)
        channels: list[ChannelSearcher] = [first, self.bm25]
        if mode is not SearchMode.HYBRID:
            channels.append(self.formula)
        weights = {**self.weights, "fusion": self.weights.get("dense", 1.0)}
        hybrid = HybridSearcher(channels, self.candidates, self.rrf_k, weights, self.method, self.executor)
        runs = hybrid.runs(query, k)
        return Ranking.of(hybrid.fuse(runs, k), runs)

    def rank_formulas(self, query: str, k: int) -> Ranking:
        """Statements holding the query's formulas or similar ones.

        The query is a formula (delimiters optional), or text whose math spans are the formulas.
        """
        formulas = query_formulas(query) or [query.strip()]
        if not any(formulas):
            return Ranking([], {})
        depth = max(k, self.candidates)
        runs = {"formula": self.formula.search_formulas(formulas, depth)}
        index = self.index
        if index.formula_models is not None and index.marf_index().exists():
            # the formula encoder finds rewrites that share few tokens (renamed variables, expanded forms)
            encoder = index.marf_encoder()
            index.marf_index().check(encoder)
            runs["formula-encoder"] = FormulaEncoderSearcher(encoder, index.marf_index()).search_formulas(
                formulas, depth
            )
        fused = fuse(runs, self.method, self.rrf_k, self.weights)[:k] if len(runs) > 1 else runs["formula"][:k]
        return Ranking.of(fused, runs)

    def _marf_searcher(self, maxsim_candidates: int) -> MarfSearcher:
        index = self.index
        if index.formula_models is None:
            raise MarfIndexError(FUSION_OFF)
        vectors = index.marf_index()
        vectors.check_built()  # before loading models: the likelier problem, and the cheaper check
        encoder = index.marf_encoder()
        vectors.check(encoder)
        return MarfSearcher(encoder, vectors, maxsim_candidates)
