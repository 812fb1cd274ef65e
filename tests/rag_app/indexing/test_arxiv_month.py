"""`ingest arxiv --month`: formats, metadata, reruns, new versions, time limits and kill -9."""

from __future__ import annotations

import gzip
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest

from rag_app import MathRAG
from rag_app.indexing.arxiv_month import ArxivMonthIngest
from tests.archives import tar_bytes
from tests.conftest import make_settings


def paper(number: int, statements: int = 3, extra: str = "") -> bytes:
    body = "\n".join(
        f"\\begin{{lemma}}\\label{{lem:{i}}} For the ring $R_{{{number}}}$ and $n = {i}$, the module "
        f"$M^{{\\oplus {i}}}$ is finite over $R_{{{number}}}$ {extra}.\\end{{lemma}}"
        for i in range(statements)
    )
    preamble = f"\\documentclass{{amsart}}\\newtheorem{{lemma}}{{Lemma}}[section]\\title{{Paper {number}}}"
    return (
        f"{preamble}\\author{{A. Author}}\\begin{{document}}\\maketitle\\section{{Modules}}\n{body}\n\\end{{document}}"
    ).encode()


def write_month(source: Path, papers: int = 4) -> None:
    source.mkdir(parents=True, exist_ok=True)
    (source / "2301.00001v1.tar.gz").write_bytes(gzip.compress(tar_bytes({"main.tex": paper(1)})))
    (source / "2301.00002v1.gz").write_bytes(gzip.compress(paper(2)))
    (source / "2301.00003v1.pdf").write_bytes(b"%PDF-1.4")
    (source / "2212.00009v1.gz").write_bytes(gzip.compress(paper(9)))  # another month: ignored
    bulk = {f"2301/2301.{n:05d}.gz": gzip.compress(paper(n)) for n in range(4, 4 + papers - 2)}
    bulk["2301/2301.00099.gz"] = gzip.compress(b"\x00\x01 binary")
    (source / "arXiv_src_2301_001.tar").write_bytes(tar_bytes(bulk))


