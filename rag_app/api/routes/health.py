"""``/healthz`` (no token needed: a load balancer's probe) and ``/v1/status`` (``status --json``)."""

from __future__ import annotations

from fastapi import APIRouter

from rag_app.api.routes import Backend, past_deadline
from rag_app.api.serving_backend import DeadlineError

router = APIRouter()


@router.get("/healthz", summary="Whether the server answers (no token needed)")
async def healthz(backend: Backend) -> dict[str, object]:
    asks = backend.asks
    return {"ok": True, "asks_running": asks.running, "asks_waiting": asks.waiting,
            "searches_running": backend.searches_running, "llm": await backend.llm_health()}  # fmt: skip


@router.get("/v1/status", summary="The index's stores and whether they are in step (`status --json`)")
async def status(backend: Backend, full: bool = False) -> dict[str, object]:
    """Each store's own count against Chroma's (milliseconds, however large the index); ``full=true``
    compares them id by id and checks the vector files, as `rag-app status` does (seconds at 1M)."""
    try:
        return await backend.status(full)
    except DeadlineError as error:
        raise past_deadline(error) from None
