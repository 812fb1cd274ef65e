"""Each development set in two halves: one to tune on, one only measured.

Rules tuned claim by claim read the claims they were tuned on, not research English; a gain is a gain only on
questions nothing was tuned on. So every query set is split once, and every figure is reported on both halves
side by side:

- **by statement**: the queries judged against one statement (and, transitively, every statement judged together
  with it, in any set) fall on one side, so no statement's wording is learned from one half and tested on the
  other;
- **by a hash** of that group's first statement (its docno), so the split needs no list to be kept in step with
  the sets: a new query of an old statement lands where its statement already is;
- a query that judges no statement (a question whose answer is in no statement of the index) by a hash of its set's
  name and its qid;
- a set written apart (``tuning: false`` in its header, like ``research-questions-apart``, written before any run)
  is untouched whole.

``eval/sets/halves.v1.json`` records the split as it stood when it was made (``rag-app`` never reads it; a test
checks that the rule still gives it).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from rag_app.datasets.query_set import EvalQuery, QuerySet

TUNE = "tune"
UNTOUCHED = "untouched"


@dataclass(frozen=True, slots=True)
class SetHalves:
    """The side of every query of the sets it was built from, by set name and qid."""

    sides: dict[tuple[str, str], str]

    @classmethod
    def of(cls, sets: Sequence[QuerySet]) -> SetHalves:
        groups = _StatementGroups()
        for query_set in sets:
            for query in query_set.queries:
                groups.join(_judged(query))
        sides: dict[tuple[str, str], str] = {}
        for query_set in sets:
            apart = not _tuned_on(query_set)
            for query in query_set.queries:
                statements = _judged(query)
                if apart:
                    sides[(query_set.name, query.qid)] = UNTOUCHED
                elif not statements:  # a question no statement answers: split by itself
                    sides[(query_set.name, query.qid)] = side_of_group(f"{query_set.name}:{query.qid}")
                else:
                    sides[(query_set.name, query.qid)] = side_of_group(groups.root(statements[0]))
        return cls(sides)

    def side(self, set_name: str, qid: str) -> str:
        return self.sides[(set_name, qid)]

    def counts(self) -> dict[str, dict[str, int]]:
        counts: dict[str, dict[str, int]] = {}
        for (set_name, _), side in self.sides.items():
            counts.setdefault(set_name, {TUNE: 0, UNTOUCHED: 0})[side] += 1
        return counts


def side_of_group(statement: str) -> str:
    """The side of the statements grouped under ``statement`` (the group's least docno)."""
    return TUNE if hashlib.sha256(statement.encode("utf-8")).digest()[0] < 128 else UNTOUCHED


def _judged(query: EvalQuery) -> list[str]:
    return sorted(docno for docno, grade in query.relevant.items() if grade > 0)


def _tuned_on(query_set: QuerySet) -> bool:
    return query_set.tuning


class _StatementGroups:
    """Union-find over docnos: statements judged together in one query share a side."""

    def __init__(self) -> None:
        self.parent: dict[str, str] = {}

    def root(self, docno: str) -> str:
        self.parent.setdefault(docno, docno)
        while self.parent[docno] != docno:
            self.parent[docno] = self.parent[self.parent[docno]]
            docno = self.parent[docno]
        return docno

    def join(self, docnos: Iterable[str]) -> None:
        roots = sorted({self.root(d) for d in docnos})
        for other in roots[1:]:
            self.parent[other] = roots[0]  # the least docno stays the root: the group's name does not drift
