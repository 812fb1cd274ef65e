from __future__ import annotations

from pathlib import Path

import pytest

from rag_app.datasets.query_set import EvalQuery, Protocol, QuerySet, QuerySetError


def small_set() -> QuerySet:
    return QuerySet(
        name="tiny",
        version=2,
        protocol=Protocol.KNOWN_ITEM,
        queries=(
            EvalQuery("q1", "Nakayama's lemma", {"algebra#lemma-NAK": 1}, ("algebra",), "statement name"),
            EvalQuery("q2", "$x^2 + y^2 = z^2$", {"p#t": 1, "p#u": 0}),
        ),
        description="two queries",
        built_by="hand",
        corpus=("corpora/stacks-project",),
    )


def test_round_trip_keeps_header_and_queries(tmp_path: Path) -> None:
    path = tmp_path / "tiny.v2.jsonl"
    small_set().save(path)
    loaded = QuerySet.load(path)
    assert loaded == small_set()
    header = path.read_text().splitlines()[0]
    assert '"size": 2' in header and '"built_by": "hand"' in header


@pytest.mark.parametrize(
    ("lines", "line", "problem"),
    [
        (['{"format": "something-else"}'], 1, "not a query set header"),
        (['{"format": "rag-app-query-set", "protocol": "precision"}'], 1, "unknown protocol"),
        (['{"format": "rag-app-query-set", "protocol": "known-item"}', "{not json"], 2, "invalid JSON"),
        (['{"format": "rag-app-query-set", "protocol": "known-item"}', '{"query": "x", "relevant": {}}'], 2, "qid"),
        (
            [
                '{"format": "rag-app-query-set", "protocol": "known-item"}',
                '{"qid": "a", "query": "x", "relevant": {"d": 1}}',
                '{"qid": "a", "query": "y", "relevant": {"d": 1}}',
            ],
            3,
            "duplicate qid",
        ),
        (
            [
                '{"format": "rag-app-query-set", "protocol": "known-item"}',
                '{"qid": "a", "query": "x", "relevant": {"d": "high"}}',
            ],
            2,
            "integer grade",
        ),
    ],
)
def test_bad_files_name_the_line(tmp_path: Path, lines: list[str], line: int, problem: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(QuerySetError) as caught:
        QuerySet.load(path)
    assert caught.value.line == line
    assert problem in caught.value.reason
