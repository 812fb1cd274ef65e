"""A transcript of an MCP client session: the official SDK's client starts `rag-app mcp` on stdio, lists
its tools and calls each one, printing what an agent would send and receive (results shortened).

    python scripts/mcp_session.py --index DIR [--question TEXT] > docs/mcp-session.md

DIR: an index of the demo corpus (written by us: the transcript quotes it), e.g. `rag-app ingest --demo --index DIR`.

The `ask` call runs the packaged LLM (tens of seconds on a CPU).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters


def shortened(value: Any, width: int = 160) -> Any:
    """Long strings cut, long lists cut to three: a transcript a person reads."""
    if isinstance(value, str):
        flat = " ".join(value.split())
        return flat if len(flat) <= width else flat[:width] + " …"
    if isinstance(value, list):
        return [shortened(item, width) for item in value[:3]] + ([f"… {len(value) - 3} more"] if len(value) > 3 else [])
    if isinstance(value, dict):
        return {key: shortened(item, width) for key, item in value.items()}
    return value


async def session(index: Path, calls: list[tuple[str, dict[str, Any]]]) -> None:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "ANONYMIZED_TELEMETRY": "False"}
    command = str(Path(sys.executable).with_name("rag-app"))
    parameters = StdioServerParameters(command=command, args=["mcp", "--index", str(index)], env=env)
    print(f"$ rag-app mcp --index {index}   (started by the client, stdio)\n")
    async with Client(parameters, read_timeout_seconds=600) as client:
        tools = await client.list_tools()
        print("## tools/list\n")
        for tool in tools.tools:
            print(f"- **{tool.name}**: {tool.description}")
        print()
        found_id = None
        for name, arguments in calls:
            if name == "get_statement" and not arguments and found_id:
                arguments = {"id_or_label": found_id}
            print(f"## tools/call {name}\n\n```json\n{json.dumps(arguments, ensure_ascii=False)}\n```\n")
            result = await client.call_tool(name, arguments)
            if result.is_error:
                payload = {"is_error": True, "text": result.content[0].text}
            else:
                payload = result.structured_content
            if name == "search_statements" and not result.is_error and payload["results"]:
                found_id = payload["results"][0]["id"]
            if name == "get_statement" and not result.is_error:
                payload = {key: payload[key] for key in ("id", "display_name", "label", "title", "url", "text",
                                                         "uses", "used_by", "definitions", "cite_as")}  # fmt: skip
            print(f"```json\n{json.dumps(shortened(payload), indent=1, ensure_ascii=False)}\n```\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--index", type=Path, required=True, help="an index of the demo corpus: rag-app ingest --demo")
    parser.add_argument("--question", default="Is every bounded entire function constant?")
    args = parser.parse_args()
    calls = [
        ("search_statements", {"query": "bounded entire function constant", "k": 2}),
        ("get_statement", {}),
        ("find_papers", {"query": "Galois correspondence intermediate fields", "k": 2}),
        ("search_formula", {"formula": r"\pi_1(S^1) \cong \mathbb{Z}", "k": 2}),
        ("get_statement", {"id_or_label": "no-such-label"}),
        ("ask", {"question": args.question}),
    ]
    anyio.run(session, args.index, calls)


if __name__ == "__main__":
    main()
