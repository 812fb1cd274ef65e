"""The statement graph through the Python API, `rag-app show` and `search --json` (the demo corpus)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rag_app import MathRAG
from rag_app.cli import app
from rag_app.search.statement_links import AmbiguousLabelError, StatementNotFoundError
from tests.conftest import make_settings

runner = CliRunner()


@pytest.fixture
def rag(demo_index_dir: Path, tmp_path: Path) -> MathRAG:
    return MathRAG(make_settings(tmp_path, index_dir=demo_index_dir))


def test_a_statement_with_its_uses_used_by_and_definitions(rag: MathRAG) -> None:
    view = rag.statement("galois-theory#cor:finitely-many-intermediate")
    assert view.record.label == "cor:finitely-many-intermediate"
    assert [(u.label, u.where, u.statement.name if u.statement else None) for u in view.uses] == [
        ("def:normal-separable", "proof", "Normal and separable"),
        ("thm:ftgt", "proof", "Fundamental theorem of Galois theory"),
    ]
    assert [d.label for d in view.definitions] == ["def:normal-separable"]
    liouville = rag.statement("thm:liouville")  # a label one paper defines
    assert [link.label for link in liouville.used_by] == ["cor:fta"]
    assert liouville.used_by[0].paper_title == "Holomorphic Functions in One Variable"
    # by id, and the definitions in scope through what it uses (depth 2): the corollary via the theorem
    fta = rag.statement(liouville.used_by[0].id, depth=2)
    assert [u.statement.label for u in fta.uses if u.statement] == ["thm:liouville"]
    assert rag.definitions_for(fta.record.id, depth=0) == []
    payload = fta.to_dict()
    assert payload["uses"][0]["statement"]["label"] == "thm:liouville" and payload["used_by"] == []
    assert json.loads(json.dumps(payload)) == payload


def test_missing_and_ambiguous_labels_say_so(rag: MathRAG, tmp_path: Path) -> None:
    with pytest.raises(StatementNotFoundError, match="no statement has the id or label 'lem:nowhere'"):
        rag.statement("lem:nowhere")
    for paper in ("one", "two"):
        (tmp_path / "papers" / paper).mkdir(parents=True)
        (tmp_path / "papers" / paper / "main.tex").write_text(
            "\\newtheorem{theorem}{Theorem}\\begin{document}\\begin{theorem}\\label{thm:main} "
            f"Every {paper}-dimensional space is fine.\\end{{theorem}}\\end{{document}}"
        )
    both = MathRAG(make_settings(tmp_path / "both", ingestion={"isolate_papers": False}))
    both.ingest([tmp_path / "papers"])
    with pytest.raises(AmbiguousLabelError, match=r"several papers: one#thm:main, two#thm:main"):
        both.statement("thm:main")
    assert both.statement("two#thm:main").record.paper_id == "two"


def test_show_and_search_json(demo_index_dir: Path, tmp_path: Path) -> None:
    env = {"RAG_APP_DATA_DIR": str(tmp_path / "data")}
    shown = runner.invoke(app, ["show", "thm:liouville", "--index", str(demo_index_dir)], env=env)
    assert shown.exit_code == 0, shown.output
    assert "Uses (1):" in shown.output and "Cauchy's integral formula" in shown.output
    assert "Used by (1):" in shown.output and "Fundamental theorem of algebra" in shown.output
    citing = ("If $p$ had no root, $1/p$ would be a bounded entire function, hence constant by Liouville's "
              "theorem (Theorem 5).")  # fmt: skip
    assert "How it is cited (1 citing sentences):" in shown.output and citing in shown.output
    as_json = runner.invoke(app, ["show", "thm:liouville", "--json", "--index", str(demo_index_dir)], env=env)
    view = json.loads(as_json.stdout)
    assert view["label"] == "thm:liouville" and view["used_by"][0]["label"] == "cor:fta"
    assert view["cited_as_count"] == 1 and view["cited_as"][0]["sentence"] == citing
    assert (view["cited_as"][0]["where"], view["cited_as"][0]["statement"]["label"]) == ("proof", "cor:fta")
    missing = runner.invoke(app, ["show", "lem:nowhere", "--index", str(demo_index_dir)], env=env)
    assert missing.exit_code == 2 and "no statement has the id or label" in missing.output
    found = runner.invoke(app, ["search", "bounded entire function", "--json", "-k", "3", "--index",
                                str(demo_index_dir)], env=env)  # fmt: skip
    hits = {hit["label"]: hit for hit in json.loads(found.stdout)}
    assert (hits["thm:liouville"]["uses_count"], hits["thm:liouville"]["used_by_count"]) == (1, 1)


def test_the_ingest_report_counts_references(tmp_path: Path) -> None:
    from rag_app.pipeline import demo_corpus_path

    env = {"RAG_APP_DATA_DIR": str(tmp_path / "data"), "RAG_APP_INGESTION__ISOLATE_PAPERS": "false"}
    galois = str(demo_corpus_path() / "galois-theory")
    result = runner.invoke(app, ["ingest", galois, "--json", "--index", str(tmp_path / "index")], env=env)
    report = json.loads(result.stdout)
    assert (report["references"], report["unresolved_references"]) == (3, 0)


def test_a_cited_arxiv_paper_in_the_index_is_a_paper_level_edge(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    for paper, body in {
        "2101.00001": r"\begin{theorem}\label{t:main} Every finite group of odd order is solvable.\end{theorem}",
        "2102.00002": r"\begin{lemma}\label{l} A group of order 15 is cyclic, by \cite[Thm.~1]{fo, book}.\end{lemma}"
        r"\begin{thebibliography}{9}\bibitem{fo} F. O., Odd order, arXiv:2101.00001v2."
        r"\bibitem{book} A. Book, Groups, 1990.\end{thebibliography}",
    }.items():
        (corpus / paper).mkdir(parents=True)
        (corpus / paper / "main.tex").write_text(
            "\\documentclass{article}\\newtheorem{theorem}{Theorem}\\newtheorem{lemma}{Lemma}"
            f"\\title{{Paper {paper}}}\\begin{{document}}\\maketitle\n{body}\n\\end{{document}}"
        )
    rag = MathRAG(make_settings(tmp_path))
    report = rag.ingest([corpus])
    assert (report.citations, report.arxiv_citations) == (2, 1)
    lemma = rag.statement("2102.00002#l")
    assert [(c.key, c.arxiv_id, c.paper_id, c.statements) for c in lemma.cites] == [
        ("fo", "2101.00001", "2101.00001", 1),
        ("book", "", "", 0),
    ]
    assert lemma.cites[0].paper_title == "Paper 2101.00001" and lemma.cited_by_count == 0
    theorem = rag.statement("2101.00001#t:main")
    assert [link.label for link in theorem.cited_by] == ["l"] and theorem.cited_by_count == 1
    payload = json.loads(json.dumps(theorem.to_dict()))
    assert payload["cited_by_count"] == 1 and payload["cites"] == []
    shown = runner.invoke(app, ["show", "2102.00002#l", "--index", str(rag.settings.resolved_index_dir)])
    assert shown.exit_code == 0, shown.output
    assert "[fo]  arXiv:2101.00001 — Paper 2101.00001, in the index (1 statement)  (statement)" in shown.output


def test_the_sentences_that_cite_a_statement_for_the_answers_chooser(rag: MathRAG) -> None:
    liouville = rag.statement("complex-analysis#thm:liouville").record
    fta = rag.statement("complex-analysis#cor:fta").record
    found = rag.statement_links.citing_sentences([liouville.id, fta.id])
    assert list(found) == [liouville.id], "a statement nobody cites is left out"
    assert found[liouville.id][0].startswith("If $p$ had no root, $1/p$ would be a bounded entire function")
