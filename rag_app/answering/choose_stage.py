"""The choosing stage of an answer: which of the sources found are read, and the learned chooser's reading of them.

In: the :class:`Question`, the :class:`Retrieval` and its :class:`Relevance`. Out: the candidate sources (those worth
reading: at most ``max_sources``, within ``source_margin`` of the best cosine) and, where the learned ranker scored
them and ``answers.quote.chooser`` names a chooser, its :class:`SourceChoice` (each source's probability of
answering, the order to quote them in).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from rag_app.answering.model_reading import Definitions
from rag_app.answering.question import Question
from rag_app.answering.source_chooser import SourceChoice, SourceChooser
from rag_app.answering.source_features import CitingSentences, SourceFeatures
from rag_app.answering.stages import Relevance
from rag_app.settings.answering import QuoteSettings
from retriever.types import SearchHit

SCOPE_DEFINITIONS = 3  # the definitions in a statement's scope whose names the chooser reads as the statement's words
OFF = ("none", "off", "")

_CHOOSERS: dict[str, SourceChooser] = {}  # a chooser's weights by spec, read once per process


def load_chooser(spec: str) -> SourceChooser | None:
    """The learned chooser ``spec`` names (None: "none", the model chooses); each read once per process."""
    if spec.strip().lower() in OFF:
        return None
    if spec not in _CHOOSERS:
        _CHOOSERS[spec] = SourceChooser.load(spec)
    return _CHOOSERS[spec]


def source_candidates(
    hits: Sequence[SearchHit], similarities: np.ndarray, max_sources: int, margin: float | None
) -> list[SearchHit]:
    """The hits worth the model's reading time: at most ``max_sources``, and (with ``margin``) only those about as
    similar to the question as the best one."""
    best = float(similarities.max()) if len(similarities) else 0.0
    pairs = zip(hits, similarities, strict=True)
    kept = [hit for hit, similarity in pairs if margin is None or similarity >= best - margin]
    return kept[:max_sources]


class ChooseStage:
    """The learned chooser over an answer's candidate sources, with what it reads of them.

    ``definitions`` gives the definitions a statement relies on (the chooser reads their names as the statement's
    words); ``citing`` the sentences that cite each statement."""

    def __init__(
        self,
        quote: QuoteSettings,
        definitions: Definitions | None = None,
        citing: CitingSentences | None = None,
    ) -> None:
        self.quote = quote
        self.definitions = definitions
        self.citing = citing

    @property
    def chooser(self) -> SourceChooser | None:
        return load_chooser(self.quote.chooser)

    def features(
        self, question: Question, candidates: Sequence[SearchHit], relevance: Relevance, learned: bool
    ) -> SourceFeatures:
        """What the chooser reads of each candidate source (:mod:`rag_app.answering.source_features`)."""
        scope = self.definitions
        in_scope = (lambda statement_id: scope(statement_id, SCOPE_DEFINITIONS)) if scope is not None else None
        similarities = relevance.similarities[: len(candidates)]
        return SourceFeatures.of(question.asked, candidates, similarities, learned, in_scope, self.citing)

    def choose(
        self, chooser: SourceChooser, question: Question, candidates: Sequence[SearchHit], relevance: Relevance
    ) -> SourceChoice:
        """The chooser's reading of ``candidates`` (scored by the learned ranker: its features were fitted on
        those scores)."""
        return chooser.choose(self.features(question, candidates, relevance, learned=True))
