"""The committed development sets are exactly what the build script makes of ../shared today."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag_app.evaluation.dev_sets import build_dev_sets, label_words, plain_name
from rag_app.evaluation.formula_share import formula_share, formula_slice
from rag_app.evaluation.query_set import QuerySet
from tests.conftest import SHARED

SETS_DIR = Path(__file__).resolve().parents[3] / "eval" / "sets"


@pytest.mark.skipif(not (SHARED / "corpora").is_dir(), reason="needs ../shared/corpora")
def test_committed_sets_are_reproducible() -> None:
    built = {query_set.name: query_set for query_set in build_dev_sets(SHARED)}
    committed = {path.name: QuerySet.load(path) for path in sorted(SETS_DIR.glob("*.jsonl"))}
    assert sorted(committed) == sorted(f"{name}.v{s.version}.jsonl" for name, s in built.items())
    for name, query_set in built.items():
        on_disk = committed[f"{name}.v{query_set.version}.jsonl"]
        assert on_disk == query_set, f"{name}: rerun scripts/build_dev_sets.py (and bump the version if it changed)"
        assert (on_disk.tuning and on_disk.size == len(on_disk.queries) > 10) or name == "thesis-sample"
    assert built["thesis-sample"].size == 15
    # The formula set gives the formula-heavy slice its queries.
    slices = [formula_slice(formula_share(q.text)) for q in built["stacks-formulas"].queries]
    assert slices.count("formula >70%") > 0.8 * len(slices)
    assert all(q.relevant for s in built.values() for q in s.queries)


def test_label_words_and_names() -> None:
    assert label_words("lemma-directed-colimit-exact") == "directed colimit exact"
    assert label_words("definition-module") == ""  # one word left: too little
    assert label_words("lemma-1-2") == ""
    assert plain_name("Crit\\`ere de platitude") == "Critère de platitude"
    assert plain_name("Universal cover of $\\Sn^1$") == "Universal cover of $\\Sn^1$"
