"""A learned ranker (LightGBM LambdaMART) that reorders the first stage's top candidates.

It reads only what the search already computed (:mod:`retriever.models.ranking_features`), so it needs no
GPU, trains in minutes on a CPU (``rag-app train ranker``) and scores 100 candidates in about a
millisecond. A ranker directory holds::

    card.json    kind, the embedder and query adapter it was trained with, the feature list, training
                 data and held-out metrics
    model.txt    the LightGBM booster (text format: small, diffable, loadable by any LightGBM)

The channels' scores depend on the embedder (cosines) and on the dense channel's query adapter, so
``packaged`` names the one shipped for the embedder in use (``retriever/learned_ranker_weights/`` holds
one directory per embedder identity), as for query adapters.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from retriever.models.embedder_artifact import EmbedderArtifact
from retriever.models.ranking_features import (
    CITING_FEATURE_NAMES,
    FEATURE_NAMES,
    FEATURES_VERSION,
    GRAPH_FEATURE_NAMES,
    StatementProfiles,
    citing_feature_matrix,
    feature_matrix,
    graph_feature_matrix,
)
from retriever.storage.atomic_files import directory_written_whole
from retriever.types import SearchHit

if TYPE_CHECKING:
    from retriever.storage.statement_graph import StatementGraph

PACKAGED_RANKER_DIR = Path(__file__).parent / "learned_ranker_weights"
CARD = "card.json"
MODEL = "model.txt"
KIND = "learned-ranker"
BUILD_COMMAND = "rag-app train ranker"


def graph_features(hits: list[SearchHit], graph: StatementGraph | None) -> np.ndarray:
    """The graph's feature columns for ``hits`` (missing, NaN, without a graph or where it cannot be read)."""
    if graph is not None:
        ids = [hit.record.id for hit in hits]
        try:
            return graph_feature_matrix(hits, graph.counts(ids), graph.links_among(ids), graph.paper_pagerank(ids))
        except sqlite3.DatabaseError:
            pass  # a damaged graph: `rag-app status` names it; the ranker scores without it
    return np.full((len(hits), len(GRAPH_FEATURE_NAMES)), np.nan, dtype=np.float32)


def citing_features(
    query: str, hits: list[SearchHit], graph: StatementGraph | None, profiles: StatementProfiles | None = None
) -> np.ndarray:
    """The citing sentences' feature columns for ``hits`` (missing, NaN, without a graph or where it
    cannot be read)."""
    if graph is not None:
        try:
            cited = graph.citing_text.terms([hit.record.id for hit in hits])
            return citing_feature_matrix(query, hits, cited, profiles)
        except sqlite3.DatabaseError:
            pass  # a damaged graph: `rag-app status` names it; the ranker scores without it
    return np.full((len(hits), len(CITING_FEATURE_NAMES)), np.nan, dtype=np.float32)


def feature_names(graph: bool = False, citing: bool = False) -> tuple[str, ...]:
    """The columns a ranker reads: the base list, then the graph's, then the citing sentences' block."""
    return (*FEATURE_NAMES, *(GRAPH_FEATURE_NAMES if graph else ()), *(CITING_FEATURE_NAMES if citing else ()))


KNOWN_FEATURE_LISTS = tuple(feature_names(graph, citing) for graph in (False, True) for citing in (False, True))


class LearnedRankerError(RuntimeError):
    """The learned ranker is missing, unreadable, or was trained for another embedder or feature list."""


RANKERS = EmbedderArtifact("learned ranker", PACKAGED_RANKER_DIR, (CARD, MODEL), BUILD_COMMAND, "ranker.model = none",
                           LearnedRankerError)  # fmt: skip
packaged_directory = RANKERS.packaged_directory


