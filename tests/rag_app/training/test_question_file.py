"""The generated-questions file: versioned, with its corpus and license, extended (never redone) by reruns."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ingestion import ingest_sources
from rag_app.pipeline import demo_corpus_path
from rag_app.serving.llm_client import ChatClient
from rag_app.training.question_file import FORMAT, QuestionFile, QuestionFileError, extend_questions
from rag_app.training.question_generator import QuestionCache, QuestionGenerator
from tests.rag_app.training.test_question_generator import ScriptedChatServer


@pytest.fixture(scope="module")
def statements() -> list:
    papers = ingest_sources([demo_corpus_path() / "real-analysis"])
    return [record for paper in papers for record in paper.records][:6]


def _generator(server: ScriptedChatServer, tmp_path: Path) -> QuestionGenerator:
    # A fresh cache each time: the file, not the cache, must be what makes a rerun skip statements.
    cache = QuestionCache(tmp_path / f"cache-{server.requests}-{id(server)}.sqlite")
    return QuestionGenerator(ChatClient(server.url, retries=0), cache, concurrency=1, attempts=1)


def test_a_rerun_extends_the_file_and_regenerates_nothing(statements: list, tmp_path: Path) -> None:
    path = tmp_path / "questions.jsonl"
    header = {"corpus": {"papers": 1}, "license": "CC BY 4.0"}
    server = ScriptedChatServer([])
    first = extend_questions(QuestionFile.load(path), statements, _generator(server, tmp_path), header, limit=4,
                             chunk=3, show_progress=False)  # fmt: skip
    assert (first.existing, first.added, first.remaining) == (0, 4, 2)
    assert server.requests == 4
    lines = path.read_text(encoding="utf-8").splitlines()
    head = json.loads(lines[0])
    assert head["format"] == FORMAT and head["version"] == 1 and head["license"] == "CC BY 4.0"
    assert len(lines) == 5
    before = lines[1:]

    second = extend_questions(QuestionFile.load(path), statements, _generator(server, tmp_path),
                              {"license": "changed"}, show_progress=False)  # fmt: skip
    assert (second.existing, second.added, second.remaining) == (4, 2, 0)
    assert server.requests == 6  # only the two statements without a question were asked for
    lines = path.read_text(encoding="utf-8").splitlines()
    assert lines[1:5] == before  # the old questions are kept as they were
    assert json.loads(lines[0])["license"] == "CC BY 4.0"  # an existing file keeps its header
    loaded = QuestionFile.load(path)
    assert loaded.statement_ids == {r.id for r in statements}
    assert {p.kind for p in loaded.pairs()} == {"question"}
    assert len(loaded.pairs({statements[0].id})) == 1

    third = extend_questions(loaded, statements, _generator(server, tmp_path), {}, show_progress=False)
    assert third.added == 0 and server.requests == 6


def test_a_line_cut_off_by_a_kill_is_dropped_and_regenerated(statements: list, tmp_path: Path) -> None:
    path = tmp_path / "questions.jsonl"
    server = ScriptedChatServer([])
    extend_questions(QuestionFile.load(path), statements[:2], _generator(server, tmp_path), {}, show_progress=False)
    text = path.read_text(encoding="utf-8")
    path.write_text(text[: len(text) - 20], encoding="utf-8")  # the last question half written
    loaded = QuestionFile.load(path)
    assert len(loaded.questions) == 1
    report = extend_questions(loaded, statements[:2], _generator(server, tmp_path), {}, show_progress=False)
    assert report.added == 1 and len(QuestionFile.load(path).questions) == 2


def test_a_broken_line_in_the_middle_is_an_error_naming_the_line(tmp_path: Path) -> None:
    path = tmp_path / "questions.jsonl"
    path.write_text(json.dumps({"format": FORMAT, "version": 1}) + "\nnot json\n{}\n", encoding="utf-8")
    with pytest.raises(QuestionFileError, match=r"questions.jsonl:2"):
        QuestionFile.load(path)
    path.write_text('{"format": "something else"}\n', encoding="utf-8")
    with pytest.raises(QuestionFileError, match="not a generated-questions file"):
        QuestionFile.load(path)
