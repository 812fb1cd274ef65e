"""The CLI contracts: commands, flags and JSON fields that other tools script against."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rag_app.cli import app
from rag_app.serving.llm_server import LLMServerProcess

runner = CliRunner()
HIT_FIELDS = {"id", "score", "kind", "name", "text", "paper_id", "label", "url"}


def test_search_json_contract(demo_index_dir: Path) -> None:
    result = runner.invoke(
        app, ["search", "Cauchy integral formula", "--k", "4", "--json", "--index", str(demo_index_dir)]
    )
    assert result.exit_code == 0, result.output
    hits = json.loads(result.stdout)
    assert len(hits) == 4 and set(hits[0]) >= HIT_FIELDS
    assert hits[0]["name"] == "Cauchy's integral formula"
    assert hits[0]["label"] == "thm:cauchy-formula" and hits[0]["paper_id"] == "complex-analysis"


def test_search_many_queries_one_json_line_each(demo_index_dir: Path, tmp_path: Path) -> None:
    queries = tmp_path / "queries.txt"
    queries.write_text("Sylow subgroups are conjugate\n\nbinomial theorem\n")
    result = runner.invoke(
        app, ["search", "--queries", str(queries), "--json", "--k", "2", "--index", str(demo_index_dir)]
    )
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert [line["query"] for line in lines] == ["Sylow subgroups are conjugate", "binomial theorem"]
    assert all(len(line["results"]) == 2 and set(line["results"][0]) >= HIT_FIELDS for line in lines)
    assert lines[1]["results"][0]["name"] == "Binomial theorem"


def test_search_rerank_flag_reorders_with_the_cross_encoder(demo_index_dir: Path, tiny_reranker_dir: Path) -> None:
    args = ["search", "Cauchy integral formula", "--k", "3", "--json", "--index", str(demo_index_dir)]
    plain = json.loads(runner.invoke(app, args).stdout)
    assert all("rerank" not in hit["channel_ranks"] for hit in plain)  # off by default for `search`
    env = {"RAG_APP_RERANK__MODEL": str(tiny_reranker_dir), "RAG_APP_RERANK__CANDIDATES": "10"}
    result = runner.invoke(app, [*args, "--rerank"], env=env)
    assert result.exit_code == 0, result.output
    reranked = json.loads(result.stdout)
    assert len(reranked) == 3 and set(reranked[0]) >= HIT_FIELDS
    assert all({"first-stage", "rerank"} <= set(hit["channel_ranks"]) for hit in reranked)
    assert [hit["rank"] for hit in reranked] == [1, 2, 3]


def test_search_rerank_without_a_model_names_the_command_that_builds_it(demo_index_dir: Path, tmp_path: Path) -> None:
    env = {"RAG_APP_RERANK__MODEL": str(tmp_path / "no-reranker")}
    result = runner.invoke(app, ["search", "compact", "--rerank", "--index", str(demo_index_dir)], env=env)
    assert result.exit_code == 2
    assert "rag-app train rerank" in result.output


PAPER_FIELDS = {"paper_id", "title", "authors", "url", "score", "rank", "categories", "date", "source", "hits"}


def test_search_papers_ranks_a_paper_and_its_renamed_copy_first(demo_with_copy_index_dir: Path) -> None:
    args = ["search", "Cauchy's integral formula for holomorphic functions on a disc", "--papers", "--json"]
    result = runner.invoke(app, [*args, "--k", "3", "--index", str(demo_with_copy_index_dir)])
    assert result.exit_code == 0, result.output
    papers = json.loads(result.stdout)
    assert len(papers) == 3 and all(set(paper) >= PAPER_FIELDS for paper in papers)
    assert {papers[0]["paper_id"], papers[1]["paper_id"]} == {"complex-analysis", "holomorphic-notes"}
    titles = {paper["paper_id"]: paper["title"] for paper in papers}
    assert titles["holomorphic-notes"] == "Notes on Holomorphy"
    assert [paper["rank"] for paper in papers] == [1, 2, 3] and papers[0]["score"] >= papers[1]["score"]
    best = papers[0]["hits"]
    assert best and set(best[0]) >= HIT_FIELDS and best[0]["paper_id"] == papers[0]["paper_id"]
    assert [hit["score"] for hit in best] == sorted((hit["score"] for hit in best), reverse=True)
    assert best[0]["name"] == "Cauchy's integral formula"


def test_plain_search_shows_a_restated_statement_once_naming_its_other_places(demo_with_copy_index_dir: Path) -> None:
    args = ["search", "Cauchy's integral formula for holomorphic functions on a disc", "--json", "--k", "6"]
    result = runner.invoke(app, [*args, "--index", str(demo_with_copy_index_dir)])
    assert result.exit_code == 0, result.output
    hits = json.loads(result.stdout)
    texts = [hit["text"] for hit in hits]
    assert len(hits) == 6 and len(set(texts)) == len(texts)  # no statement text twice, still k results
    first = hits[0]
    assert first["name"] == "Cauchy's integral formula"
    [other] = first["duplicates"]
    assert {first["paper_id"], other["paper_id"]} == {"complex-analysis", "holomorphic-notes"}
    assert set(other) >= {"id", "paper_id", "title", "url"} and other["id"] != first["id"]
    assert all(hit["duplicates"] for hit in hits if hit["paper_id"] in {"complex-analysis", "holomorphic-notes"})
    listed = runner.invoke(app, ["duplicates", "--json", "--index", str(demo_with_copy_index_dir)])
    summary = json.loads(listed.stdout)
    # Every statement of the copy restates one of the original, and nothing else is grouped.
    assert summary["groups"] > 5 and summary["statements_in_groups"] == 2 * summary["groups"]
    assert summary["largest_group"] == 2


def test_search_papers_text_formula_and_empty_results(demo_index_dir: Path) -> None:
    index = ["--index", str(demo_index_dir)]
    result = runner.invoke(app, ["search", "Sylow subgroups are conjugate", "--papers", "--k", "2", *index])
    assert result.exit_code == 0, result.output
    assert " 1. " in result.stdout and "[finite-groups]" in result.stdout and "Sylow" in result.stdout
    formula = runner.invoke(app, ["search", "\\sum_{k=0}^{n} \\binom{n}{k}", "--formula", "--papers", "--json", *index])
    assert formula.exit_code == 0, formula.output
    assert json.loads(formula.stdout)[0]["paper_id"] == "enumerative-combinatorics"
    # A filter that leaves nothing (the demo corpus has no MSE posts): an empty list, not an error.
    for extra in ([], ["--formula"]):
        nothing = runner.invoke(app, ["search", "x^2", "--papers", "--source", "mse", "--json", *extra, *index])
        assert nothing.exit_code == 0 and json.loads(nothing.stdout) == [], nothing.output
    plain = runner.invoke(app, ["search", "compact", "--papers", "--source", "mse", *index])
    assert plain.exit_code == 0 and "no papers found" in plain.output


def test_search_needs_a_query_or_a_file(demo_index_dir: Path) -> None:
    result = runner.invoke(app, ["search", "--index", str(demo_index_dir)])
    assert result.exit_code != 0 and "QUERY" in result.output


def test_ingest_reports_bad_files_and_exit_codes(tmp_path: Path) -> None:
    bad = tmp_path / "bad.tex"
    bad.write_bytes(b"\x00binary")
    result = runner.invoke(app, ["ingest", str(bad), "--index", str(tmp_path / "index")])
    assert result.exit_code == 1
    assert f"{bad}: not a text file" in result.output
    paper = tmp_path / "p.tex"
    paper.write_text("\\begin{document}\\begin{theorem}[T] $1+1=2$.\\end{theorem}\\end{document}")
    result = runner.invoke(app, ["ingest", str(bad), str(paper), "--index", str(tmp_path / "index"), "--json"])
    assert result.exit_code == 1  # something was refused; the rest is ingested
    report = json.loads(result.stdout)
    assert report["statements"] == 1 and report["added"] == 1
    assert report["problems"][0]["path"] == str(bad)
    result = runner.invoke(app, ["ingest", str(paper), "--index", str(tmp_path / "index"), "--json"])
    assert result.exit_code == 0 and json.loads(result.stdout)["unchanged"] == 1  # everything in

    # --parse-only: the same codes (every input refused: 1)
    result = runner.invoke(app, ["ingest", "--parse-only", str(bad), "--index", str(tmp_path / "index")])
    assert result.exit_code == 1 and f"{bad}: not a text file" in result.output
    assert runner.invoke(app, ["ingest", "--parse-only", str(paper), "--index", str(tmp_path / "i2")]).exit_code == 0

    # a mistyped --index is a usage error for the commands that read an index, and creates nothing
    for command in (["search", "theorem"], ["ask", "What is T?"]):
        result = runner.invoke(app, [*command, "--index", str(tmp_path / "indx")])
        assert result.exit_code == 2 and "does not exist" in result.output, command
    assert not (tmp_path / "indx").exists()
    assert runner.invoke(app, ["search", "T", "--index", str(paper)]).exit_code == 2  # a file


def test_files_with_no_statements_are_a_note_and_a_bad_part_a_warning_exit_0(tmp_path: Path) -> None:
    # Issue 48, points 1 and 5: the Stacks project's introduction, an applied paper without theorem
    # environments, and a paper with one unreadable section are not refused inputs.
    book = tmp_path / "book"
    book.mkdir()
    (book / "introduction.tex").write_text("\\documentclass{article}\\begin{document}Welcome.\\end{document}")
    (book / "groups.tex").write_text(
        "\\documentclass{article}\\newtheorem{lemma}{Lemma}\\begin{document}\\input{figure}"
        "\\begin{lemma}Every group of prime order is cyclic.\\end{lemma}\\end{document}"
    )
    figure = tmp_path / "figure.tex"  # outside the paper's directory: refused, the rest read
    figure.write_text("\\begin{lemma}Not part of the paper.\\end{lemma}")
    (book / "groups.tex").write_text((book / "groups.tex").read_text().replace("{figure}", "{../figure}"))
    result = runner.invoke(app, ["ingest", str(book), "--index", str(tmp_path / "index"), "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["statements"] == 1 and report["no_statements"] == 1
    assert report["refused_parts"] == {str(book / "groups.tex"): 1}
    notes = [p for p in report["problems"] if p["severity"] == "note"]
    assert [(p["path"], p["reason"]) for p in notes] == [
        (str(book / "introduction.tex"), "no theorem-like statements found")
    ]
    text = runner.invoke(app, ["ingest", str(book), "--index", str(tmp_path / "index")])
    assert text.exit_code == 0 and "1 parts refused in 1 papers, 1 with no statements" in text.output
    parsed = runner.invoke(app, ["ingest", "--parse-only", str(book)])
    assert parsed.exit_code == 0 and "1 statements (nothing stored); 1 with no statements" in parsed.output


def test_ask_json_with_the_real_server(demo_index_dir: Path, llm_server: LLMServerProcess, monkeypatch) -> None:
    monkeypatch.setenv("RAG_APP_LLM__BASE_URL", llm_server.base_url)
    monkeypatch.setenv("RAG_APP_LLM__MAX_TOKENS", "32")
    monkeypatch.setenv("RAG_APP_ANSWERS__STYLE", "synthesis")  # a written answer (quoting: test_quoted_answer*)
    result = runner.invoke(
        app, ["ask", "What is Fermat's little theorem?", "--json", "--k", "3", "--index", str(demo_index_dir)]
    )
    assert result.exit_code == 0, result.output
    answer = json.loads(result.stdout)
    assert answer["answer"] and answer["llm_error"] is None
    assert {"question", "cited", "invalid_citations", "sources"} <= set(answer)
    assert any(source["name"] == "Fermat's little theorem" for source in answer["sources"])
    assert answer["prompt"] == "answer_with_citations@v4" and answer["status"] in ("answered", "unsupported")
    assert answer["citations_valid"] is (answer["invalid_citations"] == [])
    assert {"retrieval", "first_token", "full_answer", "total"} <= set(answer["timings_ms"])
    assert answer["relevance"]["score"] >= answer["relevance"]["threshold"]
    assert all({"text", "supported", "support", "best_source"} <= set(s) for s in answer["sentences"])
    assert all("score" in source for source in answer["sources"])
    assert answer["reranker"] == "" and "rerank" not in answer["timings_ms"]  # rerank.answer is off by default


def test_ask_rerank_names_the_reranker_and_its_time(demo_index_dir: Path, tiny_reranker_dir: Path, monkeypatch) -> None:
    monkeypatch.setenv("RAG_APP_LLM__BASE_URL", "http://127.0.0.1:9/v1")  # down: the sources still come back
    monkeypatch.setenv("RAG_APP_LLM__RETRIES", "0")
    monkeypatch.setenv("RAG_APP_RERANK__MODEL", str(tiny_reranker_dir))
    # The tiny test reranker orders at random, near enough: whether its first pick is close enough to the
    # question to ask the model is luck, and not what this test is about.
    monkeypatch.setenv("RAG_APP_ANSWERS__MIN_RELEVANCE", "0")
    args = ["ask", "Hilbert basis theorem", "--rerank", "--json", "--k", "3", "--index", str(demo_index_dir)]
    result = runner.invoke(app, args)
    assert result.exit_code == 4, result.output  # the model was wanted and not had: the sources still come
    answer = json.loads(result.stdout)
    assert answer["reranker"] == "tiny-test-reranker" and answer["timings_ms"]["rerank"] > 0
    assert len(answer["sources"]) == 3 and all("rerank" in s["channel_ranks"] for s in answer["sources"])
    monkeypatch.setenv("RAG_APP_RERANK__MODEL", str(tiny_reranker_dir / "missing"))
    result = runner.invoke(app, args)
    assert result.exit_code == 2 and "rag-app train rerank" in result.output


def test_ask_says_when_the_corpus_does_not_hold_the_answer(demo_index_dir: Path, monkeypatch) -> None:
    monkeypatch.setenv("RAG_APP_LLM__BASE_URL", "http://127.0.0.1:9/v1")  # not asked
    result = runner.invoke(app, ["ask", "How long should I boil an egg?", "--index", str(demo_index_dir)])
    assert result.exit_code == 0, result.output
    assert "does not seem to contain an answer" in result.stdout and "Sources:" in result.stdout
    assert "not available" not in result.stdout


def test_ask_plain_output_when_llm_is_down(demo_index_dir: Path, monkeypatch) -> None:
    monkeypatch.setenv("RAG_APP_LLM__BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("RAG_APP_LLM__RETRIES", "0")
    monkeypatch.setenv("RAG_APP_ANSWERS__QUOTE__RANKER_SURE_MARGIN", "none")  # the model always chooses
    monkeypatch.setenv("RAG_APP_ANSWERS__QUOTE__CHOOSER", "none")  # (no learned chooser: the way before issue 92)
    result = runner.invoke(app, ["ask", "Hilbert basis theorem", "--index", str(demo_index_dir)])
    assert result.exit_code == 4, "README, exit codes: the answer needed the model and none could be had"
    assert "not available" in result.stdout and "Sources:" in result.stdout
    assert "Hilbert's basis theorem" in result.stdout
    # Issue 76: the same search's next results, one line each after the sources ("rank. name ...: first words").
    listed = result.stdout.split("Next results (20 of ", 1)[1].splitlines()[1:]
    ranked = [line for line in listed if line[:3].strip().isdigit()]
    assert len(ranked) == 20 and all(". " in line and ": " in line for line in ranked), listed
    as_json = runner.invoke(app, ["ask", "Hilbert basis theorem", "--json", "--index", str(demo_index_dir)])
    assert as_json.exit_code == 4
    answer = json.loads(as_json.stdout)
    assert answer["llm_error"] and answer["status"] == "llm_unavailable" and answer["sources"]
    assert len(answer["next_results"]) > 20 and answer["next_results"][0]["rank"] > 1  # all that the search kept
    assert answer["llm"]["state"] == "down" and answer["llm"]["description"].startswith("http://127.0.0.1:9/v1")


def test_ask_quotes_the_rankers_clear_choice_with_no_model_and_exits_0(demo_index_dir: Path, monkeypatch) -> None:
    monkeypatch.setenv("RAG_APP_LLM__BASE_URL", "http://127.0.0.1:9/v1")  # down, and never asked
    monkeypatch.setenv("RAG_APP_LLM__RETRIES", "0")
    monkeypatch.setenv("RAG_APP_ANSWERS__QUOTE__RANKER_SURE_MARGIN", "0")  # any lead is clear enough
    monkeypatch.setenv("RAG_APP_ANSWERS__QUOTE__CHOOSER", "none")
    result = runner.invoke(app, ["ask", "Hilbert basis theorem", "--json", "--index", str(demo_index_dir)])
    assert result.exit_code == 0, result.output
    answer = json.loads(result.stdout)
    assert answer["chosen_by"] == "ranker" and answer["llm_error"] is None and answer["status"] == "answered"
    assert answer["answer"].startswith("[1] ")


def test_ask_quotes_the_learned_choosers_pick_with_the_model_down(demo_index_dir: Path, monkeypatch) -> None:
    """Issue 92: the learned chooser leads with the likeliest statement; the model only adds one, so an answer
    stands without it (exit 0) and its record says what the chooser read."""
    monkeypatch.setenv("RAG_APP_LLM__BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("RAG_APP_LLM__RETRIES", "0")
    result = runner.invoke(app, ["ask", "Hilbert basis theorem", "--json", "--index", str(demo_index_dir)])
    assert result.exit_code == 0, result.output
    answer = json.loads(result.stdout)
    assert answer["chosen_by"] == "chooser" and answer["status"] == "answered" and answer["llm_error"] is None
    quoted = answer["answer"].removeprefix(f"{answer['lead_in']}\n\n" if answer["lead_in"] else "")
    assert quoted.startswith("[1] Theorem (Hilbert's basis theorem)")  # under the verdict's line, where it has one
    assert answer["verdict"] in ("answers", "unsure") and 0 < answer["confidence"] < 1
    choice = answer["source_choice"]
    assert choice["order"][0] == 1 and choice["answers"] and len(choice["probabilities"]) == len(answer["sources"])
    # where the chooser was unsure enough to ask the model, the record says it could not be had
    assert answer["shown_first"] is None or "not available" in answer["shown_first"]["notice"]


@pytest.mark.slow
def test_installed_console_script_runs(demo_index_dir: Path) -> None:
    executable = Path(sys.executable).parent / "rag-app"
    if not executable.exists():
        pytest.fail("the rag-app console script is not installed in this environment")
    completed = subprocess.run(
        [str(executable), "search", "Tychonoff product compact", "--json", "--k", "1", "--index", str(demo_index_dir)],
        capture_output=True,
        text=True,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
        timeout=300,
    )
    assert completed.returncode == 0, completed.stderr
    assert json.loads(completed.stdout)[0]["name"] == "Tychonoff"


@pytest.mark.slow
def test_index_built_with_another_embedder_is_a_clear_error(tmp_path: Path) -> None:
    index = tmp_path / "index"
    index.mkdir()
    (index / "manifest.json").write_text(json.dumps({"format": 1, "embedder": "some/other-model"}))
    completed = subprocess.run(
        [str(Path(sys.executable).parent / "rag-app"), "search", "anything", "--index", str(index)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert completed.returncode == 2
    assert "built with the embedder 'some/other-model'" in completed.stderr
    assert "Traceback" not in completed.stderr


def test_parse_only_prints_records_with_the_search_fields_and_stores_nothing(
    demo_index_dir: Path, tmp_path: Path
) -> None:
    paper = tmp_path / "note.tex"
    paper.write_text(
        "\\documentclass{article}\\newtheorem{thm}{Theorem}\\newcommand{\\Z}{\\mathbb{Z}}\\begin{document}"
        "\\begin{thm}[Bezout]\\label{t} For $a, b \\in \\Z$ there are $x, y$ with \\(ax + by = \\gcd(a,b)\\)."
        "\\end{thm}\\begin{thm} See Theorem~\\ref{t}. \\end{thm}\\end{document}"
    )
    index = tmp_path / "index"
    result = runner.invoke(app, ["ingest", "--parse-only", "--json", str(paper), "--index", str(index)])
    assert result.exit_code == 0, result.output
    records = [json.loads(line) for line in result.stdout.splitlines()]
    search = runner.invoke(app, ["search", "Bezout", "--k", "1", "--json", "--index", str(demo_index_dir)])
    search_only = {"score", "rank", "channel_ranks", "duplicates", "uses_count", "used_by_count"}
    search_fields = set(json.loads(search.stdout)[0]) - search_only
    assert len(records) == 2 and set(records[0]) >= search_fields
    assert records[0]["name"] == "Bezout"
    assert records[0]["text"] == "For $a, b \\in \\mathbb{Z}$ there are $x, y$ with $ax + by = \\gcd(a,b)$."
    assert records[1]["text"] == "See Theorem 1."
    assert records[1]["references"] == [
        {"label": "t", "where": "statement", "statement_id": records[0]["id"], "section": "",
         "sentence": "See Theorem 1."}  # the citing sentence: what the citer says of it
    ]  # fmt: skip
    assert not index.exists()


def test_ingest_arxiv_needs_month_and_source(tmp_path: Path) -> None:
    result = runner.invoke(app, ["ingest", "arxiv", "--month", "2023-13", "--source", str(tmp_path)])
    assert result.exit_code == 2 and "YYYY-MM" in result.output
    result = runner.invoke(app, ["ingest", "arxiv", "--month", "2023-01"])
    assert result.exit_code == 2 and "--source" in result.output


@pytest.mark.parametrize(
    ("command", "message"),
    [
        (["train", "embed", "--learning-rate", "0"], "training.embed.learning_rate: Input should be greater than 0"),
        (["train", "embed", "--max-pairs", "2", "--learning-rate", "0.0"], "training.embed.learning_rate"),
    ],
)
def test_an_option_the_setting_refuses_is_a_usage_error_before_any_work(
    demo_index_dir: Path, command: list[str], message: str
) -> None:
    """Options were applied with ``model_copy``, which skips validation: ``--learning-rate 0`` trained at 0."""
    result = runner.invoke(app, [*command, "--index", str(demo_index_dir)])
    assert result.exit_code == 2, result.output
    assert message in result.output


def test_a_queries_file_that_cannot_be_read_is_a_usage_error_naming_it(tmp_path: Path) -> None:
    """Issue 62, defect 6: a directory, a missing file or a Latin-1 file gave tracebacks and exit 1."""
    latin = tmp_path / "queries-latin1.txt"
    latin.write_bytes("Poincaré duality\n".encode("latin-1"))
    for path, reason in (
        (tmp_path, "is a directory; give a file"),
        (tmp_path / "missing.txt", "no such file"),
        (latin, "not UTF-8 text"),
    ):
        result = CliRunner().invoke(app, ["search", "--queries", str(path), "--index", str(tmp_path / "none")])
        assert result.exit_code == 2, result.output
        assert f"--queries {path}: {reason}" in result.output and "Traceback" not in result.output
    assert not (tmp_path / "none").exists()  # checked before any work: no index was created


FILE_ARGUMENTS = {
    "eval SET": ["eval", "{path}", "--no-ingest-corpus"],
    "eval --qrels": ["eval", "--qrels", "{path}"],
    "eval --topics": ["eval", "--topics", "{path}"],
    "eval --run": ["eval", "--run", "{path}"],
    "eval --seen-papers": ["eval", "--seen-papers", "{path}"],
    "eval --split": ["eval", "--split", "{path}"],
    "train embed --questions-file": ["train", "embed", "--questions-file", "{path}"],
    "train questions --exclude-set": ["train", "questions", "--exclude-set", "{path}"],
    "ingest arxiv --metadata": ["ingest", "arxiv", "--month", "2024-01", "--source", "{tmp}", "--metadata", "{path}"],
    "ingest mse DUMP": ["ingest", "mse", "{path}"],
}


@pytest.mark.parametrize("command", list(FILE_ARGUMENTS))
def test_every_commands_file_arguments_are_checked_before_work(tmp_path: Path, command: str) -> None:
    """Issue 62, defect 6: every command's input files (not only `search --queries`): missing, a directory or
    (for text files) not UTF-8 is exit 2 naming the path and why, before any work (no index made)."""
    latin = tmp_path / "latin1.jsonl"
    latin.write_bytes('{"query": "Poincaré"}\n'.encode("latin-1"))
    cases = [(tmp_path / "missing.jsonl", "no such file"), (tmp_path, "is a directory; give a file")]
    if not command.startswith(("ingest mse", "ingest arxiv")):  # dumps and snapshots may be compressed
        cases.append((latin, "not UTF-8 text"))
    index = tmp_path / "index"
    for path, reason in cases:
        args = [part.format(path=path, tmp=tmp_path) for part in FILE_ARGUMENTS[command]]
        result = CliRunner().invoke(app, [*args, "--index", str(index)])
        assert result.exit_code == 2, (path, result.output)
        said = "".join(result.output.replace("│", "").split())  # unwrapped from the error box
        assert "".join(f"{path}: {reason}".split()) in said, result.output
        assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert not (index / "manifest.json").exists()


def test_an_empty_directory_named_like_a_file_is_said_and_refused(tmp_path: Path) -> None:
    """Issue 62, defect 6: `ingest looks_like_a_file.tex` (an empty directory) exited 0, nothing said."""
    empty = tmp_path / "looks_like_a_file.tex"
    empty.mkdir()
    (empty / "sub").mkdir()  # directories only: still nothing to read
    index = tmp_path / "index"
    result = CliRunner().invoke(app, ["ingest", str(empty), "--index", str(index)])
    assert result.exit_code == 1, result.output
    assert f"{empty}: an empty directory: nothing to ingest" in result.output
    assert not (index / "manifest.json").exists()  # nothing was written


def test_an_argument_no_encoder_can_read_exits_2_naming_it(demo_index_dir: Path) -> None:
    """Issue 85: `rag-app search "$(printf 'group \\xed\\xa0\\x80')"` ended in a traceback. Python decodes the
    invalid UTF-8 of an argument with surrogateescape: lone surrogates, which no tokenizer can take."""
    argument = b"group \xed\xa0\x80".decode("utf-8", "surrogateescape")
    for command in (["search", argument], ["search", argument, "--mode", "formula"], ["search", argument, "--papers"],
                    ["show", argument]):  # fmt: skip
        result = runner.invoke(app, [*command, "--index", str(demo_index_dir)])
        assert result.exit_code == 2, (command, result.output)
        assert "lone UTF-16 surrogate" in result.output and "Traceback" not in result.output


def test_search_and_ask_go_through_the_serving_backend_and_its_deadlines(demo_index_dir: Path, monkeypatch) -> None:
    """Issue 86: `rag-app ask` called MathRAG.ask_stream directly, with no deadline on its turn; now both commands
    take the backend's calls that the chat, HTTP and MCP take, and a call past its time limit exits 7."""
    monkeypatch.setenv("RAG_APP_LLM__BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("RAG_APP_API__SEARCH_TIMEOUT_S", "0.000001")
    monkeypatch.setenv("RAG_APP_API__ASK_TIMEOUT_S", "0.000001")
    late = runner.invoke(app, ["search", "Cauchy integral formula", "--index", str(demo_index_dir)])
    assert late.exit_code == 7 and "time limit" in late.output, late.output
    asked = runner.invoke(app, ["ask", "Cauchy integral formula", "--json", "--index", str(demo_index_dir)])
    assert asked.exit_code == 7 and "time limit" in asked.output, asked.output
    monkeypatch.delenv("RAG_APP_API__SEARCH_TIMEOUT_S")
    empty = runner.invoke(app, ["search", "   ", "--index", str(demo_index_dir)])
    assert empty.exit_code == 2 and "query is empty" in empty.output, empty.output
    # the API's size limits guard a server from remote clients, not a local user: k over api.max_k is served
    many = runner.invoke(app, ["search", "ring", "--k", "150", "--json", "--index", str(demo_index_dir)])
    assert many.exit_code == 0 and len(json.loads(many.stdout)) == 150, many.output
