"""The MCP server, driven by the official SDK's own client: in process, over streamable HTTP under
`rag-app serve`, and over stdio from a `rag-app mcp` process."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters

from rag_app import MathRAG
from rag_app.api.mcp_tools import build_mcp_server
from tests.conftest import make_settings
from tests.rag_app.api.test_http_api import serving

TOOLS = {"search_statements", "find_papers", "search_formula", "get_statement", "ask"}


async def call_every_search_tool(client: Client) -> dict[str, object]:
    """Each tool but ask (the LLM's), as an agent would chain them: search, then read what it found."""
    listed = await client.list_tools()
    assert {tool.name for tool in listed.tools} == TOOLS
    assert all(len(tool.description or "") > 80 for tool in listed.tools), "descriptions written for a model"
    found = await client.call_tool("search_statements", {"query": "bounded entire function", "k": 3})
    assert not found.is_error, found.content
    results = found.structured_content["results"]
    assert results and {"text", "cite_as", "url", "label", "paper_title"} <= set(results[0])
    papers = await client.call_tool("find_papers", {"query": "Galois extension", "k": 2})
    assert papers.structured_content["papers"][0]["paper_id"] == "galois-theory"
    formula = await client.call_tool("search_formula", {"formula": r"\sum_n a_n z^n", "k": 2})
    assert not formula.is_error
    statement = await client.call_tool("get_statement", {"id_or_label": results[0]["id"]})
    assert statement.structured_content["id"] == results[0]["id"] and "used_by" in statement.structured_content
    missing = await client.call_tool("get_statement", {"id_or_label": "lem:nowhere"})
    assert missing.is_error and "no statement has the id or label" in missing.content[0].text
    too_many = await client.call_tool("search_statements", {"query": "ring", "k": 10**9})
    assert too_many.is_error and "k must be between 1 and" in too_many.content[0].text
    return {"search": results, "statement": statement.structured_content}


def test_every_tool_in_process(demo_index_dir: Path, tmp_path: Path) -> None:
    rag = MathRAG(make_settings(tmp_path, index_dir=demo_index_dir))

    async def session() -> None:
        async with Client(build_mcp_server(rag)) as client:
            await call_every_search_tool(client)

    anyio.run(session)


def test_the_tools_over_streamable_http_under_serve(demo_index_dir: Path, tmp_path: Path) -> None:
    rag = MathRAG(make_settings(tmp_path, index_dir=demo_index_dir))
    with serving(rag) as url:

        async def session() -> None:
            async with Client(f"{url}/mcp") as client:
                await call_every_search_tool(client)

        anyio.run(session)


def test_rag_app_mcp_over_stdio(demo_index_dir: Path, tmp_path: Path) -> None:
    env = {**os.environ, "RAG_APP_DATA_DIR": str(tmp_path / "data"), "HF_HUB_OFFLINE": "1"}
    command = str(Path(sys.executable).with_name("rag-app"))
    parameters = StdioServerParameters(command=command, args=["mcp", "--index", str(demo_index_dir)], env=env)

    async def session() -> None:
        async with Client(parameters, read_timeout_seconds=120) as client:
            await call_every_search_tool(client)

    anyio.run(session)


def test_ask_quotes_its_sources_through_the_tool(demo_rag: MathRAG) -> None:
    async def session() -> None:
        async with Client(build_mcp_server(demo_rag)) as client:
            answer = await client.call_tool("ask", {"question": "Which entire functions are bounded?"})
            assert not answer.is_error, answer.content
            payload = answer.structured_content
            assert payload["sources"] and payload["status"] and "cite_as" in payload["sources"][0]
            assert "lead_in" in payload and all({"purpose", "ms"} <= set(c) for c in payload["model_calls"])
            listed = payload["next_results"]  # issue 76: the list the chat shows under the answer
            assert len(listed) == 20 and "cite_as" in listed[0]
            assert not {hit["id"] for hit in listed} & {hit["id"] for hit in payload["sources"]}

    anyio.run(session)


def test_get_statement_refuses_an_id_over_the_length_limit_as_http_does(demo_index_dir: Path, tmp_path: Path) -> None:
    """Issue 77, defect 4: MCP `get_statement` had no length check where `/v1/statements/...` has one."""
    rag = MathRAG(make_settings(tmp_path, index_dir=demo_index_dir))
    too_long = "x" * (rag.settings.api.max_query_chars + 1)

    async def session() -> None:
        async with Client(build_mcp_server(rag)) as client:
            result = await client.call_tool("get_statement", {"id_or_label": too_long})
            assert result.is_error
            assert "over" in result.content[0].text and "characters" in result.content[0].text

    anyio.run(session)


def test_a_missing_reranker_is_reported_to_the_model_in_words(demo_index_dir: Path, tmp_path: Path) -> None:
    """Issue 77, defect 1, under MCP: the error names the command that builds the model."""
    rerank = {"search": True, "model": str(tmp_path / "no-reranker-here")}
    rag = MathRAG(make_settings(tmp_path, index_dir=demo_index_dir, rerank=rerank))

    async def session() -> None:
        async with Client(build_mcp_server(rag)) as client:
            result = await client.call_tool("search_statements", {"query": "Sylow subgroups"})
            assert result.is_error and "rag-app train rerank" in result.content[0].text

    anyio.run(session)


def test_the_search_tools_take_the_filters_the_cli_applies(demo_index_dir: Path, tmp_path: Path) -> None:
    """Issue 93: MCP's formula search took no filter, and its statement search no category or date."""
    rag = MathRAG(make_settings(tmp_path, index_dir=demo_index_dir))

    async def session() -> None:
        async with Client(build_mcp_server(rag)) as client:
            formula = {"formula": r"\sum_n a_n z^n", "k": 2}
            plain = await client.call_tool("search_formula", formula)
            assert not plain.is_error and plain.structured_content["results"]
            # the demo corpus is local LaTeX, in no arXiv category: a category leaves nothing
            filtered = await client.call_tool("search_formula", formula | {"category": ["math.NT"], "kind": ["lemma"]})
            assert not filtered.is_error, filtered.content
            assert filtered.structured_content["results"] == []
            query = {"query": "bounded entire function", "k": 2, "category": ["math.NT"], "date_from": "2020-01-01"}
            statements = await client.call_tool("search_statements", query)
            assert not statements.is_error and statements.structured_content["results"] == []

    anyio.run(session)
