"""The one place searchers are composed: settings, or an evaluation's run name, to a searcher.

Stages, each a class in ``retriever`` taking the stage before it::

    ChannelRanker                 the channels a mode names (dense, BM25, formula, MaRF), fused by rank
    -> EnsembleRanker             + the companion embedding model's channel, fused linearly   (when asked)
    -> FirstStageSearcher         the records read from Chroma once; the filter, applied once
    -> LearnedRankingSearcher     LambdaMART over the top 100, from the channels' own numbers   (ranker.model)
    -> CitingFusingSearcher       + what the statements' citers say of them, fused   (retrieval.citing_weight)
    -> RerankingSearcher          the cross-encoder over the top N                         (when asked)
    -> DuplicateCollapsingSearcher  one hit per duplicate group                  (duplicates.collapse)
    -> TypedNotationSearcher      ASCII-typed math read as LaTeX first, for every stage  (retrieval.typed_notation)
    -> RewriteFusingSearcher      + the search of the LLM's statement rewrite     (retrieval.statement_rewrite)
    -> PaperSearcher              papers ranked from their statements                (search --papers)

Each stage is built once per index and reused by every search (the reranker's model is loaded once
for both first stages). ``MathRAG``, the CLI, the chat and the evaluation all get their searcher here.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

from rag_app.search.embedder_factory import resolve_device
from rag_app.settings import Settings
from retriever.models.cross_encoder_reranker import CrossEncoderReranker
from retriever.models.learned_ranker import LearnedRanker
from retriever.models.query_adapter import QueryAdapter
from retriever.search.channel_ranker import ChannelRanker
from retriever.search.citing_fusing_searcher import CitingFusingSearcher
from retriever.search.duplicate_collapsing_searcher import DuplicateCollapsingSearcher
from retriever.search.ensemble_ranker import EnsembleRanker
from retriever.search.first_stage_searcher import FirstStageSearcher
from retriever.search.learned_ranking_searcher import LearnedRankingSearcher
from retriever.search.paper_searcher import PaperSearcher
from retriever.search.reranking_searcher import RerankingSearcher
from retriever.search.rewrite_fusing_searcher import RewriteFusingSearcher
from retriever.search.typed_notation_searcher import TypedNotationSearcher
from retriever.search_filter import SearchFilter
from retriever.search_mode import SearchMode
from retriever.store.companion_index import CompanionIndex
from retriever.store.duplicate_groups import DuplicateGroups
from retriever.store.statement_index import StatementIndex
from retriever.types import StatementSearcher

RERANK_SUFFIX = "+rerank"  # `hybrid-formula+rerank`: that retriever's top N rescored by the cross-encoder
LEARNED_SUFFIX = "+ltr"  # `hybrid-formula+ltr`: that retriever's top 100 ordered by the learned ranker
SECOND_EMBEDDING_SUFFIX = "+dense2"  # `hybrid-formula+dense2`: fused with the companion embedding model
CITING_SUFFIX = "+citing"  # `hybrid-formula+ltr+citing`: the learned ranker's order fused with the citing channel
NOTATION_SUFFIX = "+notation"  # `hybrid-formula+ltr+notation`: the query's ASCII-typed math read as LaTeX first
REWRITE_SUFFIX = "+rewrite"  # `...+notation+rewrite`: fused with the search of the LLM's statement rewrite


class UnknownRunNameError(ValueError):
    """A run name the grammar does not know (``MODE``, then any of ``+dense2``, ``+ltr``, ``+rerank``,
    ``+citing``, ``+notation``, ``+rewrite`` in that order)."""


@dataclass(frozen=True, slots=True)
class RunName:
    """What an evaluation run name asks for: ``hybrid-formula+dense2+ltr+rerank`` is the hybrid-formula
    mode, fused with the companion embedding model, ordered by the learned ranker, then reranked.
    A plain ``MODE`` is the first stage alone, whatever the settings turn on for search."""

    mode: SearchMode
    second_embedding: bool
    rerank: bool
    learned: bool = False
    notation: bool = False
    rewrite: bool = False
    citing: bool = False  # the citing channel fused after the learned ranker (``+citing``, with ``+ltr``)

    @classmethod
    def parse(cls, name: str) -> RunName:
        rest = name
        rewrite = rest.endswith(REWRITE_SUFFIX)
        rest = rest.removesuffix(REWRITE_SUFFIX)
        notation = rest.endswith(NOTATION_SUFFIX)
        rest = rest.removesuffix(NOTATION_SUFFIX)
        citing = rest.endswith(CITING_SUFFIX)
        rest = rest.removesuffix(CITING_SUFFIX)
        rerank = rest.endswith(RERANK_SUFFIX)
        rest = rest.removesuffix(RERANK_SUFFIX)
        learned = rest.endswith(LEARNED_SUFFIX)
        rest = rest.removesuffix(LEARNED_SUFFIX)
        second = rest.endswith(SECOND_EMBEDDING_SUFFIX)
        mode = rest.removesuffix(SECOND_EMBEDDING_SUFFIX)
        if mode not in set(SearchMode):
            known = ", ".join(
                [
                    *SearchMode,
                    "NAME+dense2",
                    "NAME+ltr",
                    "NAME+rerank",
                    "NAME+ltr+citing",
                    "NAME+notation",
                    "NAME+rewrite",
                    "NAME+dense2+ltr+rerank+citing+notation+rewrite",
                ]
            )
            raise UnknownRunNameError(f"unknown retriever {name!r} (known: {known}, run:PATH)")
        if citing and not learned:
            raise UnknownRunNameError(f"retriever {name!r}: +citing follows the learned ranker (NAME+ltr+citing)")
        return cls(SearchMode(mode), second, rerank, learned, notation, rewrite, citing)


class SearchStack:
    """The searchers of one index, composed from the settings and kept for reuse.

    ``companion``: the companion embedding model's vectors (None: that model is off); ``duplicates``: the
    index's duplicate groups, used when ``duplicates.collapse`` is set; ``rewriter``: the statement a query
    looks for, written by the LLM (None: searches are never rewritten).
    """

    def __init__(
        self,
        settings: Settings,
        index: StatementIndex,
        companion: CompanionIndex | None = None,
        duplicates: DuplicateGroups | None = None,
        ranker: ChannelRanker | None = None,
        rewriter: Callable[[str], str] | None = None,
    ) -> None:
        self.settings = settings
        self.rewriter = rewriter
        self.index = index
        self.companion = companion
        self.duplicates = duplicates
        retrieval = settings.retrieval
        self.ranker = ranker or ChannelRanker(
            index,
            candidates=retrieval.candidates,
            rrf_k=retrieval.rrf_k,
            weights={
                "dense": retrieval.dense_weight,
                "bm25": retrieval.bm25_weight,
                "formula": retrieval.formula_weight,
            },
            method=retrieval.fusion,
            maxsim_candidates=settings.formula.maxsim_candidates,
            query_adapter=QueryAdapter.configured(retrieval.query_adapter, index.embedder.identity),
        )
        self._ensemble: EnsembleRanker | None = None
        self._reranker: CrossEncoderReranker | None = None
        self._learned_ranker: LearnedRanker | None = None
        self._auto_ranker_looked_up = False  # `ranker.model = "auto"`: the packaged one sought (it may be none)
        # The ranker is loaded by one thread: a second first search (a server's warm-up beside its first
        # request) waits for it, instead of finding it "looked up" and still missing (searched without it).
        self._ranker_lock = threading.Lock()
        # The reranker's model and the ensemble are built by one thread too: two first searches at once share one
        # reranker, its model loaded once.
        self._models_lock = threading.Lock()
        self._first_stages: dict[bool, FirstStageSearcher] = {}
        self._learned: dict[bool, LearnedRankingSearcher] = {}
        self._citing: dict[bool, CitingFusingSearcher] = {}
        self._rerankings: dict[tuple[bool, bool], RerankingSearcher] = {}  # by (companion model, learned ranker)
        # by (rerank, companion model, learned ranker)
        self._collapsing: dict[tuple[bool, bool, bool, bool], DuplicateCollapsingSearcher] = {}
        # the outer stages, by the (cached, so long-lived) searcher they wrap
        self._notation: dict[int, TypedNotationSearcher] = {}
        self._rewriting: dict[int, RewriteFusingSearcher] = {}

    def with_query_adapter(self, spec: str | None) -> SearchStack:
        """This stack with another query adapter on the dense channel (``none``: the base vectors); the
        index, the companion model and the reranker's model are shared."""
        adapter = QueryAdapter.configured(spec, self.index.embedder.identity)
        variant = SearchStack(
            self.settings,
            self.index,
            self.companion,
            self.duplicates,
            self.ranker.with_query_adapter(adapter),
            self.rewriter,
        )
        variant._reranker = self._reranker
        variant._learned_ranker = self._learned_ranker
        variant._auto_ranker_looked_up = self._auto_ranker_looked_up
        return variant

    # ------------------------------------------------------------------ statements
    def statements(
        self,
        *,
        rerank: bool = False,
        second_embedding: bool = False,
        collapse: bool | None = None,
        learned: bool | None = None,
        notation: bool | None = None,
        rewrite: bool = False,
        citing: bool | None = None,
    ) -> StatementSearcher:
        """The statement searcher: the first stage, ordered by the learned ranker when ``learned`` (unset:
        when ``ranker.model`` names one), with the citing channel fused in after it when ``citing`` (unset:
        when ``retrieval.citing_weight`` is above 0), reranked when asked, duplicates collapsed when ``collapse``
        (unset: ``duplicates.collapse``), the query's typed notation read as LaTeX when ``notation``
        (unset: ``retrieval.typed_notation``), fused with the search of the LLM's statement rewrite when
        ``rewrite`` (and a rewriter is given)."""
        notation = self.settings.retrieval.typed_notation if notation is None else notation
        searcher = self._statements(rerank, second_embedding, collapse, learned, citing)
        if notation:
            if id(searcher) not in self._notation:
                self._notation[id(searcher)] = TypedNotationSearcher(searcher)
            searcher = self._notation[id(searcher)]
        if rewrite and self.rewriter is not None:
            if id(searcher) not in self._rewriting:
                retrieval = self.settings.retrieval
                self._rewriting[id(searcher)] = RewriteFusingSearcher(
                    searcher, self.rewriter, retrieval.rewrite_weight, retrieval.rrf_k, retrieval.candidates
                )
            searcher = self._rewriting[id(searcher)]
        return searcher

    def stable_depth(
        self,
        mode: SearchMode | str,
        *,
        rerank: bool = False,
        second_embedding: bool = False,
        where: SearchFilter | None = None,
        rewrite: bool = False,
    ) -> int:
        """The deepest ``k`` at which :meth:`statements` (with these options) still ranks its first places as a
        shallower search does: each stage searches ``max(k, its candidates)`` deep, so a ``k`` within the
        shallowest stage's depth changes no ranking, only how many results come back. An answer's next results
        (``retrieval.next_results``) come from its own search at most this deep."""
        settings = self.settings
        learned = self.learned_ranker_configured() and SearchMode(mode) == SearchMode(self.learned_ranker.mode)
        if rerank:
            depth = settings.rerank.candidates
        elif learned:  # the first stage is searched the ranker's candidates deep, whatever k
            depth = settings.ranker.candidates
        elif where is not None and where.active:  # a filtered first stage searches max(4k, candidates) deep
            depth = settings.retrieval.candidates // 4
        else:
            depth = settings.retrieval.candidates
            if second_embedding and self.companion is not None:
                depth = min(depth, settings.second_embedding.candidates)
        if rewrite and self.rewriter is not None:
            depth = min(depth, settings.retrieval.candidates)
        if settings.duplicates.collapse and self.duplicates is not None:
            depth -= DuplicateCollapsingSearcher.EXTRA  # the collapsing searches this much beyond k
        return max(depth, 0)

    def _statements(
        self, rerank: bool, second_embedding: bool, collapse: bool | None, learned: bool | None, citing: bool | None
    ) -> StatementSearcher:
        collapse = self.settings.duplicates.collapse if collapse is None else collapse
        learned = self.learned_ranker_configured() if learned is None else learned
        citing = learned and (self.settings.retrieval.citing_weight > 0 if citing is None else citing)
        use_second = second_embedding and self.companion is not None
        inner: StatementSearcher
        if rerank:
            inner = self.reranking(use_second, learned)
        elif citing:
            inner = self.citing(use_second)
        else:
            inner = self.learned(use_second) if learned else self.first_stage(use_second)
        if not collapse or self.duplicates is None:
            return inner
        key = (rerank, use_second, learned, citing)
        if key not in self._collapsing:
            self._collapsing[key] = DuplicateCollapsingSearcher(inner, self.duplicates)
        return self._collapsing[key]

    def first_stage(self, second_embedding: bool = False) -> FirstStageSearcher:
        """The channels fused (with the companion model's channel when asked and configured), as hits."""
        use_second = second_embedding and self.companion is not None
        if use_second not in self._first_stages:
            ranker = self.ensemble() if use_second else self.ranker
            self._first_stages[use_second] = FirstStageSearcher(ranker, self.index, self.settings.retrieval.candidates)
        return self._first_stages[use_second]

    def learned(self, second_embedding: bool = False) -> LearnedRankingSearcher:
        """The first stage's top ``ranker.candidates`` ordered by the learned ranker; raises
        ``LearnedRankerError`` naming the command that builds it when it is missing."""
        use_second = second_embedding and self.companion is not None
        if use_second not in self._learned:
            self._learned[use_second] = LearnedRankingSearcher(
                self.first_stage(use_second),
                self.learned_ranker,
                self.settings.ranker.candidates,
                self.index.graph,
                tuple(self.settings.ranker.hide_features),
            )
        return self._learned[use_second]

    def citing(self, second_embedding: bool = False) -> CitingFusingSearcher:
        """The learned ranker's order with the citing channel fused in (``retrieval.citing_weight``; an
        evaluation's ``+citing`` at a weight of 0 uses the default weight, 0.1)."""
        use_second = second_embedding and self.companion is not None
        if use_second not in self._citing:
            weight = self.settings.retrieval.citing_weight or type(self.settings.retrieval).model_fields[
                "citing_weight"
            ].default
            learned = self.learned(use_second)
            self._citing[use_second] = CitingFusingSearcher(
                learned, self.index.graph, learned.ranker.mode, weight, self.settings.ranker.candidates
            )
        return self._citing[use_second]

    def learned_ranker_configured(self) -> bool:
        """Whether ``ranker.model`` gives a ranker for this index (``auto`` gives none for an embedder
        no packaged ranker was trained for)."""
        spec = self.settings.ranker.model
        if not spec or spec == "none":
            return False
        if spec == "auto":
            if not self._auto_ranker_looked_up:  # once: this is asked at every search
                with self._ranker_lock:
                    if not self._auto_ranker_looked_up:
                        self._learned_ranker = self._reading_kept_profiles(
                            LearnedRanker.configured("auto", self.index.embedder.identity)
                        )
                        self._auto_ranker_looked_up = True  # after the ranker: a reader that sees it sees that
            return self._learned_ranker is not None
        return True

    @property
    def learned_ranker(self) -> LearnedRanker:
        """The configured learned ranker, or the packaged one when the settings turn it off (an
        evaluation's ``+ltr`` run asks for it explicitly)."""
        if self._learned_ranker is None:
            with self._ranker_lock:
                if self._learned_ranker is None:
                    spec = self.settings.ranker.model
                    spec = "packaged" if not spec or spec in ("none", "auto") else spec
                    self._learned_ranker = self._reading_kept_profiles(
                        LearnedRanker.load(spec, self.index.embedder.identity)
                    )
        return self._learned_ranker

    def _reading_kept_profiles(self, ranker: LearnedRanker | None) -> LearnedRanker | None:
        """``ranker`` reading the statements' profiles this index made at ingest (none made at search time)."""
        if ranker is not None:
            ranker.profiles.kept = self.index.ranking_profiles.read
        return ranker

    def ensemble(self) -> EnsembleRanker:
        """The channels fused with the companion model's; ValueError when that model is off."""
        if self.companion is None:
            raise ValueError("the second embedding model is off (second_embedding.model = none)")
        if self._ensemble is None:  # kept: it warns once about unbuilt vectors, not at every search
            with self._models_lock:
                if self._ensemble is None:
                    settings = self.settings.second_embedding
                    self._ensemble = EnsembleRanker(
                        self.ranker, self.companion, settings.weight, settings.candidates, self.index.directory
                    )
        return self._ensemble

    def reranking(self, second_embedding: bool = False, learned: bool = False) -> RerankingSearcher:
        """The first stage (ordered by the learned ranker when ``learned``) followed by the
        cross-encoder (``[rerank]`` settings); raises ``RerankerModelError`` naming the command that
        builds the model when it is missing."""
        use_second = second_embedding and self.companion is not None
        key = (use_second, learned)
        if key not in self._rerankings:
            rerank = self.settings.rerank
            first: StatementSearcher = self.learned(use_second) if learned else self.first_stage(use_second)
            self._rerankings[key] = RerankingSearcher(first, self.reranker, rerank.candidates, rerank.weight)
        return self._rerankings[key]

    @property
    def reranker(self) -> CrossEncoderReranker:
        if self._reranker is None:  # one model in memory for every first stage
            with self._models_lock:
                if self._reranker is None:
                    rerank = self.settings.rerank
                    device = resolve_device(rerank.device or self.settings.embedding.device)
                    self._reranker = CrossEncoderReranker(
                        rerank.model, device, rerank.max_length, rerank.batch_size, quantize_cpu=rerank.int8_on_cpu
                    )
        return self._reranker

    # ------------------------------------------------------------------ papers and run names
    def papers(self, *, rerank: bool = False, second_embedding: bool = False) -> PaperSearcher:
        """Papers ranked from a deep statement search (duplicates not collapsed: each place counts)."""
        papers = self.settings.papers
        statements = self.statements(rerank=rerank, second_embedding=second_embedding, collapse=False)
        return PaperSearcher(statements, papers.depth, papers.aggregation, papers.top_m, papers.hits_per_paper)

    def for_run_name(self, name: str) -> tuple[StatementSearcher, SearchMode]:
        """The searcher and mode an evaluation run name asks for (duplicates not collapsed: the
        evaluation counts statements by docno itself)."""
        run = RunName.parse(name)
        if run.rewrite and self.rewriter is None:
            raise UnknownRunNameError(f"retriever {name!r} needs the LLM that writes the rewrites")
        if run.second_embedding and self.companion is None:
            raise UnknownRunNameError(f"retriever {name!r} needs the second embedding model (second_embedding.model)")
        searcher = self.statements(
            rerank=run.rerank,
            second_embedding=run.second_embedding,
            collapse=False,
            learned=run.learned,
            notation=run.notation,
            rewrite=run.rewrite,
            citing=run.citing,
        )
        return searcher, run.mode
