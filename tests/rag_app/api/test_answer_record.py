"""One answer record from every front end (issue 86): `ask --json`, `POST /v1/ask`, the stream's `answer`
event and the MCP `ask` tool return the same keys. `ask --json` used to add `llm`, HTTP lacked it, and MCP
built its own shape that said `paper_title` where every other hit says `source_title`.

The LLM is down (a closed port): the answer comes back with its sources and `llm_error`, in milliseconds,
and its record has every key an answer has."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import httpx
import pytest
from mcp import Client
from typer.testing import CliRunner

from rag_app import MathRAG
from rag_app.answering.answer_record import AnswerRecord
from rag_app.api.mcp_tools import build_mcp_server
from rag_app.cli import app
from tests.conftest import make_settings
from tests.rag_app.api.test_http_api import serving

QUESTION = "Hilbert basis theorem"
DOWN = "http://127.0.0.1:9/v1"


@pytest.fixture
def rag(demo_index_dir: Path, tmp_path: Path) -> MathRAG:
    # the model's way of choosing (no learned chooser): the model is needed, and down
    answers = {"style": "quote", "quote": {"chooser": "none"}}
    settings = make_settings(tmp_path, index_dir=demo_index_dir, answers=answers)
    settings.llm.base_url = DOWN
    settings.llm.retries = 0
    return MathRAG(settings)


def test_the_cli_http_stream_and_mcp_return_the_same_record(
    rag: MathRAG, demo_index_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RAG_APP_LLM__BASE_URL", DOWN)
    monkeypatch.setenv("RAG_APP_LLM__RETRIES", "0")
    monkeypatch.setenv("RAG_APP_ANSWERS__STYLE", "quote")
    monkeypatch.setenv("RAG_APP_ANSWERS__QUOTE__CHOOSER", "none")
    cli = CliRunner().invoke(app, ["ask", QUESTION, "--json", "--index", str(demo_index_dir)])
    assert cli.exit_code == 4, cli.output  # the model was needed and is down: the sources still come back
    from_cli = json.loads(cli.stdout)

    with serving(rag) as url, httpx.Client(base_url=url, timeout=120) as client:
        posted = client.post("/v1/ask", json={"question": QUESTION})
        assert posted.status_code == 503, posted.text
        from_http = posted.json()
        streamed = client.post("/v1/ask/stream", json={"question": QUESTION}).text
    events = dict(_events(streamed))
    from_stream = events["answer"]

    async def ask_the_tool() -> dict:
        async with Client(build_mcp_server(rag)) as mcp:
            result = await mcp.call_tool("ask", {"question": QUESTION})
            assert not result.is_error, result.content
            return result.structured_content

    from_mcp = anyio.run(ask_the_tool)

    keys = set(AnswerRecord.__annotations__)
    for name, record in {"ask --json": from_cli, "POST /v1/ask": from_http, "stream": from_stream,
                         "MCP ask": from_mcp}.items():  # fmt: skip
        assert set(record) == keys, f"{name}: {sorted(set(record) ^ keys)}"
        assert record["llm"]["state"] == "down", name
        assert record["sources"] and record["llm_error"], name
    hit_keys = set(from_http["sources"][0])
    assert "source_title" in hit_keys
    for hit in (*from_mcp["sources"], *from_mcp["next_results"]):  # shortened, nothing renamed
        assert set(hit) - hit_keys <= {"cite_as", "paper_title"}, sorted(set(hit) - hit_keys)
        assert hit["source_title"] == hit["paper_title"]
    assert [hit["id"] for hit in from_mcp["sources"]] == [hit["id"] for hit in from_http["sources"]]


def _events(stream: str) -> list[tuple[str, dict]]:
    found = []
    for block in stream.strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
        found.append((lines["event"], json.loads(lines["data"])))
    return found
