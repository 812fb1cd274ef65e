"""What the learned ranker knows of a (query, statement) pair: numbers the search has already computed.

Each candidate of the first stage gets one row of :data:`FEATURE_NAMES`:

- every channel's own score, that score relative to the channel's best among the candidates, and the
  reciprocal of the statement's rank there (dense, BM25, the lexical formula channel, the second
  model); a statement a channel did not return has no score there (NaN: LightGBM's "missing");
- the fused score and rank the first stage gave it;
- the query alone: its length, its formula share, how many formulas it holds;
- the statement alone: its kind, its source, its length, its formula share, whether it has a name;
- field matches: the share of the query's terms found in the statement's name, section, paper title,
  defined terms, label words and text, and how much of the name and section the query covers
  (a typed name covers its name whole);
- formula overlap: the share of the query's formula tokens found among the statement's.

Terms are BM25's (stemmed words, stop words dropped, whole LaTeX commands), so "fields" match "field".
The list is versioned: a model's card names the features it was trained on, and a model trained on
another list is refused rather than fed shifted columns.
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ingestion import StatementRecord
from retriever.text.formula_share import formula_share, formula_tokens
from retriever.text.math_tokenizer import tokenize
from retriever.text.query_formulas import query_formulas
from retriever.text.statement_profile import FIELDS, KINDS, SOURCES, StatementProfile
from retriever.types import SearchHit

# KINDS, SOURCES, FIELDS and StatementProfile are re-exported: code that imports them from here keeps working.
__all__ = ["FEATURE_NAMES", "FIELDS", "KINDS", "SOURCES", "StatementProfile", "StatementProfiles", "feature_matrix"]

FEATURES_VERSION = 1

# The channel that plays dense's part: MaRF modes search the fused formula-text vectors instead.
_CHANNEL_SLOTS: dict[str, str] = {"dense": "dense", "fusion": "dense", "bm25": "bm25", "formula": "formula",
                                  "dense2": "dense2"}  # fmt: skip
CHANNELS = ("dense", "bm25", "formula", "dense2")
_NAME, _SECTION = FIELDS.index("name"), FIELDS.index("section")

FEATURE_NAMES: tuple[str, ...] = (
    *(f"{channel}_{what}" for channel in CHANNELS for what in ("score", "score_rel", "rrank")),
    "first_stage_score",
    "first_stage_score_rel",
    "first_stage_rrank",
    "query_terms",
    "query_formula_share",
    "query_formulas",
    "kind",
    "source",
    "statement_log_length",
    "statement_formula_share",
    "has_name",
    *(f"query_in_{field}" for field in FIELDS),
    "name_covered",
    "section_covered",
    "formula_token_overlap",
)
CATEGORICAL = ("kind", "source")
# Opt-in (``training.ranker.graph_features``), appended after the list above: the statement graph's
# in- and out-degree of the candidate, how many of the first stage's top candidates it uses or is
# used by, and its PageRank within its paper (1.0: an average statement of its paper). A model's card
# says whether it was trained with them.
GRAPH_FEATURE_NAMES: tuple[str, ...] = ("uses_log", "used_by_log", "linked_to_top", "paper_pagerank")
TOP_LINKED = 5
# Opt-in (``training.ranker.citing_features``), appended after the blocks above: what the sentences citing
# the candidate say (:mod:`ingestion.citing_sentences`): how many statements cite it in a sentence, the
# share of the query's terms those sentences hold together and the best single sentence's share (a
# statement cited 200 times holds many words together; one sentence's match does not grow with the
# count), and the share of the query's terms found there and nowhere in the statement's own fields
# (the name it is known by, which it never writes itself).
CITING_FEATURE_NAMES: tuple[str, ...] = ("citing_log", "query_in_citing", "citing_best_share", "query_only_in_citing")


@dataclass(frozen=True, slots=True)
class QueryProfile:
    """What is read off the query once, for all its candidates."""

    terms: frozenset[str]
    formula_share: float
    formulas: int
    formula_tokens: frozenset[str]

    @classmethod
    def of(cls, query: str) -> QueryProfile:
        formulas = query_formulas(query)
        tokens = {token for formula in formulas for token in formula_tokens(formula)}
        return cls(frozenset(tokenize(query)), formula_share(query), len(formulas), frozenset(tokens))


class StatementProfiles:
    """The profiles of the statements ranked lately (least recently used dropped past ``max_statements``):
    a statement comes back search after search, and its profile costs about 0.25 ms to make (100
    candidates: 25 ms of a search). Keyed by every field a profile reads, so a statement that changed
    under its id gets a new one. ``kept``: the profiles made at ingest (the index's
    :class:`retriever.store.ranking_profiles.RankingProfiles` ``read``), asked for those not in memory
    before any is made."""

    def __init__(
        self,
        max_statements: int = 20_000,
        kept: Callable[[Sequence[str]], Mapping[str, StatementProfile]] | None = None,
    ) -> None:
        self.max_statements = max_statements
        self.kept = kept
        self._profiles: OrderedDict[tuple[object, ...], StatementProfile] = OrderedDict()
        self._lock = threading.Lock()

    def of_many(self, records: Sequence[StatementRecord]) -> list[StatementProfile]:
        """The profiles of ``records``, in their order: from memory, else as made at ingest, else made now."""
        keys = [_profile_key(record) for record in records]
        found: list[StatementProfile | None] = []
        with self._lock:
            for key in keys:
                profile = self._profiles.get(key)
                if profile is not None:
                    self._profiles.move_to_end(key)
                found.append(profile)
        missing = [row for row, profile in enumerate(found) if profile is None]
        if not missing:
            return found  # type: ignore[return-value]
        stored = self.kept([records[row].id for row in missing]) if self.kept is not None else {}
        made: list[tuple[tuple[object, ...], StatementProfile]] = []
        for row in missing:
            profile = stored.get(records[row].id) or StatementProfile.of(records[row])
            found[row] = profile
            made.append((keys[row], profile))
        with self._lock:
            for key, profile in made:
                self._profiles[key] = profile
            while len(self._profiles) > self.max_statements:
                self._profiles.popitem(last=False)
        return found  # type: ignore[return-value]

    def of(self, record: StatementRecord) -> StatementProfile:
        key = _profile_key(record)
        with self._lock:
            profile = self._profiles.get(key)
            if profile is not None:
                self._profiles.move_to_end(key)
                return profile
        profile = StatementProfile.of(record)
        with self._lock:
            self._profiles[key] = profile
            while len(self._profiles) > self.max_statements:
                self._profiles.popitem(last=False)
        return profile


def feature_matrix(query: str, hits: Sequence[SearchHit], profiles: StatementProfiles | None = None) -> np.ndarray:
    """One row of :data:`FEATURE_NAMES` per hit (float32; NaN where a channel did not return the hit);
    ``profiles``: the statements' profiles kept between calls (made afresh without)."""
    profile = QueryProfile.of(query)
    best = _best_scores(hits)
    top_fused = max((hit.score for hit in hits), default=0.0)
    records = [hit.record for hit in hits]
    statements = profiles.of_many(records) if profiles is not None else [StatementProfile.of(r) for r in records]
    rows = [_row(profile, hit, statement, best, top_fused) for hit, statement in zip(hits, statements, strict=True)]
    return np.asarray(rows, dtype=np.float32).reshape(len(rows), len(FEATURE_NAMES))


