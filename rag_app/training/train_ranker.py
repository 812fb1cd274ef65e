"""The ``train ranker`` job: an ingested index in, a learned ranker (LightGBM LambdaMART) out.

Queries are made from the index's *training* statements the way ``train query-adapter`` and ``train
rerank`` make theirs (names, defined terms, section titles, label words, MSE titles, formulas, and the
generated questions when the questions file has them), at most ``max_queries_per_kind`` of each kind
so that label words, thirty times as many as names, do not decide every split. Each query is searched
with the first stage the ranker will sit on (``hybrid-formula`` by default, with the configured query
adapter); its ``candidates`` results become one LambdaMART group, the query's statements labelled 1.
Queries whose statement the first stage did not return teach nothing and are counted, not used.
The field a query was copied from is hidden in its rows (see ``SOURCE_FIELD_FEATURES``).
Queries made from held-out statements (papers never trained on) stop the boosting early and give the
card's before/after figures. No evaluation set is read.

The features of a corpus and settings are kept in the work directory, so a second run with other
LightGBM settings trains in seconds.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import random
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

from ingestion import StatementRecord
from rag_app.datasets.paper_split import split_of
from rag_app.settings import Settings
from rag_app.training.index_store import open_index_store
from rag_app.training.question_file import QuestionFile
from rag_app.training.train_questions import default_questions_file
from rag_app.training.training_pairs import pairs_without_llm
from retriever.models.learned_ranker import (
    KIND,
    LearnedRanker,
    citing_features,
    feature_names,
    graph_features,
    packaged_directory,
)
from retriever.models.ranking_features import CATEGORICAL, FEATURE_NAMES, FEATURES_VERSION, feature_matrix
from retriever.search_mode import SearchMode
from retriever.storage.statement_graph import StatementGraph
from retriever.types import SearchHit, StatementSearcher

FEATURES_FILE = "features.npz"

# A training query copied from a field (a name, a label's words, a defined term) matches that field
# whole, which a user's question never does: trained on it, the ranker trusted label matches and lost
# to the first stage on both development sets (research questions MRR@10 0.761 -> 0.695, slogans 0.445 ->
# 0.413). So the field a query was made from is hidden (LightGBM's "missing") in its rows: the ranker
# learns from the channels and from the fields the query was not copied from.
SOURCE_FIELD_FEATURES: dict[str, tuple[str, ...]] = {
    "name": ("query_in_name", "name_covered"),
    "label": ("query_in_label",),
    "defined-term": ("query_in_defined_terms",),
    "section": ("query_in_section", "section_covered"),
}
MASKING_VERSION = 1


@dataclass(frozen=True, slots=True)
class RankingQuery:
    """One training or held-out query: its text, kind and the statements that answer it."""

    text: str
    kind: str
    answers: frozenset[str]


@dataclass
class QueryGroups:
    """The feature rows of many queries, one LambdaMART group each (rows in query order)."""

    features: np.ndarray  # (rows, len(FEATURE_NAMES))
    labels: np.ndarray  # (rows,) 1 for an answer
    sizes: np.ndarray  # rows per query
    kinds: list[str]  # per query
    found: np.ndarray  # per query: the answer among the candidates (bool); unfound queries have no rows
    first_ranks: np.ndarray  # per query: the answer's first-stage rank among the candidates, 0 when not found

    def save(self, path: Path) -> None:
        np.savez_compressed(path, features=self.features, labels=self.labels, sizes=self.sizes,
                            kinds=np.array(self.kinds), found=self.found, first_ranks=self.first_ranks)  # fmt: skip

    @classmethod
    def load(cls, path: Path) -> QueryGroups:
        with np.load(path) as data:
            return cls(data["features"], data["labels"], data["sizes"], [str(k) for k in data["kinds"]],
                       data["found"], data["first_ranks"])  # fmt: skip


@dataclass
class TrainRankerReport:
    directory: Path
    ranker: LearnedRanker
    queries: dict[str, int]
    seconds: float
    reused_features: bool


class TrainRankerJob:
    def __init__(self, settings: Settings, index_dir: Path, out_dir: Path | None = None) -> None:
        self.settings = settings
        self.training = settings.training.ranker
        self.index_dir = index_dir
        self.work_dir = settings.data_dir / "training" / "ranker" / self.training.name
        self.out_dir = out_dir or settings.data_dir / "models" / "rankers" / self.training.name
        self.feature_names = feature_names(self.training.graph_features, self.training.citing_features)
        reads_graph = self.training.graph_features or self.training.citing_features
        self.graph: StatementGraph | None = StatementGraph(index_dir) if reads_graph else None

    def run(self, show_progress: bool = False, log=print, reuse: bool = True) -> TrainRankerReport:
        import lightgbm

        from rag_app.pipeline import MathRAG

        started = time.perf_counter()
        store, manifest = open_index_store(self.index_dir, self.settings.store.connection())
        records = list(store.iter_records())
        if not records:
            raise ValueError(f"the index in {self.index_dir} holds no statements")
        split = split_of(records, self.settings.training.embed)  # the split every training job uses
        train_records = split.training_records(records)
        held_out = [record for record in records if not split.is_training(record)]
        training_queries = self._queries(train_records, True, self.training.max_queries_per_kind)
        held_out_queries = self._queries(held_out, False, self.training.held_out_queries_per_kind)
        validation = "held-out papers"
        if not held_out_queries:  # a small corpus: every paper trains; a seeded fifth of its queries checks
            rng = random.Random(self.training.seed)
            held_out_queries = rng.sample(training_queries, len(training_queries) // 5)
            checking = set(held_out_queries)
            training_queries = [query for query in training_queries if query not in checking]
            validation = "a fifth of the training queries (no held-out paper gave one)"
        if len(training_queries) < 10 or not held_out_queries:
            raise ValueError(
                f"too few queries ({len(training_queries)} training, {len(held_out_queries)} held out) from "
                f"{self.index_dir}; ingest more statements first"
            )
        log(f"{len(records):,} statements; split: {split.summary()}; queries: {_count(training_queries)} "
            f"training, {len(held_out_queries)} held out")  # fmt: skip
        rag = MathRAG(self.settings.with_overrides({"index_dir": self.index_dir}))
        try:
            stack = rag.search_stack
            adapter = stack.ranker.query_adapter
            fingerprint = self._fingerprint(records, training_queries, held_out_queries, adapter)
            self.work_dir.mkdir(parents=True, exist_ok=True)
            cached = self.work_dir / FEATURES_FILE
            fingerprint_path = self.work_dir / "fingerprint.txt"
            reused = reuse and cached.is_file() and fingerprint_path.is_file() and (
                fingerprint_path.read_text().strip() == fingerprint
            )  # fmt: skip
            first_stage = stack.first_stage(self.training.second_embedding)
            if reused:
                log(f"reusing the features in {self.work_dir}")
                train_groups = QueryGroups.load(cached)
                valid_groups = QueryGroups.load(self.work_dir / f"held-out-{FEATURES_FILE}")
            else:
                train_groups = self._groups(first_stage, training_queries, "training queries", show_progress)
                valid_groups = self._groups(first_stage, held_out_queries, "held-out queries", show_progress)
                train_groups.save(cached)
                valid_groups.save(self.work_dir / f"held-out-{FEATURES_FILE}")
                fingerprint_path.write_text(fingerprint + "\n")
            embedder = rag.index.embedder.identity
        finally:
            rag.close()
        fit_started = time.perf_counter()
        booster = self._fit(lightgbm, train_groups, valid_groups)
        fit_seconds = time.perf_counter() - fit_started
        card: dict[str, Any] = {
            "kind": KIND,
            "identity": f"{self.training.name}-{fingerprint[:10]}",
            "embedder": embedder,
            "query_adapter": adapter.identity if adapter is not None else "none",
            "index_embedder": manifest.get("embedder"),
            "first_stage": self.training.mode + ("+dense2" if self.training.second_embedding else ""),
            "candidates": self.settings.ranker.candidates,
            "features_version": FEATURES_VERSION,
            "features": list(self.feature_names),
            "hidden_source_fields": {kind: list(names) for kind, names in SOURCE_FIELD_FEATURES.items()},
            "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "machine": f"{platform.platform()}, {os.cpu_count()} CPUs",
            "training": self.training.model_dump(mode="json"),
            "data": {
                "statements": len(records),
                "train_statements": len(train_records),
                "queries_by_kind": _kind_counts(train_groups.kinds),
                "queries_with_answer_in_candidates": int(train_groups.found.sum()),
                "held_out_queries": len(valid_groups.kinds),
                "held_out_from": validation,
                "fingerprint": fingerprint,
            },
            "split": split.summary(),
            "cost": {
                "seconds_total": round(time.perf_counter() - started, 1),
                "seconds_fit": round(fit_seconds, 1),
                "trees": booster.num_trees(),
            },
            "importance_gain": _importance(booster, self.feature_names),
            "metrics": {"held_out": held_out_metrics(booster, valid_groups)},
        }
        ranker = LearnedRanker(booster, card)
        ranker.save(self.out_dir)
        split.save(self.out_dir / "split.json")
        return TrainRankerReport(
            self.out_dir, ranker, _kind_counts(train_groups.kinds), round(time.perf_counter() - started, 1), reused
        )

    def _queries(self, records: list[StatementRecord], include_questions: bool, per_kind: int) -> list[RankingQuery]:
        """At most ``per_kind`` queries of each kind, seeded; an anchor's answers are every statement it
        was made from."""
        embed_training = self.settings.training.embed
        pairs = pairs_without_llm(records, embed_training.per_anchor, embed_training.mse_min_score, self.training.seed)
        if include_questions:
            questions = QuestionFile.load(default_questions_file(self.settings))
            pairs.extend(questions.pairs({record.id for record in records}))
        answers: dict[tuple[str, str], set[str]] = defaultdict(set)
        for pair in pairs:
            if pair.kind in self.training.pair_kinds:
                answers[(pair.kind, pair.anchor)].add(pair.statement_id)
        by_kind: dict[str, list[RankingQuery]] = defaultdict(list)
        for (kind, anchor), ids in sorted(answers.items()):
            by_kind[kind].append(RankingQuery(anchor, kind, frozenset(ids)))
        rng = random.Random(self.training.seed)
        chosen: list[RankingQuery] = []
        for kind in sorted(by_kind):
            queries = by_kind[kind]
            chosen.extend(queries if len(queries) <= per_kind else rng.sample(queries, per_kind))
        return chosen

    def _groups(
        self, first_stage: StatementSearcher, queries: list[RankingQuery], what: str, show_progress: bool
    ) -> QueryGroups:
        mode = SearchMode(self.training.mode)
        depth = self.settings.ranker.candidates
        features: list[np.ndarray] = []
        labels: list[np.ndarray] = []
        sizes: list[int] = []
        found: list[bool] = []
        first_ranks: list[int] = []
        for query in tqdm(queries, desc=what, unit="query", disable=not show_progress):
            hits: list[SearchHit] = first_stage.search(query.text, depth, mode)
            relevant = np.array([hit.record.id in query.answers for hit in hits], dtype=np.float32)
            found.append(bool(relevant.any()))
            first_ranks.append(int(np.argmax(relevant)) + 1 if relevant.any() else 0)
            if not relevant.any():
                continue  # nothing to order: the first stage missed the answer
            rows = feature_matrix(query.text, hits)
            if self.training.graph_features:
                rows = np.hstack([rows, graph_features(hits, self.graph)])
            if self.training.citing_features:
                rows = np.hstack([rows, citing_features(query.text, hits, self.graph)])
            for name in SOURCE_FIELD_FEATURES.get(query.kind, ()):
                rows[:, FEATURE_NAMES.index(name)] = np.nan
            features.append(rows)
            labels.append(relevant)
            sizes.append(len(hits))
        width = len(self.feature_names)
        return QueryGroups(
            np.concatenate(features) if features else np.zeros((0, width), dtype=np.float32),
            np.concatenate(labels) if labels else np.zeros(0, dtype=np.float32),
            np.array(sizes, dtype=np.int64),
            [query.kind for query in queries],
            np.array(found, dtype=bool),
            np.array(first_ranks, dtype=np.int64),
        )

    def _row_weights(self, groups: QueryGroups) -> np.ndarray | None:
        """Each row weighted by its query's kind (``kind_weights``); LambdaMART scales a query's gradients by
        it. None when no kind is weighted."""
        weights = self.training.kind_weights
        if not weights:
            return None
        grouped = [kind for kind, found in zip(groups.kinds, groups.found, strict=True) if found]  # have rows
        per_query = np.array([weights.get(kind, 1.0) for kind in grouped], dtype=np.float64)
        return np.repeat(per_query, groups.sizes)

    def _fit(self, lightgbm: Any, train: QueryGroups, valid: QueryGroups) -> Any:
        training = self.training
        params = {
            "objective": "lambdarank",
            "metric": "ndcg",
            "eval_at": [10],
            "learning_rate": training.learning_rate,
            "num_leaves": training.leaves,
            "min_child_samples": training.min_child_samples,
            "feature_fraction": training.feature_fraction,
            "bagging_fraction": training.bagging_fraction,
            "bagging_freq": 1 if training.bagging_fraction < 1 else 0,
            "seed": training.seed,
            "deterministic": True,
            "num_threads": os.cpu_count() or 1,
            "verbosity": -1,
        }
        if not len(train.sizes):
            raise ValueError(
                f"the first stage ({training.mode}) found no training query's statement in {self.index_dir}"
            )
        categorical = [FEATURE_NAMES.index(name) for name in CATEGORICAL]
        names = list(self.feature_names)
        train_set = lightgbm.Dataset(train.features, train.labels, group=train.sizes, feature_name=names,
                                     categorical_feature=categorical, weight=self._row_weights(train))  # fmt: skip
        if not len(valid.sizes):  # nothing to stop on: the configured number of trees
            return lightgbm.train(params, train_set, num_boost_round=training.trees)
        valid_set = lightgbm.Dataset(valid.features, valid.labels, group=valid.sizes, reference=train_set)
        return lightgbm.train(
            params,
            train_set,
            num_boost_round=training.trees,
            valid_sets=[valid_set],
            callbacks=[lightgbm.early_stopping(30, verbose=False)],
        )

    def _fingerprint(
        self, records: list[StatementRecord], train: list[RankingQuery], held_out: list[RankingQuery], adapter: Any
    ) -> str:
        """Same corpus, queries, first stage and feature list: the kept features can be reused."""
        data = {
            "queries": [[q.text, q.kind, sorted(q.answers)] for q in [*train, *held_out]],
            "mode": self.training.mode,
            "second": self.training.second_embedding,
            "candidates": self.settings.ranker.candidates,
            "features": [FEATURES_VERSION, *self.feature_names],
            "masking": [MASKING_VERSION, sorted(SOURCE_FIELD_FEATURES.items())],
            "adapter": adapter.identity if adapter is not None else "none",
            "retrieval": self.settings.retrieval.model_dump(mode="json"),
        }
        digest = hashlib.sha256(json.dumps(data, sort_keys=True).encode())
        for record_id in sorted(record.id for record in records):
            digest.update(record_id.encode())
        return digest.hexdigest()[:16]


def held_out_metrics(booster: Any, groups: QueryGroups) -> dict[str, Any]:
    """MRR@10 and Hit@10 of the first stage and of the ranker on held-out queries, by kind (a query whose
    answer the first stage did not return counts as a miss for both)."""
    before: dict[str, list[float]] = defaultdict(list)
    after: dict[str, list[float]] = defaultdict(list)
    scores = booster.predict(groups.features) if len(groups.features) else np.zeros(0)
    start, group = 0, 0
    for kind, found, first_rank in zip(groups.kinds, groups.found, groups.first_ranks, strict=True):
        if not found:
            before[kind].append(0.0)
            after[kind].append(0.0)
            continue
        size = int(groups.sizes[group])
        labels, predicted = groups.labels[start : start + size], scores[start : start + size]
        order = np.argsort(-predicted, kind="stable")
        new_rank = int(np.flatnonzero(labels[order])[0]) + 1
        before[kind].append(1.0 / first_rank if first_rank <= 10 else 0.0)
        after[kind].append(1.0 / new_rank if new_rank <= 10 else 0.0)
        start, group = start + size, group + 1

    def summary(values: dict[str, list[float]]) -> dict[str, float]:
        flat = [value for kind in values for value in values[kind]]
        return {"mrr@10": round(float(np.mean(flat)), 3), "hit@10": round(float(np.mean([v > 0 for v in flat])), 3)}

    return {
        "queries": len(groups.kinds),
        "first_stage": summary(before),
        "ranker": summary(after),
        "by_kind": {
            kind: {
                "queries": len(before[kind]),
                "first_stage_mrr@10": round(float(np.mean(before[kind])), 3),
                "ranker_mrr@10": round(float(np.mean(after[kind])), 3),
            }
            for kind in sorted(before)
        },
    }


def publish_ranker(directory: Path) -> Path:
    """Ship a trained ranker inside the package, beside those of other embedders (``ranker.model =
    "packaged"``, or ``"auto"`` with the embedder it was trained for)."""
    ranker = LearnedRanker.load(str(directory))
    return ranker.save(packaged_directory(ranker.embedder))


def _importance(booster: Any, names: tuple[str, ...]) -> dict[str, float]:
    gains = booster.feature_importance(importance_type="gain")
    total = float(gains.sum()) or 1.0
    ranked = sorted(zip(names, gains, strict=True), key=lambda item: -item[1])
    return {name: round(float(gain) / total, 4) for name, gain in ranked if gain > 0}


def _count(queries: list[RankingQuery]) -> dict[str, int]:
    return _kind_counts([query.kind for query in queries])


def _kind_counts(kinds: list[str]) -> dict[str, int]:
    counts: dict[str, int] = defaultdict(int)
    for kind in kinds:
        counts[kind] += 1
    return dict(sorted(counts.items()))
