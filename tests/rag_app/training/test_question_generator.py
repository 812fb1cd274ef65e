"""LLM questions: reply repair units, a scripted server for malformed replies, the real local server."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from ingestion import ingest_sources
from rag_app.pipeline import demo_corpus_path
from rag_app.serving.llm_client import ChatClient
from rag_app.serving.llm_server import LLMServerProcess
from rag_app.training.question_generator import (
    MalformedReplyError,
    QuestionCache,
    QuestionGenerator,
    escape_backslashes,
    extract_json_object,
    parse_question,
)


def test_replies_are_repaired_the_thesis_way() -> None:
    escaped = '{"question": "When is $\\\\frac{a}{b}$ an integer?"}'
    assert parse_question(escaped) == "When is $\\frac{a}{b}$ an integer?"
    # Unescaped LaTeX: "\frac" would otherwise parse as a form feed followed by "rac".
    assert parse_question('{"question": "When is $\\frac{a}{b}$ and $\\nabla f$ zero?"}') == (
        "When is $\\frac{a}{b}$ and $\\nabla f$ zero?"
    )
    chatter = 'Sure! Here is the JSON:\n```json\n{"question": "Is every {compact} set closed?"}\n```\nHope it helps.'
    assert parse_question(chatter) == "Is every {compact} set closed?"
    assert extract_json_object("no braces") is None
    assert escape_backslashes('a \\\\ b \\" c \\x') == 'a \\\\ b \\" c \\\\x'
    for bad in ("I cannot help with that.", '{"answer": "yes"}', '{"question": "short"}', '{"question": "unclosed'):
        with pytest.raises(MalformedReplyError):
            parse_question(bad)


class ScriptedChatServer:
    """An OpenAI-compatible chat server that replies with the scripted texts in turn."""

    def __init__(self, replies: list[str]) -> None:
        self.replies = replies
        self.requests = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:  # /v1/models
                self._send({"object": "list", "data": [{"id": "scripted", "object": "model"}]})

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers["Content-Length"]))
                outer.requests += 1
                text = outer.replies.pop(0) if outer.replies else '{"question": "What is a scripted default?"}'
                chunk = {"id": "x", "object": "chat.completion.chunk", "created": 0, "model": "scripted",
                         "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]}  # fmt: skip
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                self.wfile.write(f"data: {json.dumps(chunk)}\n\ndata: [DONE]\n\n".encode())

            def _send(self, data: dict) -> None:
                body = json.dumps(data).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()


@pytest.fixture(scope="module")
def statements() -> list:
    papers = ingest_sources([demo_corpus_path() / "real-analysis"])
    return [record for paper in papers for record in paper.records][:3]


@pytest.fixture
def cache(tmp_path: Path) -> Iterator[QuestionCache]:
    cache = QuestionCache(tmp_path / "questions.sqlite")
    yield cache
    cache.close()


def test_malformed_replies_are_retried_then_reported_and_good_ones_cached(
    statements: list, cache: QuestionCache
) -> None:
    server = ScriptedChatServer(
        [
            'Here you go: {"question": "When is a bounded monotone sequence convergent in $\\mathbb{R}$?"}',
            "I am sorry, I cannot do that.",
            '{"question": "What does the intermediate value theorem say about $f(a) < 0 < f(b)$?"}',
            "nope", "still no", "never",
        ]
    )  # fmt: skip
    generator = QuestionGenerator(ChatClient(server.url, retries=0), cache, concurrency=1, attempts=3)
    report = generator.generate(statements)
    assert report.generated == 2 and len(report.failures) == 1 and report.repaired == 2
    (reason,) = report.failures.values()
    assert "3 malformed replies" in reason
    assert any("\\mathbb{R}" in pair.anchor for pair in report.pairs)
    assert {pair.kind for pair in report.pairs} == {"question"}
    asked = server.requests
    again = generator.generate(statements)
    assert again.cached == 2 and again.generated + len(again.failures) == 1
    assert server.requests == asked + 1  # only the failed statement is asked again


@pytest.mark.llm
def test_questions_from_the_real_local_server(
    statements: list, cache: QuestionCache, llm_server: LLMServerProcess
) -> None:
    client = ChatClient(llm_server.base_url, retries=1, temperature=0.7, max_tokens=96)
    generator = QuestionGenerator(client, cache, concurrency=2, attempts=2)
    report = generator.generate(statements[:2])
    # A 135M model does not always manage the JSON: every statement ends as a question or a clear failure.
    assert report.generated + len(report.failures) == 2
    for pair in report.pairs:
        assert len(pair.anchor) >= 8 and "\n" not in pair.anchor
    for reason in report.failures.values():
        assert "malformed" in reason or "JSON" in reason
    assert generator.generate(statements[:2]).cached == report.generated


def test_a_server_that_went_away_is_reached_again_through_reconnect(
    statements: list, cache: QuestionCache, tmp_path: Path
) -> None:
    # A job of hours whose llama.cpp server died failed every question left ("not reachable"), fast.
    server = ScriptedChatServer([])
    dead = ChatClient("http://127.0.0.1:9/v1", model="scripted", retries=0)  # nothing listens: the server went away
    reconnects: list[int] = []

    def reconnect() -> ChatClient:  # as rag.llm.client() restarts a dead local server
        reconnects.append(1)
        return ChatClient(server.url, retries=0)

    report = QuestionGenerator(dead, cache, concurrency=1, reconnect=reconnect).generate(statements)
    assert report.generated == 3 and report.failures == {}
    assert reconnects == [1]  # once; the new client served the rest
    other_cache = QuestionCache(tmp_path / "other.sqlite")
    without = QuestionGenerator(dead, other_cache, concurrency=1)
    assert len(without.generate(statements).failures) == 3  # what the job did before
    other_cache.close()
