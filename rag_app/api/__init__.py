"""rag-app for other programs: the HTTP API (`rag-app serve`) and the MCP server (`rag-app mcp`), both
over one open :class:`rag_app.MathRAG`.

- :mod:`rag_app.api.http_app`: the FastAPI routes;
- :mod:`rag_app.api.mcp_tools`: the MCP tools (stdio, and streamable HTTP under ``/mcp``);
- :mod:`rag_app.api.requests`: what a client may send, checked before any work;
- :mod:`rag_app.api.errors`: the failures a client is told about, and their statuses;
- :mod:`rag_app.api.guards`: the bind rule, the bearer token, the body limit and the queue for answers.
"""
