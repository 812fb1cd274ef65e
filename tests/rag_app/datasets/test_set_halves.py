"""Every set in a half tuned on and a half only measured, by statement (issue 92)."""

from __future__ import annotations

import json
from pathlib import Path

from rag_app.datasets.query_set import EvalQuery, Protocol, QuerySet
from rag_app.datasets.set_halves import TUNE, UNTOUCHED, SetHalves, side_of_group

ROOT = Path(__file__).resolve().parents[3]


def query_set(name: str, judged: dict[str, list[str]], tuning: bool = True) -> QuerySet:
    queries = tuple(EvalQuery(qid, qid, {d: 1 for d in docnos}) for qid, docnos in judged.items())
    return QuerySet(name, 1, Protocol.KNOWN_ITEM, queries, tuning=tuning)


def test_one_statements_questions_stay_on_one_side_across_sets() -> None:
    docnos = [f"paper#lemma-{n}" for n in range(40)]
    claims = query_set("claims", {f"c{n}": [d] for n, d in enumerate(docnos)})
    questions = query_set("questions", {f"q{n}": [d] for n, d in enumerate(docnos)})
    halves = SetHalves.of([claims, questions])
    for n in range(40):
        assert halves.side("claims", f"c{n}") == halves.side("questions", f"q{n}")
    sides = {halves.side("claims", f"c{n}") for n in range(40)}
    assert sides == {TUNE, UNTOUCHED}, "a hash splits forty statements both ways"


def test_statements_judged_together_are_one_group() -> None:
    # c1 judges a and b; c2 judges b alone: b's questions follow a's, wherever the hash puts a alone
    a, b = "x#a", "x#zzz"
    halves = SetHalves.of([query_set("s", {"c1": [a, b], "c2": [b]})])
    assert halves.side("s", "c1") == halves.side("s", "c2") == side_of_group(a)


def test_a_set_written_apart_is_untouched_whole() -> None:
    apart = query_set("apart", {f"q{n}": [f"p#{n}"] for n in range(20)}, tuning=False)
    halves = SetHalves.of([apart])
    assert {halves.side("apart", f"q{n}") for n in range(20)} == {UNTOUCHED}
    assert halves.counts() == {"apart": {TUNE: 0, UNTOUCHED: 20}}


def test_the_recorded_split_is_what_the_rule_gives() -> None:
    recorded = json.loads((ROOT / "eval/sets/halves.v1.json").read_text())
    sets = [QuerySet.load(ROOT / "eval/questions" / name) for name in recorded["sets"]]
    halves = SetHalves.of(sets)
    for set_name, sides in recorded["sides"].items():
        for side, qids in sides.items():
            assert all(halves.side(set_name, qid) == side for qid in qids), (set_name, side)


def test_questions_no_statement_answers_are_split_by_their_own_qid() -> None:
    no_answer = QuerySet.load(ROOT / "eval/questions/no-answer-questions.v1.jsonl")
    halves = SetHalves.of([no_answer])
    counts = halves.counts()["no-answer-questions"]
    assert min(counts.values()) >= 0.35 * no_answer.size, counts  # both halves well filled
    for side in (TUNE, UNTOUCHED):  # near and far questions on each side
        sided = [query for query in no_answer.queries if halves.side(no_answer.name, query.qid) == side]
        kinds = {query.metadata["kind"] for query in sided}
        assert kinds == {"near", "far"}