def graph_feature_matrix(
    hits: Sequence[SearchHit],
    counts: Mapping[str, tuple[int, int]],
    links: set[tuple[str, str]],
    pagerank: Mapping[str, float],
) -> np.ndarray:
    """One row of :data:`GRAPH_FEATURE_NAMES` per hit: ``counts`` (uses, used by), ``links`` (user,
    used) and ``pagerank`` from the statement graph (:class:`retriever.storage.statement_graph.StatementGraph`)."""
    top = [hit.record.id for hit in sorted(hits, key=lambda hit: hit.rank)[:TOP_LINKED]]
    rows = []
    for hit in hits:
        uses, used_by = counts.get(hit.record.id, (0, 0))
        linked = sum(1 for other in top if other != hit.record.id and
                     ((hit.record.id, other) in links or (other, hit.record.id) in links))  # fmt: skip
        rows.append([math.log1p(uses), math.log1p(used_by), float(linked), pagerank.get(hit.record.id, 1.0)])
    return np.asarray(rows, dtype=np.float32).reshape(len(rows), len(GRAPH_FEATURE_NAMES))


def citing_feature_matrix(
    query: str,
    hits: Sequence[SearchHit],
    citing_terms: Mapping[str, Sequence[frozenset[str]]],
    profiles: StatementProfiles | None = None,
) -> np.ndarray:
    """One row of :data:`CITING_FEATURE_NAMES` per hit: ``citing_terms`` holds the terms of each citing
    sentence of a statement (:meth:`retriever.storage.citing_text.CitingTexts.terms`)."""
    terms = QueryProfile.of(query).terms
    records = [hit.record for hit in hits]
    statements = profiles.of_many(records) if profiles is not None else [StatementProfile.of(r) for r in records]
    rows = []
    for hit, statement in zip(hits, statements, strict=True):
        sentences = citing_terms.get(hit.record.id, ())
        if not sentences:
            rows.append([0.0, 0.0, 0.0, 0.0])
            continue
        together = frozenset().union(*sentences)
        own = frozenset().union(*statement.field_terms)
        best = max(_share(terms, sentence) for sentence in sentences)
        rows.append([math.log1p(len(sentences)), _share(terms, together), best, _share(terms - own, together)])
    return np.asarray(rows, dtype=np.float32).reshape(len(rows), len(CITING_FEATURE_NAMES))