@dataclass
class LearnedRanker:
    booster: Any  # lightgbm.Booster
    card: dict[str, Any] = field(default_factory=dict)
    # What is read off each statement alone, kept between searches (the larger part of a row's cost)
    profiles: StatementProfiles = field(default_factory=StatementProfiles, repr=False, compare=False)

    @property
    def embedder(self) -> str:
        return str(self.card.get("embedder", ""))

    @property
    def identity(self) -> str:
        return str(self.card.get("identity", ""))

    @property
    def mode(self) -> str:
        """The search mode whose candidates it was trained to order (``hybrid-formula``): another mode's
        channels give other features (dense alone has no BM25 score), which it was never shown."""
        return str(self.card.get("first_stage", "hybrid-formula")).split("+")[0]

    @property
    def graph_features(self) -> bool:
        """Trained with the statement graph's features too (``training.ranker.graph_features``)."""
        return GRAPH_FEATURE_NAMES[0] in tuple(self.card.get("features", ()))

    @property
    def citing_features(self) -> bool:
        """Trained with the citing sentences' features too (``training.ranker.citing_features``)."""
        return CITING_FEATURE_NAMES[0] in tuple(self.card.get("features", ()))

    def scores(
        self, query: str, hits: list[SearchHit], graph: StatementGraph | None = None, hidden: Sequence[str] = ()
    ) -> np.ndarray:
        """The model's score of each hit for ``query`` (higher is better); ``graph``: the index's
        statement graph, read when the model uses its features (missing without it); ``hidden``: features
        read as missing (``query_in_label`` to judge the ranker on a set made of label words)."""
        if not hits:
            return np.zeros(0, dtype=np.float64)
        features = feature_matrix(query, hits, self.profiles)
        if self.graph_features:
            features = np.hstack([features, graph_features(hits, graph)])
        if self.citing_features:
            features = np.hstack([features, citing_features(query, hits, graph, self.profiles)])
        if hidden:  # an evaluation's setting; a search hides nothing
            names = list(self.card.get("features") or FEATURE_NAMES)
            for name in hidden:
                if name not in names:
                    raise LearnedRankerError(f"ranker.hide_features: no feature {name!r} (known: {', '.join(names)})")
                features[:, names.index(name)] = np.nan
        # num_threads=1: 100 rows are scored faster on one thread than the pool takes to wake
        return np.asarray(self.booster.predict(features, num_threads=1), dtype=np.float64)

    @classmethod
    def load(cls, spec: str, embedder_identity: str | None = None) -> LearnedRanker:
        """``packaged`` (the one shipped for ``embedder_identity``) or a ``train ranker`` directory,
        checked against the embedder in use and this version's feature list."""
        directory, what = RANKERS.locate(spec, embedder_identity)
        card_path, model_path = directory / CARD, directory / MODEL
        import lightgbm

        try:
            card = json.loads(card_path.read_text(encoding="utf-8"))
            booster = lightgbm.Booster(model_str=model_path.read_text(encoding="utf-8"))
        except (OSError, ValueError, lightgbm.basic.LightGBMError) as error:
            raise LearnedRankerError(f"{directory}: unreadable learned ranker ({error}); rebuild it with "
                                     f"`{BUILD_COMMAND}`") from error  # fmt: skip
        if card.get("kind") != KIND:
            raise LearnedRankerError(f"{directory} is not a learned ranker; build one with `{BUILD_COMMAND}`")
        features = tuple(card.get("features", ()))
        if card.get("features_version") != FEATURES_VERSION or features not in KNOWN_FEATURE_LISTS:
            raise LearnedRankerError(
                f"{what} was trained on another feature list (version {card.get('features_version')}, this "
                f"version computes {FEATURES_VERSION}); retrain it with `{BUILD_COMMAND}`"
            )
        ranker = cls(booster, card)
        RANKERS.check_embedder(what, ranker.embedder, embedder_identity)
        return ranker

    @classmethod
    def configured(cls, spec: str | None, embedder_identity: str) -> LearnedRanker | None:
        """The ranker a setting names (``auto``, ``packaged``, ``none``, a directory; see
        :class:`retriever.models.embedder_artifact.EmbedderArtifact`)."""
        return RANKERS.configured(spec, embedder_identity, cls.load)

    def save(self, directory: Path) -> Path:
        """Write the ranker (replacing what was there)."""
        with directory_written_whole(directory) as partial:
            (partial / MODEL).write_text(self.booster.model_to_string(), encoding="utf-8")
            (partial / CARD).write_text(json.dumps(self.card, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        return directory
