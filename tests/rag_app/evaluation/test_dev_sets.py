"""A fresh build of the development sets from ../shared matches the committed manifest."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rag_app.datasets.query_set import QuerySet
from rag_app.evaluation.dev_sets import MANIFEST, label_words, plain_name, write_dev_sets
from retriever.text.formula_share import formula_share, formula_slice
from tests.conftest import SHARED

SETS_DIR = Path(__file__).resolve().parents[3] / "eval" / "sets"


@pytest.mark.slow
@pytest.mark.skipif(not (SHARED / "corpora").is_dir(), reason="needs ../shared/corpora")
def test_built_sets_match_the_committed_manifest(tmp_path: Path) -> None:
    paths = write_dev_sets(SHARED, tmp_path)
    committed = json.loads((SETS_DIR / MANIFEST).read_text())
    built_manifest = json.loads((tmp_path / MANIFEST).read_text())
    assert built_manifest == committed, "rerun scripts/build_dev_sets.py (and bump the version if a set changed)"
    built = {query_set.name: query_set for query_set in map(QuerySet.load, paths)}
    for name, query_set in built.items():
        assert (query_set.tuning and query_set.size == len(query_set.queries) > 10) or name == "thesis-sample"
    assert built["thesis-sample"].size == 15
    # The formula set gives the formula-heavy slice its queries.
    slices = [formula_slice(formula_share(q.text)) for q in built["stacks-formulas"].queries]
    assert slices.count("formula >70%") > 0.8 * len(slices)
    assert all(q.relevant for s in built.values() for q in s.queries)
    # Every human-written slogan finds its statement by label: one gold statement each.
    slogans = built["stacks-slogans-dev"]
    assert slogans.size == 131 and all(len(q.relevant) == 1 for q in slogans.queries)
    assert all(next(iter(q.relevant)).startswith(q.paper_ids[0] + "#") for q in slogans.queries)
    # The label-words set is thousands of queries, none of them one stacks-labels was tuned on.
    label_words_set = built["stacks-label-words"]
    assert label_words_set.size == 2_000
    assert not {q.text for q in label_words_set.queries} & {q.text for q in built["stacks-labels"].queries}


def test_a_slogan_whose_statement_is_missing_is_an_error_naming_the_line(tmp_path: Path) -> None:
    from ingestion import Source, StatementKind, StatementRecord
    from rag_app.evaluation.dev_sets import stacks_slogans

    record = StatementRecord("x", Source.LOCAL, StatementKind.LEMMA, "Directed colimits are exact.", "algebra",
                             label="lemma-directed-colimit-exact")  # fmt: skip
    path = tmp_path / "slogans.jsonl"
    rows = [{"query": "Filtered colimits are exact.", "label": "lemma-directed-colimit-exact", "file": "algebra.tex"},
            {"query": "Something else.", "label": "lemma-gone", "file": "algebra.tex"}]  # fmt: skip
    path.write_text("\n".join(json.dumps(row) for row in rows) + "\n")
    with pytest.raises(ValueError, match=r"slogans\.jsonl:2: no statement labelled 'lemma-gone'"):
        stacks_slogans([record], path)
    path.write_text(json.dumps(rows[0]) + "\n")
    (query,) = stacks_slogans([record], path).queries
    assert query.relevant == {"algebra#lemma-directed-colimit-exact": 1} and query.paper_ids == ("algebra",)


def test_label_words_and_names() -> None:
    assert label_words("lemma-directed-colimit-exact") == "directed colimit exact"
    assert label_words("definition-module") == ""  # one word left: too little
    assert label_words("lemma-1-2") == ""
    assert plain_name("Crit\\`ere de platitude") == "Critère de platitude"
    assert plain_name("Universal cover of $\\Sn^1$") == "Universal cover of $\\Sn^1$"
