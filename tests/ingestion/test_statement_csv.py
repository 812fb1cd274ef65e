from __future__ import annotations

from pathlib import Path

import pytest

from ingestion import StatementKind, ingest_sources, read_statement_csv
from ingestion.latex_sources import single_file_paper_id
from tests.conftest import SHARED

THESIS_SAMPLE = SHARED / "corpora" / "thesis-sample" / "data_sample.csv"


@pytest.mark.skipif(not THESIS_SAMPLE.is_file(), reason="needs ../shared/corpora/thesis-sample")
def test_thesis_sample_rows_become_statements() -> None:
    papers = list(read_statement_csv(THESIS_SAMPLE))
    records = [r for p in papers for r in p.records]
    assert len(records) == 15 and not any(p.problems for p in papers)
    first = records[0]
    assert first.paper_id == "2501.01947" and first.kind is StatementKind.PROPOSITION
    assert first.label == "prop:burge" and "\\label" not in first.text
    assert first.docno == "2501.01947#row-3620"
    assert first.url == "https://arxiv.org/abs/2501.01947"
    assert first.metadata["categories"] == "math.co"
    assert {r.kind for r in records} >= {StatementKind.COROLLARY, StatementKind.DEFINITION, StatementKind.LEMMA}


def test_bad_rows_are_reported_with_their_line(tmp_path: Path) -> None:
    path = tmp_path / "statements.csv"
    path.write_text(
        'id,paper id,type,content\n1,2501.00001,lemmas,"Let $x>0$. Then $x^2>0$."\n2,,theorems,"orphan"\n'
        '3,2501.00001,theorems,"Every $n$ is a sum of four squares."\n'
    )
    papers = list(ingest_sources([path]))
    problems = [problem for p in papers for problem in p.problems]
    assert len(problems) == 1 and problems[0].line == 3 and "paper id" in problems[0].reason
    records = [r for p in papers for r in p.records]
    assert [r.kind for r in records] == [StatementKind.LEMMA, StatementKind.THEOREM]
    assert len({r.id for r in records}) == 2


def test_a_csv_without_the_columns_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "other.csv"
    path.write_text("a,b\n1,2\n")
    (paper,) = read_statement_csv(path)
    assert "missing column(s) paper id, type, content" in paper.problems[0].reason


def test_generic_main_files_are_named_after_their_directory(tmp_path: Path) -> None:
    assert single_file_paper_id(tmp_path / "hott-book" / "main.tex") == "hott-book"
    assert single_file_paper_id(tmp_path / "x" / "algebra.tex") == "algebra"
