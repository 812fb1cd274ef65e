"""`rag-app serve` (the HTTP API, with the MCP server under /mcp) and `rag-app mcp` (the MCP server on stdio)."""

from __future__ import annotations

import contextlib
import json
from typing import Annotated, Optional

import typer

from rag_app.cli.common import EXIT_USAGE, ConfigOption, IndexOption, _err, _searched_settings, _settings, app
from rag_app.cli.serve import _stop_on_signals
from rag_app.pipeline import MathRAG


@app.command()
def serve(
    host: Annotated[Optional[str], typer.Option(help="address to bind (default: api.host, 127.0.0.1)")] = None,
    port: Annotated[Optional[int], typer.Option(help="port (default: api.port, 8765)")] = None,
    no_mcp: Annotated[bool, typer.Option("--no-mcp", help="leave the MCP server out of the HTTP API")] = False,
    openapi: Annotated[
        bool, typer.Option("--openapi", help="print the OpenAPI document (docs/openapi.json) and exit")
    ] = False,
    index: IndexOption = None,
    config: ConfigOption = None,
) -> None:
    """Serve the index to other programs: the HTTP API (/v1/search, /v1/papers, /v1/formula,
    /v1/statements/ID, /v1/ask, /v1/ask/stream, /v1/status, /healthz; OpenAPI at /openapi.json) and the MCP
    server under /mcp. Binds 127.0.0.1; any other address needs a token (RAG_APP_API__TOKEN)."""
    import uvicorn

    from rag_app.api.connection_limits import uvicorn_options
    from rag_app.api.guards import UnsafeBindError, check_bind
    from rag_app.api.http_app import create_app
    from rag_app.api.warm_up import start_warm_up

    if openapi:  # the routes' document needs no index
        typer.echo(json.dumps(create_app(MathRAG(_settings(config, index))).openapi(), indent=2, ensure_ascii=False))
        return
    settings = _searched_settings(config, index)
    given = {key: value for key, value in (("host", host), ("port", port)) if value}
    limits = settings.api.model_validate(settings.api.model_dump() | given)
    try:
        check_bind(limits.host, limits.token.get_secret_value() if limits.token else None)
    except UnsafeBindError as error:
        _err(f"error: {error}")
        raise typer.Exit(EXIT_USAGE) from None
    # uvicorn ends on SIGTERM, then raises the signal again under the handler it found: Python's default
    # would kill the process there, before the LLM server this command started is stopped (an orphan
    # holding ~1 GB). Ours ends it through the `with` below instead.
    _stop_on_signals()
    with contextlib.suppress(KeyboardInterrupt), MathRAG(settings) as rag:
        rag.index.count()  # open the index now: a missing or damaged one fails here, not at the first request
        if limits.warm_up:
            start_warm_up(rag, lambda line: typer.echo(line, err=True))
        typer.echo(f"rag-app API on http://{limits.host}:{limits.port} (index {settings.resolved_index_dir})", err=True)
        app_ = create_app(rag, limits, mcp=not no_mcp)
        uvicorn.run(app_, host=limits.host, port=limits.port, log_level="info", **uvicorn_options(limits))


@app.command()
def mcp(index: IndexOption = None, config: ConfigOption = None) -> None:
    """The MCP server on stdio, for an agent that starts it (tools: search_statements, find_papers,
    search_formula, get_statement, ask). Configure the agent to run `rag-app mcp --index DIR`."""
    from rag_app.api.mcp_tools import build_mcp_server
    from rag_app.api.warm_up import start_warm_up

    settings = _searched_settings(config, index)
    _stop_on_signals()  # SIGTERM from the agent ends it through the `with`: the LLM server it started stops too
    with contextlib.suppress(KeyboardInterrupt), MathRAG(settings) as rag:
        rag.index.count()
        if settings.api.warm_up:
            start_warm_up(rag, lambda line: typer.echo(line, err=True))  # stderr: stdout carries the protocol
        build_mcp_server(rag).run("stdio")
