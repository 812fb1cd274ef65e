"""Measures against values worked out by hand, and against pytrec_eval on real ARQMath judgments."""

from __future__ import annotations

import math
import random

import pytest
import pytrec_eval

from rag_app.datasets.query_set import Protocol
from rag_app.evaluation.measures import MEASURES, PAPER_MEASURES, paper_level, per_query_values
from rag_app.evaluation.trec_files import RunEntry, read_qrels, strictly_decreasing
from tests.conftest import SHARED

ARQMATH_QRELS = SHARED / "arqmath" / "qrels.arqmath-2020-task1.txt"


def run_of(*docnos: str, paper: str = "") -> list[RunEntry]:
    return [RunEntry(docno, float(len(docnos) - i), paper) for i, docno in enumerate(docnos)]


def test_arqmath_prime_measures_match_hand_computation() -> None:
    # Judged: a=3, b=0, c=2, d=1. The run ranks x (unjudged), a, b, y (unjudged), c.
    # Unjudged removed: a, b, c.  DCG = 3/log2(2) + 0 + 2/log2(4) = 4.
    # Ideal 3, 2, 1, 0: 3 + 2/log2(3) + 1/log2(4) = 4.76186.  nDCG' = 0.84001.
    # Grades 2-3 relevant (a, c): AP' = (1/1 + 2/3) / 2 = 0.83333;  P'@10 = 2/10.
    # bpref (R = 2, judged non-relevant b and d): a has none above, c has b above: (1 + 1/2) / 2 = 0.75.
    qrels = {"1": {"a": 3, "b": 0, "c": 2, "d": 1}}
    values = per_query_values(MEASURES[Protocol.ARQMATH], qrels, {"1": run_of("x", "a", "b", "y", "c")})
    assert values["nDCG'"]["1"] == pytest.approx(4 / (3 + 2 / math.log2(3) + 0.5), abs=1e-9)
    assert values["nDCG'"]["1"] == pytest.approx(0.84001, abs=1e-5)
    assert values["MAP'"]["1"] == pytest.approx(5 / 6)
    assert values["P'@10"]["1"] == pytest.approx(0.2)
    assert values["bpref"]["1"] == pytest.approx(0.75)


def test_relevant_set_measures_match_hand_computation() -> None:
    # Relevant r1, r2, r3 (one paper); the run: n1, r1, n2, r2, then 96 misses.
    qrels = {"q": {"r1": 1, "r2": 1, "r3": 1}}
    run = {"q": run_of("n1", "r1", "n2", "r2", *[f"m{i}" for i in range(96)])}
    values = {
        name: by_query["q"] for name, by_query in per_query_values(MEASURES[Protocol.RELEVANT_SET], qrels, run).items()
    }
    assert values["Acc@1"] == 0.0
    assert values["Acc@3"] == 1.0
    assert values["P@3"] == pytest.approx(1 / 3)
    assert values["P@5"] == pytest.approx(2 / 5)
    assert values["P@10"] == pytest.approx(2 / 10)
    assert values["R@30"] == pytest.approx(2 / 3)
    assert values["MRR@10"] == pytest.approx(1 / 2)
    assert values["MAP@100"] == pytest.approx((1 / 2 + 2 / 4) / 3)
    ideal = 1 + 1 / math.log2(3) + 1 / math.log2(4)
    assert values["nDCG@10"] == pytest.approx((1 / math.log2(3) + 1 / math.log2(5)) / ideal)


def test_known_item_and_paper_level_hits() -> None:
    qrels = {"q": {"p2#gold": 1}}
    run = {"q": [RunEntry("p1#a", 3.0, "p1"), RunEntry("p2#other", 2.0, "p2"), RunEntry("p2#gold", 1.0, "p2")]}
    values = per_query_values(MEASURES[Protocol.KNOWN_ITEM], qrels, run)
    assert [values[f"Hit@{k}"]["q"] for k in (1, 3, 10)] == [0.0, 1.0, 1.0]
    assert values["MRR@10"]["q"] == pytest.approx(1 / 3)
    papers = paper_level({"q": ("p2",)}, run)
    assert papers is not None
    papers_qrels, papers_run = papers
    # A foreign run: papers read from "paper#label" docnos; opaque docnos tell nothing.
    foreign = paper_level({"q": ("p2",)}, {"q": [RunEntry("p2#gold", 1.0)]})
    assert foreign is not None and foreign[1]["q"][0].docno == "p2"
    assert paper_level({"q": ("p2",)}, {"q": [RunEntry("12345", 1.0)]}) is None
    assert [e.docno for e in papers_run["q"]] == ["p1", "p2"]
    paper_values = per_query_values(PAPER_MEASURES, papers_qrels, papers_run)
    assert [paper_values[f"paper Hit@{k}"]["q"] for k in (1, 3)] == [0.0, 1.0]


