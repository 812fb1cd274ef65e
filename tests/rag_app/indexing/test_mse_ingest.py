"""`ingest mse`: a real index, reruns, an edited and a deleted post, and the CLI."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

from typer.testing import CliRunner

from rag_app import MathRAG
from rag_app.cli import app
from rag_app.indexing.mse_ingest import MseIngest
from tests.conftest import make_settings

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "mse_posts.xml"


def posts(rag: MathRAG) -> dict[str, str]:
    return {str(r.metadata["docno"]): r.text for r in rag.index.store.iter_records()}


def test_newer_dump_updates_edited_posts_and_removes_deleted_ones(tmp_path: Path) -> None:
    rag = MathRAG(make_settings(tmp_path))
    run = MseIngest(rag.index, batch_statements=2)
    first = run.run(FIXTURE)
    assert first.records_by_kind == {"question": 2, "answer": 4} and first.added == 6 and first.complete
    again = run.run(FIXTURE)
    assert (again.added, again.removed_posts) == (0, 0) and rag.index.count() == 6

    newer = tmp_path / "Posts.xml"
    text = FIXTURE.read_text()
    text = text.replace("would be an integer dividing 2.", "would be an integer dividing 2 (edited).")
    text = "\n".join(line for line in text.splitlines() if '<row Id="2" ' not in line)  # answer 2 deleted
    newer.write_text(text)
    update = run.run(newer)
    assert (update.added, update.removed_posts) == (1, 1)
    stored = posts(rag)
    assert sorted(stored, key=int) == ["1", "3", "4", "5", "10"] and "(edited)" in stored["3"]
    assert rag.index.count() == 5
    hit = rag.search("rational root theorem integer dividing 2", k=1, mode="bm25")[0]
    assert hit.record.metadata["docno"] == "3" and "(edited)" in hit.record.text

    broken = tmp_path / "broken.xml"
    broken.write_text(text[: len(text) // 2])  # a dump cut short: read what is there, remove nothing
    partial = run.run(broken)
    assert not partial.complete and partial.removed_posts == 0 and rag.index.count() == 5


def test_cli_ingest_mse_with_filters(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app,
        [
            "ingest",
            "mse",
            str(FIXTURE),
            "--min-score",
            "3",
            "--tags",
            "number-theory,algebra",
            "--json",
            "--index",
            str(tmp_path / "index"),
        ],
    )
    assert result.exit_code == 1, result.output  # the fixture's bad rows are refused, the rest is in
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["records_by_kind"] == {"question": 1, "answer": 2} and report["added"] == 3
    assert {p["path"].rsplit("#", 1)[-1] for p in report["problems"]} == {"post-7", "post-8", "post-9"}
    result = CliRunner().invoke(app, ["ingest", "mse", str(FIXTURE), "--until", "2015/01/01"])
    assert result.exit_code == 2 and "YYYY-MM-DD" in result.output
    # a refused dump (an entity expansion attack): nothing ingested, the reason named, exit 1
    bomb = tmp_path / "bomb" / "Posts.xml"
    bomb.parent.mkdir()
    bomb.write_text('<?xml version="1.0"?><!DOCTYPE p [<!ENTITY a "aaaa">]><posts><row Id="1" Title="&a;"/></posts>')
    result = CliRunner().invoke(app, ["ingest", "mse", str(bomb), "--json", "--index", str(tmp_path / "i2")])
    assert result.exit_code == 1, result.output
    refused = json.loads(result.stdout.strip().splitlines()[-1])
    assert refused["added"] == 0 and "entity" in refused["problems"][0]["reason"]


def test_the_python_api_ingests_a_dump_with_the_report_the_cli_prints(tmp_path: Path) -> None:
    # Issue 39, point 3: MathRAG reaches what `ingest mse` does, filters included.
    from ingestion.mse_records import MseFilters

    rag = MathRAG(make_settings(tmp_path))
    report = rag.ingest_mse(FIXTURE, MseFilters(min_score=3, tags=frozenset({"number-theory", "algebra"})))
    printed = report.to_dict()
    assert printed["records_by_kind"] == {"question": 1, "answer": 2} and printed["added"] == 3
    assert {p["path"].rsplit("#", 1)[-1] for p in printed["problems"]} == {"post-7", "post-8", "post-9"}
    assert rag.index.count() == 3
    missing = tmp_path / "none.xml"
    try:
        rag.ingest_mse(missing)
    except FileNotFoundError as error:
        assert str(missing) in str(error)
    else:
        raise AssertionError("a missing dump was accepted")


def test_cli_a_cut_gzip_dump_exits_1_saying_how_far_it_got(tmp_path: Path) -> None:
    packed = gzip.compress(FIXTURE.read_bytes())
    dump = tmp_path / "Posts.xml.gz"
    dump.write_bytes(packed[: len(packed) - 8])  # the checksum and size are missing: the download was cut
    result = CliRunner().invoke(app, ["ingest", "mse", str(dump), "--json", "--index", str(tmp_path / "index")])
    assert result.exit_code == 1, result.output
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert not report["complete"]
    [cut] = [p for p in report["problems"] if p["path"] == str(dump)]
    assert re.match(r"compressed data cut short or corrupt after row \d+ \(line \d+\)", cut["reason"])


def test_cli_a_dump_given_to_plain_ingest_is_refused_with_the_command_to_use(tmp_path: Path) -> None:
    dump = tmp_path / "Posts.xml"
    dump.write_bytes(FIXTURE.read_bytes())
    result = CliRunner().invoke(app, ["ingest", str(dump), "--index", str(tmp_path / "index")])
    assert result.exit_code == 1
    assert f"ingest it with `rag-app ingest mse {dump}`" in result.output
