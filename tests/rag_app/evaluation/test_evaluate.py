"""The eval command and the evaluate() API on a real index of the demo corpus."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rag_app import MathRAG
from rag_app.cli import app
from rag_app.evaluation import EvalQuery, Protocol, QuerySet, evaluate, read_run
from retriever.models.query_adapter import QueryAdapter
from tests.conftest import SHARED, make_settings

runner = CliRunner()


def demo_set(demo_index_dir: Path, tmp: Path) -> QuerySet:
    """Named demo statements: the name is the query (known-item), plus one query nothing matches."""
    rag = MathRAG(make_settings(tmp, index_dir=demo_index_dir))
    named = sorted((r for r in rag.index.store.iter_records() if r.name and r.label), key=lambda r: r.docno)[:12]
    queries = [
        EvalQuery(f"q{i}", record.name, {record.docno: 1}, (record.paper_id,), "statement name")
        for i, record in enumerate(named)
    ]
    queries.append(EvalQuery("formula", "$\\int_0^1 f(x)\\,dx = F(1) - F(0)$", {"nowhere#none": 1}))
    queries.append(EvalQuery("unjudged", "a query nobody judged", {}))
    return QuerySet("demo-names", 1, Protocol.KNOWN_ITEM, tuple(queries), "demo statement names", "test")


@pytest.mark.slow
def test_eval_command_writes_side_by_side_reports(demo_index_dir: Path, tmp_path: Path) -> None:
    set_path = tmp_path / "demo-names.v1.jsonl"
    demo_set(demo_index_dir, tmp_path).save(set_path)
    out = tmp_path / "report"
    result = runner.invoke(
        app,
        [
            "eval",
            str(set_path),
            "-r",
            "bm25",
            "-r",
            "dense",
            "-r",
            "hybrid",
            "--index",
            str(demo_index_dir),
            "--out",
            str(out),
            "--seen-papers",
            str(write_seen(tmp_path)),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "Hit@1" in result.output and "hybrid" in result.output

    report = json.loads((out / "report.json").read_text())
    (evaluation,) = report["sets"]
    assert [r["name"] for r in evaluation["retrievers"]] == ["bm25", "dense", "hybrid"]
    assert evaluation["scored_queries"] == 13 and evaluation["skipped_queries"] == ["unjudged"]
    assert evaluation["slice_sizes"] == {"no formula": 12, "formula >70%": 1}
    assert set(evaluation["group_sizes"]) == {"papers seen in training", "unseen papers"}
    for scores in evaluation["retrievers"]:
        # Statement names are in the indexed text: every retriever finds most of them.
        assert scores["aggregate"]["Hit@10"] >= 0.75, scores
        assert scores["per_query"]["MRR@10"]["formula"] == 0.0
        assert "paper Hit@1" in scores["aggregate"]
        assert 0 < scores["p50_ms"] <= scores["p95_ms"]
    tests = {(t["candidate"], t["measure"]) for t in evaluation["significance"]}
    assert ("dense", "MRR@10") in tests and ("hybrid", "Hit@1") in tests
    assert report["provenance"]["index_statements"] == 246
    assert report["provenance"]["index_manifest"]["embedder"]

    markdown = (out / "report.md").read_text()
    assert "| retriever | Hit@1 | Hit@3 | Hit@10 | MRR@10 |" in markdown
    assert "| ms/query | p50 ms | p95 ms |" in markdown
    assert "Index parts on disk" in markdown and "| formula_bm25 |" in markdown
    assert "formula >70%" in markdown and "We tune on this set" in markdown
    assert (out / "report.png").read_bytes()[:4] == b"\x89PNG"
    summary = json.loads((out / "summary.json").read_text())  # what git keeps: the same without per-query scores
    assert [r["aggregate"] for r in summary["sets"][0]["retrievers"]] == [
        r["aggregate"] for r in evaluation["retrievers"]
    ]
    assert not any("per_query" in r for r in summary["sets"][0]["retrievers"])
    run = read_run(out / "runs" / "demo-names.hybrid.trec")
    assert set(run) == {f"q{i}" for i in range(12)} | {"formula"}

    # A saved run replays as a retriever and scores the same.
    again = runner.invoke(
        app,
        ["eval", str(set_path), "--run", str(out / "runs" / "demo-names.hybrid.trec"), "--out", str(tmp_path / "r2")],
    )
    assert again.exit_code == 0, again.output
    replayed = json.loads((tmp_path / "r2" / "report.json").read_text())["sets"][0]["retrievers"][0]
    assert replayed["aggregate"] == evaluation["retrievers"][2]["aggregate"]


def write_seen(tmp: Path) -> Path:
    path = tmp / "seen.txt"
    path.write_text("# papers the embedding was trained on\nalgebraic-topology\n")
    return path


@pytest.mark.slow
def test_evaluate_api_takes_names_or_retriever_objects(demo_index_dir: Path, tmp_path: Path) -> None:
    query_set = demo_set(demo_index_dir, tmp_path)
    rag = MathRAG(make_settings(tmp_path, index_dir=demo_index_dir))

    class Nothing:
        name = "nothing"

        def retrieve(self, query: EvalQuery, k: int) -> list:
            return []

    result = evaluate(["bm25", Nothing()], query_set, index=rag.index, resamples=500)
    bm25, nothing = result.retrievers
    assert bm25.aggregate["MRR@10"] > 0.5
    assert nothing.aggregate["MRR@10"] == 0.0
    test = result.test("nothing", "MRR@10")
    assert test is not None and test.randomization_p < 0.05


def test_bad_inputs_exit_with_a_clear_message(tmp_path: Path) -> None:
    qrels = tmp_path / "bad.qrels"
    qrels.write_text("A.1 0 11 2\nA.1 0 12\n")
    result = runner.invoke(app, ["eval", "--qrels", str(qrels), "--run", str(qrels)])
    assert result.exit_code == 2
    assert f"{qrels}:2: expected 4 fields" in result.output

    result = runner.invoke(app, ["eval", str(tmp_path / "missing.jsonl")])
    assert result.exit_code == 2 and "missing.jsonl" in result.output

    good = tmp_path / "good.qrels"
    good.write_text("A.1 0 11 2\n")
    result = runner.invoke(app, ["eval", "--qrels", str(good), "-r", "bm42", "--index", str(tmp_path / "i")])
    assert result.exit_code == 2 and "unknown retriever 'bm42'" in result.output


@pytest.mark.skipif(not (SHARED / "arqmath").is_dir(), reason="needs ../shared/arqmath")
def test_arqmath_topics_without_judgments_are_reported_and_skipped(tmp_path: Path) -> None:
    topics = SHARED / "arqmath" / "topics.arqmath-2020-task1-origin.xml"
    qrels = SHARED / "arqmath" / "qrels.arqmath-2020-task1.txt"
    run = tmp_path / "one.trec"
    run.write_text("A.1 Q0 2761594 1 9.0 mine\nA.1 Q0 2190525 2 8.0 mine\nA.1 Q0 999 3 7.0 mine\n")
    result = runner.invoke(
        app, ["eval", "--topics", str(topics), "--qrels", str(qrels), "--run", str(run), "--out", str(tmp_path / "o")]
    )
    assert result.exit_code == 0, result.output
    (evaluation,) = json.loads((tmp_path / "o" / "report.json").read_text())["sets"]
    assert evaluation["scored_queries"] == 77 and len(evaluation["skipped_queries"]) == 21
    assert "A.2" in evaluation["skipped_queries"]
    assert "queries without judgments skipped" in result.output
    # Topic A.1: 2761594 (grade 2) first, 2190525 (grade 0) second, 999 unjudged; all else missing.
    per_query = evaluation["retrievers"][0]["per_query"]
    assert per_query["P'@10"]["A.1"] == pytest.approx(0.1)
    assert per_query["nDCG'"]["A.3"] == 0.0


@pytest.mark.slow
@pytest.mark.skipif(not (SHARED / "corpora" / "thesis-sample").is_dir(), reason="needs ../shared/corpora")
def test_without_an_index_the_sets_corpus_is_ingested_into_the_eval_index(tmp_path: Path) -> None:
    """The thesis sample as its own corpus: a CSV source, the thesis protocol, idempotent re-ingest."""
    from rag_app.evaluation.dev_sets import THESIS_SAMPLE, read_corpus, thesis_sample

    query_set = thesis_sample(read_corpus(SHARED, THESIS_SAMPLE), SHARED / THESIS_SAMPLE)
    query_set = QuerySet(
        query_set.name, 1, query_set.protocol, query_set.queries, corpus=(THESIS_SAMPLE,), corpus_root=str(SHARED)
    )
    set_path = tmp_path / "thesis.v1.jsonl"
    query_set.save(set_path)
    data = tmp_path / "data"
    args = ["eval", str(set_path), "-r", "bm25", "-r", "hybrid", "--out", str(tmp_path / "o"), "--json"]
    first = runner.invoke(app, args, env={"RAG_APP_DATA_DIR": str(data)})
    assert first.exit_code == 0, first.output
    report = json.loads(first.stdout)
    assert report["provenance"]["index"] == str(data / "eval" / "index" / "packaged-all-MiniLM-L6-v2-unicode-math")
    assert report["provenance"]["index_statements"] == 15
    assert "15 statements (15 added" in report["provenance"]["corpus_ingest"]
    (evaluation,) = report["sets"]
    assert set(evaluation["measures"]) >= {"Acc@1", "P@3", "R@30", "nDCG@10", "MRR@10", "MAP@100"}
    bm25 = evaluation["retrievers"][0]["aggregate"]
    assert bm25["Acc@5"] >= 0.6  # 15 statements: the generated questions share words with their statement

    again = runner.invoke(app, args, env={"RAG_APP_DATA_DIR": str(data)})
    assert "(0 added, 15 unchanged" in json.loads(again.stdout)["provenance"]["corpus_ingest"]


@pytest.mark.slow
@pytest.mark.skipif(not (SHARED / "corpora").is_dir(), reason="needs ../shared/corpora")
def test_dev_flag_builds_and_evaluates_every_development_set(demo_index_dir: Path, tmp_path: Path) -> None:
    env = {"RAG_APP_EVALUATION__SHARED_DIR": str(SHARED), "RAG_APP_EVALUATION__SETS_DIR": str(tmp_path / "sets")}
    args = ["eval", "--dev", "--limit", "3", "-r", "bm25", "--index", str(demo_index_dir), "--out", str(tmp_path / "o")]
    result = runner.invoke(app, [*args, "--json"], env=env)
    assert result.exit_code == 0, result.output
    names = [s["query_set"]["name"] for s in json.loads(result.stdout)["sets"]]
    assert {"stacks-formulas", "thesis-sample", "stacks-slogans-dev", "stacks-label-words"} <= set(names)
    assert len(names) == 9
    assert (tmp_path / "sets" / "MANIFEST.json").is_file()


@pytest.mark.slow
def test_a_reranked_retriever_is_evaluated_beside_its_first_stage(
    demo_index_dir: Path, tmp_path: Path, tiny_reranker_dir: Path
) -> None:
    set_path = tmp_path / "demo-names.v1.jsonl"
    demo_set(demo_index_dir, tmp_path).save(set_path)
    out = tmp_path / "report"
    args = ["eval", str(set_path), "-r", "hybrid", "-r", "hybrid+rerank", "--index", str(demo_index_dir)]
    env = {"RAG_APP_RERANK__MODEL": str(tiny_reranker_dir), "RAG_APP_RERANK__CANDIDATES": "5"}
    result = runner.invoke(app, [*args, "--out", str(out)], env=env)
    assert result.exit_code == 0, result.output
    (evaluation,) = json.loads((out / "report.json").read_text())["sets"]
    names = [r["name"] for r in evaluation["retrievers"]]
    assert names == ["hybrid", "hybrid+rerank"]
    hybrid = read_run(out / "runs" / "demo-names.hybrid.trec")
    reranked = read_run(out / "runs" / "demo-names.hybrid_rerank.trec")
    assert hybrid.keys() == reranked.keys()
    # Only the top N (5) is reordered: the same five statements, and the tiny model orders them its own way.
    for qid in hybrid:
        assert {e.docno for e in hybrid[qid][:5]} == {e.docno for e in reranked[qid][:5]}
    assert any([e.docno for e in hybrid[q][:5]] != [e.docno for e in reranked[q][:5]] for q in hybrid)

    result = runner.invoke(app, ["eval", str(set_path), "-r", "nonsense+rerank", "--index", str(demo_index_dir)])
    assert result.exit_code == 2 and "NAME+rerank" in result.output


@pytest.mark.slow
def test_a_retriever_fused_with_the_second_model_is_evaluated_beside_its_first_stage(
    demo_index_dir: Path, tmp_path: Path, tiny_reranker_dir: Path
) -> None:
    index = tmp_path / "index"
    shutil.copytree(demo_index_dir, index)  # build-dense2 writes into the index: not the shared one
    set_path = tmp_path / "demo-names.v1.jsonl"
    demo_set(demo_index_dir, tmp_path).save(set_path)
    out = tmp_path / "report"
    retrievers = ["-r", "hybrid", "-r", "hybrid+dense2", "-r", "hybrid+dense2+rerank"]
    # A fast second model for the mechanics (the shipped one: tests/rag_app/test_second_embedding.py).
    env = {"RAG_APP_SECOND_EMBEDDING__MODEL": "packaged:all-MiniLM-L6-v2", "RAG_APP_SECOND_EMBEDDING__WEIGHT": "3",
           "RAG_APP_RERANK__MODEL": str(tiny_reranker_dir), "RAG_APP_RERANK__CANDIDATES": "5"}  # fmt: skip
    result = runner.invoke(app, ["eval", str(set_path), *retrievers, "--index", str(index), "--out", str(out)], env=env)
    assert result.exit_code == 0, result.output
    report = json.loads((out / "report.json").read_text())
    (evaluation,) = report["sets"]
    assert [r["name"] for r in evaluation["retrievers"]] == ["hybrid", "hybrid+dense2", "hybrid+dense2+rerank"]
    (info,) = report["provenance"]["indexes"].values()
    assert info["second_embedding_update"]["added"] == info["index_statements"] > 0  # built before searching
    # `auto`: the packaged adapter trained for that model's vectors (MiniLM's own here), named in the provenance
    packaged = QueryAdapter.load("packaged", "packaged:all-MiniLM-L6-v2+unicode-math")
    assert info["second_embedding_query_adapter"] == packaged.identity
    plain = read_run(out / "runs" / "demo-names.hybrid.trec")
    fused = read_run(out / "runs" / "demo-names.hybrid_dense2.trec")
    assert plain.keys() == fused.keys()
    assert any([e.docno for e in plain[q][:5]] != [e.docno for e in fused[q][:5]] for q in plain)
    off = runner.invoke(
        app, ["eval", str(set_path), "-r", "hybrid+dense2", "--index", str(index)],
        env={"RAG_APP_SECOND_EMBEDDING__MODEL": "none"},
    )  # fmt: skip
    assert off.exit_code == 2 and "second_embedding.model" in off.output


def test_an_embedder_spec_may_name_the_text_form_it_reads() -> None:
    from rag_app.evaluation.runner import embedding_for
    from rag_app.settings import EmbeddingSettings

    configured = EmbeddingSettings()
    latex = embedding_for("packaged:all-MiniLM-L6-v2+latex", configured)
    assert (latex.model, latex.math_text) == ("packaged:all-MiniLM-L6-v2", "latex")
    unicode = embedding_for("registry:math@v2+unicode-math", configured.model_copy(update={"math_text": "latex"}))
    assert (unicode.model, unicode.math_text) == ("registry:math@v2", "unicode")
    plain = embedding_for("registry:math@v2", configured)  # no suffix: the configured form
    assert (plain.model, plain.math_text) == ("registry:math@v2", "unicode")
