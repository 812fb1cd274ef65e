"""Run retrievers over a query set and score them side by side.

from rag_app.evaluation import QuerySet, evaluate
result = evaluate(["bm25", "dense", "hybrid"], QuerySet.load("eval/sets/stacks-names.v1.jsonl"), index=rag.index)
print(result.table())
"""

from __future__ import annotations

import time
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field

import numpy as np
from tqdm import tqdm

from rag_app.datasets.paper_split import SEEN, TRAINED, UNSEEN, PaperSplit
from rag_app.datasets.query_set import EvalQuery, Protocol, QuerySet, judged
from rag_app.evaluation.measures import (
    MEASURES,
    PAPER_MEASURES,
    PRIMARY,
    PerQuery,
    mean,
    paper_level,
    per_query_values,
)
from rag_app.evaluation.retrievers import Retriever, build_retriever
from rag_app.evaluation.significance import PairedTest, paired_test
from rag_app.evaluation.trec_files import MAX_RUN_DEPTH, Run
from rag_app.search.search_stack import SearchStack
from rag_app.settings import PaperSettings, Settings
from retriever import StatementIndex
from retriever.text.formula_share import SLICES, formula_share, formula_slice

# Results per query when none is asked for: ARQMath runs go 1000 deep; MAP@100 needs 100.
DEFAULT_DEPTH = {Protocol.ARQMATH: MAX_RUN_DEPTH, Protocol.RELEVANT_SET: 100, Protocol.KNOWN_ITEM: 100}


@dataclass
class RetrieverScores:
    """One retriever's results on one query set."""

    name: str
    run: Run
    per_query: PerQuery
    aggregate: dict[str, float]
    slices: dict[str, dict[str, float]]
    groups: dict[str, dict[str, float]]
    seconds: float
    latencies_ms: list[float] = field(default_factory=list)  # per query, in query order

    @property
    def ms_per_query(self) -> float:
        return 1000 * self.seconds / max(len(self.run), 1)

    def latency_percentile(self, percent: float) -> float:
        """The query latency below which ``percent`` of the queries fall (nan without queries)."""
        if not self.latencies_ms:
            return float("nan")
        return float(np.percentile(self.latencies_ms, percent))


@dataclass
class SetEvaluation:
    """Every retriever on one query set, with slices, groups and paired tests against the first."""

    query_set: QuerySet
    k: int
    measures: list[str]
    primary: str
    retrievers: list[RetrieverScores]
    slice_sizes: dict[str, int]
    group_sizes: dict[str, int]
    skipped: list[str] = field(default_factory=list)
    significance: list[PairedTest] = field(default_factory=list)

    @property
    def scored(self) -> int:
        return len(self.query_set.queries) - len(self.skipped)

    def test(self, candidate: str, measure: str) -> PairedTest | None:
        for test in self.significance:
            if test.candidate == candidate and test.measure == measure:
                return test
        return None


