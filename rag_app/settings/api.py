"""Settings of `rag-app serve` (the HTTP API) and `rag-app mcp` (the MCP server): where it listens, the
token, and the limits that keep one client from taking the server from the others."""

from __future__ import annotations

from pydantic import BaseModel, Field, SecretStr


class ApiSettings(BaseModel):
    """The HTTP API and the MCP server for other programs (``RAG_APP_API__TOKEN`` sets the token)."""

    host: str = Field("127.0.0.1", description="address to bind; any other than loopback requires a token")
    port: int = Field(8765, ge=1, le=65535)
    token: SecretStr | None = Field(
        None, description="the bearer token every request must carry (Authorization: Bearer TOKEN); unset: none"
    )
    max_query_chars: int = Field(2000, ge=1, description="longest query or question accepted")
    max_k: int = Field(100, ge=1, description="most results one request may ask for")
    max_body_bytes: int = Field(65_536, ge=1024, description="largest request body accepted")
    max_concurrent_searches: int = Field(
        2, ge=1, description="searches run at once (more wait their turn): about one per CPU core"
    )
    warm_up: bool = Field(
        True, description="serve, mcp, the chat: load the models, read all statements into memory at start if they fit"
    )
    max_concurrent_asks: int = Field(1, ge=1, description="answers generated at once (each holds the LLM)")
    max_queued_asks: int = Field(
        8, ge=0, description="answers waiting for the LLM; past this a request gets 429 with Retry-After"
    )
    ask_timeout_s: float = Field(300.0, gt=0, description="an answer's time limit, its wait in the queue included")
    search_timeout_s: float = Field(30.0, gt=0, description="a search's time limit")
    retry_after_s: int = Field(10, ge=1, description="what a 429 tells the client to wait")
    # Limits at the connection: a client past one gets a status and a closed socket, not a slot.
    header_timeout_s: float = Field(
        10.0, gt=0, description="time a client has to send its request line and headers (408 past it)"
    )
    body_timeout_s: float = Field(
        30.0, gt=0, description="time a client may leave its request body unfinished between two reads (408 past it)"
    )
    max_header_bytes: int = Field(
        32_768, ge=4096, description="largest request line and headers accepted (h11's limit: 400 past it)"
    )
    keep_alive_s: float = Field(5.0, gt=0, description="how long an idle keep-alive connection stays open")
    first_byte_timeout_s: float = Field(
        2.0, gt=0, description="a new connection that sends no byte within this is closed (it holds no place)"
    )
    max_connections: int = Field(
        64, ge=2, description="connections open at once; one more takes an idle one's place, else 503 and closed"
    )
