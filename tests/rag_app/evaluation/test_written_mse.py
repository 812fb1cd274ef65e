"""The MSE threads written for the user-questions set become a dump the MSE ingest reads."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ingestion.mse_posts import read_posts
from ingestion.problems import IngestProblem
from rag_app.datasets.query_set import QuerySet
from rag_app.evaluation.written_mse import WRITTEN_MSE_THREADS, write_posts_xml

USER_QUESTIONS = Path(__file__).resolve().parents[3] / "eval" / "questions" / "user-questions.v1.jsonl"


def test_the_written_threads_read_back_as_questions_and_answers(tmp_path: Path) -> None:
    posts_xml = tmp_path / "Posts.xml"
    count = write_posts_xml(WRITTEN_MSE_THREADS, posts_xml)
    problems: list[IngestProblem] = []
    posts = list(read_posts(posts_xml, problems))
    assert not problems and len(posts) == count
    questions = [p for p in posts if p.post_type == "question"]
    answers = {p.post_id: p for p in posts if p.post_type == "answer"}
    assert questions and all(q.accepted_answer_id in answers for q in questions)
    vandermonde = next(q for q in questions if "Vandermonde" in q.title)
    assert "$\\det\\big(x_i^{j-1}\\big)" in vandermonde.body_html  # the mathematics stays as typed
    assert "linear-algebra" in vandermonde.tags


def test_a_thread_without_its_answers_is_named_by_line(tmp_path: Path) -> None:
    threads = tmp_path / "threads.jsonl"
    threads.write_text(json.dumps({"question_id": 1, "title": "t", "tags": [], "question": "q"}) + "\n")
    with pytest.raises(ValueError, match=r"threads.jsonl:1: thread without 'answers'"):
        write_posts_xml(threads, tmp_path / "Posts.xml")


def test_every_mse_question_of_the_user_set_has_a_written_answer() -> None:
    answers = {
        f"mse-{answer['id']}"
        for line in WRITTEN_MSE_THREADS.read_text().splitlines()
        for answer in json.loads(line)["answers"]
    }
    user = QuerySet.load(USER_QUESTIONS)
    assert user.size >= 150
    mse = [q for q in user.queries if q.metadata.get("corpus") == "mse"]
    assert mse and all(any(paper in answers for paper in q.paper_ids) for q in mse)