def evaluate(
    retrievers: Sequence[Retriever | str],
    query_set: QuerySet,
    index: StatementIndex | SearchStack | None = None,
    k: int | None = None,
    seen_papers: Collection[str] | None = None,
    resamples: int = 10_000,
    show_progress: bool = False,
    split: PaperSplit | None = None,
    papers: PaperSettings | None = None,
) -> SetEvaluation:
    """Score ``retrievers`` (objects, or names resolved against ``index``) on ``query_set``.

    ``index``: the search stack that names resolve against, or an index (searched as the settings say).

    ``k``: results per query (default by protocol, see :data:`DEFAULT_DEPTH`).
    ``seen_papers``: papers the embedding was trained on; when given, the thesis's seen/unseen split
    is reported. ``split``: the training split of a fine-tuned embedding (``train embed`` writes it);
    queries are then grouped into statements trained on, held-out statements of seen papers, and
    unseen papers. Queries without judgments are skipped and listed, as ARQMath does.
    ``papers``: how `search --papers` ranks papers; queries whose papers are known are also scored
    at the paper level (paper Hit@k, paper MRR@10) with that ranking.
    """
    if not retrievers:
        raise ValueError("evaluate needs at least one retriever")
    protocol = query_set.protocol
    k = min(k or DEFAULT_DEPTH[protocol], MAX_RUN_DEPTH)
    stack = SearchStack(Settings.load(), index) if isinstance(index, StatementIndex) else index
    resolved = [build_retriever(r, stack) if isinstance(r, str) else r for r in retrievers]
    measures = list(MEASURES[protocol])
    queries, skipped = judged(query_set.queries)
    qrels = {q.qid: dict(q.relevant) for q in queries}
    slice_of = {q.qid: formula_slice(formula_share(q.text)) for q in queries if q.text.strip()}
    group_of = _groups(queries, seen_papers, split)
    paper_qrels = {q.qid: q.paper_ids for q in queries}
    with_papers = protocol is not Protocol.ARQMATH and any(paper_qrels.values())
    papers = papers or PaperSettings()

    scores: list[RetrieverScores] = []
    for retriever in resolved:
        started = time.perf_counter()
        run: Run = {}
        latencies: list[float] = []
        for query in tqdm(queries, desc=f"{query_set.name}: {retriever.name}", unit="q", disable=not show_progress):
            query_started = time.perf_counter()
            run[query.qid] = retriever.retrieve(query, k)
            latencies.append(1000 * (time.perf_counter() - query_started))
        seconds = time.perf_counter() - started
        values = per_query_values(measures, qrels, run)
        if with_papers:
            paper_run = paper_level(paper_qrels, run, papers.aggregation, papers.top_m)
            if paper_run is not None:
                values.update(per_query_values(PAPER_MEASURES, *paper_run))
            else:  # unknown, not zero
                values.update({m.name: dict.fromkeys(qrels, float("nan")) for m in PAPER_MEASURES})
        scores.append(
            RetrieverScores(
                name=retriever.name,
                run=run,
                per_query=values,
                aggregate={name: mean(by_query) for name, by_query in values.items()},
                slices=_means_by(values, slice_of),
                groups=_means_by(values, group_of),
                seconds=seconds,
                latencies_ms=latencies,
            )
        )

    names = [m.name for m in measures] + ([m.name for m in PAPER_MEASURES] if with_papers else [])
    baseline = scores[0]
    tests = [
        paired_test(baseline.name, other.name, name, baseline.per_query[name], other.per_query[name], resamples)
        for other in scores[1:]
        for name in names
    ]
    return SetEvaluation(
        query_set=query_set,
        k=k,
        measures=names,
        primary=PRIMARY[protocol],
        retrievers=scores,
        slice_sizes=_sizes(slice_of, [name for name, _, _ in SLICES]),
        group_sizes=_sizes(group_of, [TRAINED, SEEN, UNSEEN]),
        skipped=[q.qid for q in skipped],
        significance=tests,
    )


def _groups(
    queries: Sequence[EvalQuery], seen_papers: Collection[str] | None, split: PaperSplit | None
) -> dict[str, str]:
    if split is not None:
        return {q.qid: split.group([d for d, grade in q.relevant.items() if grade > 0], q.paper_ids) for q in queries}
    if seen_papers is None:
        return {}
    seen = set(seen_papers)
    return {q.qid: SEEN if seen.intersection(q.paper_ids) else UNSEEN for q in queries}


def _means_by(values: PerQuery, bucket_of: dict[str, str]) -> dict[str, dict[str, float]]:
    buckets: dict[str, list[str]] = {}
    for qid, bucket in bucket_of.items():
        buckets.setdefault(bucket, []).append(qid)
    return {
        bucket: {name: mean(by_query, qids) for name, by_query in values.items()} for bucket, qids in buckets.items()
    }


def _sizes(bucket_of: dict[str, str], order: list[str]) -> dict[str, int]:
    counts = {name: 0 for name in order}
    for bucket in bucket_of.values():
        counts[bucket] = counts.get(bucket, 0) + 1
    return {name: count for name, count in counts.items() if count}
