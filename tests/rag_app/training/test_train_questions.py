"""The `train questions` job: no question for a statement a development set judges (its answers stay unseen)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rag_app.datasets.query_set import QuerySet
from rag_app.training.question_file import QuestionFile
from rag_app.training.train_questions import generate_questions, judged_docnos
from tests.conftest import make_settings
from tests.rag_app.training.test_question_generator import ScriptedChatServer

# Trains, starts a server or browser, or reads real corpora: out of the fast tier.
pytestmark = pytest.mark.slow


def write_set(path: Path, judged: list[str]) -> Path:
    header = {"format": "rag-app-query-set", "name": "dev", "version": 1, "protocol": "known-item"}
    rows = [{"qid": f"q{i}", "query": f"question {i}", "relevant": {docno: 1}} for i, docno in enumerate(judged)]
    path.write_text("\n".join(json.dumps(row) for row in [header, *rows]) + "\n")
    return path


def test_the_statements_a_development_set_judges_get_no_question(demo_index_dir: Path, tmp_path: Path) -> None:
    settings = make_settings(tmp_path, index_dir=demo_index_dir)
    settings.llm.base_url = (server := ScriptedChatServer([])).url
    settings.training.embed.question_concurrency = 1
    try:
        everything = generate_questions(settings, demo_index_dir, tmp_path / "all.jsonl", log=lambda _: None)
        generated = QuestionFile.load(tmp_path / "all.jsonl").questions
        judged = sorted({q.docno for q in generated})[::3]  # a third of the statements, as a dev set's answers
        dev = write_set(tmp_path / "dev.jsonl", judged)
        assert judged_docnos([dev]) == set(judged) == {d for q in QuerySet.load(dev).queries for d in q.relevant}
        report = generate_questions(
            settings, demo_index_dir, tmp_path / "kept.jsonl", log=lambda _: None, exclude_sets=[dev]
        )
    finally:
        server.httpd.shutdown()
    kept = QuestionFile.load(tmp_path / "kept.jsonl")
    assert kept.questions and not {q.docno for q in kept.questions} & set(judged)
    assert report.added == everything.added - len(judged)
    assert kept.header["excluded_sets"] == ["dev.jsonl"]