def _best_scores(hits: Sequence[SearchHit]) -> dict[str, float]:
    best: dict[str, float] = {}
    for hit in hits:
        for channel, score in hit.channel_scores.items():
            slot = _CHANNEL_SLOTS.get(channel)
            if slot is not None:
                best[slot] = max(best.get(slot, -math.inf), score)
    return best


def _row(
    profile: QueryProfile, hit: SearchHit, statement: StatementProfile, best: dict[str, float], top_fused: float
) -> list[float]:
    row: list[float] = []
    scores = {_CHANNEL_SLOTS[c]: s for c, s in hit.channel_scores.items() if c in _CHANNEL_SLOTS}
    ranks = {_CHANNEL_SLOTS[c]: r for c, r in hit.channel_ranks.items() if c in _CHANNEL_SLOTS}
    for channel in CHANNELS:
        score = scores.get(channel)
        if score is None:
            row += [math.nan, math.nan, 0.0]
            continue
        top = best.get(channel, score)
        row += [score, score / top if top > 0 else 0.0, 1.0 / ranks.get(channel, 1_000)]
    row += [hit.score, hit.score / top_fused if top_fused > 0 else 0.0, 1.0 / hit.rank]
    row += [float(len(profile.terms)), profile.formula_share, float(profile.formulas)]
    row += statement.columns
    for terms in statement.field_terms:
        row.append(_share(profile.terms, terms))
    row.append(_share(statement.field_terms[_NAME], profile.terms))
    row.append(_share(statement.field_terms[_SECTION], profile.terms))
    row.append(_share(profile.formula_tokens, statement.formula_tokens))
    return row


def _profile_key(record: StatementRecord) -> tuple[object, ...]:
    """Every field :meth:`StatementProfile.of` reads (their strings come from the store's cache, so hashing
    them is mostly reading a hash kept on each string)."""
    return (record.id, record.text, record.name, record.section, record.title, record.label, record.formulas,
            record.kind, record.source, str(record.metadata.get("subsection", "")),
            str(record.metadata.get("defined_terms", "")))  # fmt: skip


def _share(part: frozenset[str] | set[str], whole: frozenset[str] | set[str]) -> float:
    """The share of ``part`` found in ``whole`` (0 for an empty ``part``)."""
    return len(part & whole) / len(part) if part else 0.0
