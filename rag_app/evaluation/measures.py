"""The measures each protocol reports, computed with ir-measures (pytrec_eval underneath).

Per-query values are kept for slices and significance tests. A query with judgments but no results
scores 0 on every measure (as ``trec_eval -c`` counts it); a query without judgments is skipped.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import ir_measures
from ir_measures import AP, RR, Bpref, P, R, Success, nDCG

from rag_app.datasets.query_set import Protocol
from rag_app.evaluation.trec_files import Qrels, RunEntry, strictly_decreasing
from retriever.search.paper_searcher import PaperAggregation, aggregate


@dataclass(frozen=True, slots=True)
class NamedMeasure:
    """A measure as a report names it ("nDCG'") and as ir-measures computes it."""

    name: str
    measure: ir_measures.Measure


MEASURES: dict[Protocol, tuple[NamedMeasure, ...]] = {
    # ARQMath: graded nDCG over judged documents only; MAP' and P'@10 with grades 2-3 relevant.
    Protocol.ARQMATH: (
        NamedMeasure("nDCG'", nDCG(judged_only=True)),
        NamedMeasure("MAP'", AP(rel=2, judged_only=True)),
        NamedMeasure("P'@10", P(rel=2, judged_only=True) @ 10),
        NamedMeasure("bpref", Bpref(rel=2)),
    ),
    # The reference thesis's table.
    Protocol.RELEVANT_SET: (
        NamedMeasure("Acc@1", Success @ 1),
        NamedMeasure("Acc@3", Success @ 3),
        NamedMeasure("Acc@5", Success @ 5),
        NamedMeasure("P@3", P @ 3),
        NamedMeasure("P@5", P @ 5),
        NamedMeasure("P@10", P @ 10),
        NamedMeasure("R@30", R @ 30),
        NamedMeasure("nDCG@10", nDCG @ 10),
        NamedMeasure("MRR@10", RR @ 10),
        NamedMeasure("MAP@100", AP @ 100),
    ),
    Protocol.KNOWN_ITEM: (
        NamedMeasure("Hit@1", Success @ 1),
        NamedMeasure("Hit@3", Success @ 3),
        NamedMeasure("Hit@10", Success @ 10),
        NamedMeasure("MRR@10", RR @ 10),
    ),
}

# Paper-level known-item search: a hit if any statement of the gold paper ranks in the top k.
PAPER_MEASURES: tuple[NamedMeasure, ...] = (
    NamedMeasure("paper Hit@1", Success @ 1),
    NamedMeasure("paper Hit@3", Success @ 3),
    NamedMeasure("paper Hit@10", Success @ 10),
    NamedMeasure("paper MRR@10", RR @ 10),
)

# The measure significance tests and charts lead with.
PRIMARY: dict[Protocol, str] = {
    Protocol.ARQMATH: "nDCG'",
    Protocol.RELEVANT_SET: "nDCG@10",
    Protocol.KNOWN_ITEM: "MRR@10",
}

PerQuery = dict[str, dict[str, float]]  # measure name -> qid -> value


def per_query_values(measures: Sequence[NamedMeasure], qrels: Qrels, run: Mapping[str, Sequence[RunEntry]]) -> PerQuery:
    """Every measure for every judged query (0 where the run has nothing for it)."""
    # Our order is the ranking: scores become whole numbers falling by one, since scores a float step
    # apart (1.0 and 0.9999999999999999, as nudged ties become) were seen treated as a tie broken by docno.
    scored_run = {
        qid: {docno: float(len(entries) - position) for position, (docno, _) in enumerate(strictly_decreasing(entries))}
        for qid, entries in run.items()
        if qid in qrels and entries
    }
    by_measure = {named.measure: named.name for named in measures}
    values: PerQuery = {named.name: dict.fromkeys(qrels, 0.0) for named in measures}
    if scored_run:
        for metric in ir_measures.iter_calc([named.measure for named in measures], qrels, scored_run):
            values[by_measure[metric.measure]][metric.query_id] = float(metric.value)
    return values


def paper_of(entry: RunEntry) -> str:
    """The paper of a ranked statement: known for our runs, else read from a ``paper#label`` docno."""
    if entry.paper_id:
        return entry.paper_id
    return entry.docno.split("#", 1)[0] if "#" in entry.docno else ""


def paper_level(
    qrels_papers: Mapping[str, Sequence[str]],
    run: Mapping[str, Sequence[RunEntry]],
    aggregation: PaperAggregation | str = PaperAggregation.MAX,
    top_m: int = 3,
) -> tuple[Qrels, dict[str, list[RunEntry]]] | None:
    """Paper-level qrels and run: each ranking's papers ordered as ``search --papers`` orders them
    (their statements' scores aggregated, see :mod:`retriever.search.paper_searcher`).

    None when the run says nothing about papers (a foreign run with opaque docnos).
    """
    qrels = {qid: dict.fromkeys(papers, 1) for qid, papers in qrels_papers.items() if papers}
    papers_run: dict[str, list[RunEntry]] = {}
    known = False
    for qid, entries in run.items():
        scores: dict[str, list[float]] = {}  # paper -> its statements' scores, in run order
        for entry in entries:
            paper = paper_of(entry)
            known = known or bool(paper)
            if paper:
                scores.setdefault(paper, []).append(entry.score)
        how = PaperAggregation(aggregation)
        aggregated = {paper: aggregate(sorted(values, reverse=True), how, top_m) for paper, values in scores.items()}
        order = sorted(enumerate(aggregated), key=lambda item: (-aggregated[item[1]], item[0]))  # ties: run order
        papers_run[qid] = [RunEntry(paper, aggregated[paper], paper) for _, paper in order]
    return (qrels, papers_run) if known or not any(run.values()) else None


def mean(values: Mapping[str, float], qids: Sequence[str] | None = None) -> float:
    chosen = list(values) if qids is None else [qid for qid in qids if qid in values]
    return sum(values[qid] for qid in chosen) / len(chosen) if chosen else float("nan")