def test_query_without_results_scores_zero_and_ties_keep_our_order() -> None:
    qrels = {"found": {"a": 1}, "empty": {"b": 1}}
    tied = [RunEntry("z", 0.5), RunEntry("a", 0.5)]  # trec_eval would put "z" first only by docno
    values = per_query_values(MEASURES[Protocol.KNOWN_ITEM], qrels, {"found": tied, "empty": []})
    assert values["MRR@10"] == {"found": 0.5, "empty": 0.0}
    assert [docno for docno, _ in strictly_decreasing([RunEntry("y", 1.0), RunEntry("x", 1.0)])] == ["y", "x"]
    # Scores one float step apart (a nudged tie) still rank in our order, not by docno.
    close = [RunEntry("duality", 1.0), RunEntry("fba41274", 0.9999999999999999), RunEntry("c", 0.5)]
    values = per_query_values(MEASURES[Protocol.KNOWN_ITEM], {"q": {"duality": 1}}, {"q": close})
    assert values["Hit@1"]["q"] == 1.0 and values["MRR@10"]["q"] == 1.0


def test_matches_pytrec_eval_on_real_arqmath_judgments() -> None:
    qrels = read_qrels(ARQMATH_QRELS)
    rng = random.Random(11)
    run: dict[str, list[RunEntry]] = {}
    for topic, judged in qrels.items():
        candidates = list(judged) + [f"unjudged-{topic}-{i}" for i in range(300)]
        rng.shuffle(candidates)
        depth = rng.randint(50, 1000)
        run[topic] = [RunEntry(d, 1000.0 - i + rng.random() * 0.5, "") for i, d in enumerate(candidates[:depth])]
    ours = per_query_values(MEASURES[Protocol.ARQMATH], qrels, run)

    # pytrec_eval directly: unjudged documents removed by hand for the primed measures,
    # relevance level 2 for MAP', P'@10 and bpref (the "H+M binarization").
    judged_run = {t: {e.docno: e.score for e in entries if e.docno in qrels[t]} for t, entries in run.items()}
    full_run = {t: {e.docno: e.score for e in entries} for t, entries in run.items()}
    graded = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg"}).evaluate(judged_run)
    binary = pytrec_eval.RelevanceEvaluator(qrels, {"map", "P_10"}, relevance_level=2).evaluate(judged_run)
    bpref = pytrec_eval.RelevanceEvaluator(qrels, {"bpref"}, relevance_level=2).evaluate(full_run)
    assert len(qrels) == 77
    for topic in qrels:
        assert ours["nDCG'"][topic] == pytest.approx(graded[topic]["ndcg"], abs=1e-9)
        assert ours["MAP'"][topic] == pytest.approx(binary[topic]["map"], abs=1e-9)
        assert ours["P'@10"][topic] == pytest.approx(binary[topic]["P_10"], abs=1e-9)
        assert ours["bpref"][topic] == pytest.approx(bpref[topic]["bpref"], abs=1e-9)


def test_paper_level_ranks_papers_by_the_aggregation_search_papers_uses() -> None:
    run = {"q": [RunEntry("a#1", 1.0, "a"), RunEntry("b#1", 0.8, "b"), RunEntry("b#2", 0.7, "b")]}
    papers = paper_level({"q": ("b",)}, run)
    assert papers is not None and [e.docno for e in papers[1]["q"]] == ["a", "b"]  # max: the default
    papers = paper_level({"q": ("b",)}, run, "top-m", top_m=2)
    assert papers is not None and [e.docno for e in papers[1]["q"]] == ["b", "a"]
    values = per_query_values(PAPER_MEASURES, *papers)
    assert values["paper Hit@1"]["q"] == 1.0 and values["paper MRR@10"]["q"] == 1.0