def metadata_file(path: Path) -> Path:
    lines = [
        {
            "id": "2301.00001",
            "title": "Paper one",
            "authors": "A. Author",
            "categories": "math.AC math.AG",
            "abstract": "About modules.",
            "versions": [{"version": "v1", "created": "Mon, 2 Jan 2023 10:00:00 GMT"}],
            "update_date": "2023-01-03",
        },
        {"id": "2212.00009", "categories": "math.NT", "versions": []},
    ]
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n{broken json\n")
    return path


def store_snapshot(index_dir: Path) -> dict[str, tuple[str, str]]:
    rag = MathRAG(make_settings(index_dir.parent, index_dir=index_dir))
    return {r.id: (r.text, json.dumps(dict(r.metadata), sort_keys=True)) for r in rag.index.store.iter_records()}


def test_a_month_is_ingested_once_and_a_new_version_replaces_the_old(tmp_path: Path) -> None:
    source = tmp_path / "src"
    write_month(source)
    rag = MathRAG(make_settings(tmp_path))
    run = ArxivMonthIngest(rag.index, rag.settings.ingestion.limits, 2, metadata_file(tmp_path / "meta.jsonl"))
    report = run.run("2023-01", source)
    assert report.papers_ok == 4 and report.statements == 12 and report.added == 12
    assert sorted(p for p, _ in report.failed) == ["2301.00099"]
    assert len(report.skipped) == 1 and "PDF-only" in report.skipped[0][1]
    assert any(p.line == 3 and "bad metadata line" in p.reason for p in report.problems)
    records = {r.paper_id: r for r in rag.index.store.iter_records()}
    assert set(records) == {"2301.00001", "2301.00002", "2301.00004", "2301.00005"}
    first = records["2301.00001"]
    assert first.metadata["categories"] == "math.AC math.AG" and first.metadata["published"] == "2023-01-02"
    assert first.metadata["arxiv_version"] == "v1" and first.url == "https://arxiv.org/abs/2301.00001"
    assert first.title == "Paper 1"
    numbers = {r.metadata["number"] for r in rag.index.store.iter_records() if r.paper_id == "2301.00001"}
    assert numbers == {"1.1", "1.2", "1.3"}

    again = run.run("2023-01", source)
    assert (again.papers_ok, again.added, again.removed, again.unchanged) == (0, 0, 0, 5)

    # Version 2 of paper 2 has one lemma fewer and one changed: it replaces version 1's statements.
    (source / "2301.00002v2.gz").write_bytes(gzip.compress(paper(2, statements=2, extra="(revised)")))
    revised = run.run("2023-01", source)
    assert (revised.papers_ok, revised.added, revised.removed) == (1, 2, 3)
    texts = [r.text for r in rag.index.store.iter_records() if r.paper_id == "2301.00002"]
    assert len(texts) == 2 and all("(revised)" in t for t in texts)
    with sqlite3.connect(rag.index.directory / "papers.sqlite") as db:
        assert db.execute("SELECT version, statements FROM papers WHERE paper_id='2301.00002'").fetchone() == ("v2", 2)
    assert rag.search("module finite revised", k=1, mode="bm25")[0].record.paper_id == "2301.00002"


def write_month_with_a_slow_paper(source: Path) -> None:
    """2301.00001 parses at once; 2301.00002 (8,000 lemmas) takes far longer than 0.3 s."""
    source.mkdir()
    (source / "2301.00001.gz").write_bytes(gzip.compress(paper(1)))
    (source / "2301.00002.gz").write_bytes(gzip.compress(paper(2, statements=8000)))


def test_a_paper_over_the_time_limit_fails_alone(tmp_path: Path) -> None:
    write_month_with_a_slow_paper(tmp_path / "src")
    rag = MathRAG(make_settings(tmp_path))
    limits = replace(rag.settings.ingestion.limits, paper_timeout_s=0.3)
    report = ArxivMonthIngest(rag.index, limits, 2).run("2023-01", tmp_path / "src")
    assert report.papers_ok == 1
    assert report.failed == [("2301.00002", "parsing took longer than 0.3 s")]


def _cli(index: Path, source: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "rag_app.cli",
            "ingest",
            "arxiv",
            "--month",
            "2023-01",
            "--source",
            str(source),
            "--index",
            str(index),
            "--workers",
            "1",
            "--json",
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


@pytest.mark.slow
def test_kill_9_then_rerun_gives_the_store_of_an_uninterrupted_run(tmp_path: Path) -> None:
    source = tmp_path / "src"
    write_month(source, papers=24)
    env = {**os.environ, "RAG_APP_INGESTION__BATCH_STATEMENTS": "9", "RAG_APP_DATA_DIR": str(tmp_path / "data")}
    reference = tmp_path / "reference"
    uninterrupted = _cli(reference, source, env)  # side by side with the run that is killed

    interrupted = tmp_path / "interrupted"
    process = _cli(interrupted, source, env)
    manifest = interrupted / "papers.sqlite"
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        time.sleep(0.05)
        if manifest.exists():
            try:
                with sqlite3.connect(manifest) as db:
                    if db.execute("SELECT COUNT(*) FROM papers WHERE status='ok'").fetchone()[0] >= 6:
                        break
            except sqlite3.OperationalError:
                continue
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    with sqlite3.connect(manifest) as db:
        done = db.execute("SELECT COUNT(*) FROM papers WHERE status='ok'").fetchone()[0]
    assert 0 < done < 24, "the kill should land in the middle of the run"
    assert uninterrupted.wait(timeout=300) == 1  # 1: the month holds a refused paper
    assert _cli(interrupted, source, env).wait(timeout=300) == 1
    assert store_snapshot(interrupted) == store_snapshot(reference)
    rag = MathRAG(make_settings(tmp_path, index_dir=interrupted))
    assert not rag.index.lexical.stale
    assert len(rag.search("finite module ring", k=50, mode="bm25")) == 50


def test_the_python_api_ingests_a_month_with_the_report_the_cli_prints(tmp_path: Path) -> None:
    # Issue 39, point 3: MathRAG reaches what `ingest arxiv --month` does.
    from typer.testing import CliRunner

    from rag_app.cli import app

    source = tmp_path / "src"
    write_month(source)
    meta = metadata_file(tmp_path / "meta.jsonl")
    rag = MathRAG(make_settings(tmp_path / "api"))
    report = rag.ingest_arxiv_month("2023-01", source, meta).to_dict()
    arguments = ["arxiv", "--month", "2023-01", "--source", str(source), "--metadata", str(meta), "--json"]
    result = CliRunner().invoke(
        app,
        ["ingest", *arguments, "--index", str(tmp_path / "cli" / "index")],
        env={"RAG_APP_INGESTION__ISOLATE_PAPERS": "false"},
    )
    assert result.exit_code == 1, result.output  # one paper of the month is refused (2301.00099)
    printed = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["papers_ok"] == 4 and report["statements"] == 12
    assert {k: v for k, v in report.items() if k != "seconds"} == {k: v for k, v in printed.items() if k != "seconds"}
    again = rag.ingest_arxiv_month("2023-01", source, meta)  # resumable: nothing redone
    assert (again.papers_ok, again.added, again.removed) == (0, 0, 0) and rag.index.count() == 12
    for bad, error in ((("2023-13", source), ValueError), (("2023-01", tmp_path / "none"), NotADirectoryError)):
        try:
            rag.ingest_arxiv_month(*bad)
        except error:
            continue
        raise AssertionError(f"{bad} was accepted")
