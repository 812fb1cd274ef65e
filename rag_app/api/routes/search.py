"""Statements, papers, formulas and one statement: ``search --json``, ``search --papers --json``,
``search --formula --json`` and ``show --json``, each as GET (query string) and POST (JSON body)."""

from __future__ import annotations

from collections.abc import Awaitable, Sequence
from typing import Annotated, Any

from fastapi import APIRouter, Query

from rag_app.api.requests import FormulaRequest, SearchRequest
from rag_app.api.routes import Backend, past_deadline
from rag_app.api.serving_backend import DeadlineError
from retriever import PaperHit, SearchHit

router = APIRouter()


async def _as_json(found: Awaitable[Sequence[SearchHit] | Sequence[PaperHit]]) -> list[dict[str, Any]]:
    """The backend's hits or papers in the CLI's JSON shape; 504 past the request's deadline."""
    try:
        return [item.to_dict() for item in await found]
    except DeadlineError as error:
        raise past_deadline(error) from None


@router.get("/v1/search", summary="Statements that match a query (`search --json`)")
async def search_get(backend: Backend, request: Annotated[SearchRequest, Query()]) -> list[dict[str, Any]]:
    return await _as_json(backend.search(request))


@router.post("/v1/search", summary="Statements that match a query (`search --json`)")
async def search_post(backend: Backend, request: SearchRequest) -> list[dict[str, Any]]:
    return await _as_json(backend.search(request))


@router.get("/v1/papers", summary="Papers whose statements match a query (`search --papers --json`)")
async def papers_get(backend: Backend, request: Annotated[SearchRequest, Query()]) -> list[dict[str, Any]]:
    return await _as_json(backend.papers(request))


@router.post("/v1/papers", summary="Papers whose statements match a query (`search --papers --json`)")
async def papers_post(backend: Backend, request: SearchRequest) -> list[dict[str, Any]]:
    return await _as_json(backend.papers(request))


@router.get("/v1/formula", summary="Statements holding a formula or a similar one (`search --formula --json`)")
async def formula_get(backend: Backend, request: Annotated[FormulaRequest, Query()]) -> list[dict[str, Any]]:
    return await _as_json(backend.formula(request))


@router.post("/v1/formula", summary="Statements holding a formula or a similar one (`search --formula --json`)")
async def formula_post(backend: Backend, request: FormulaRequest) -> list[dict[str, Any]]:
    return await _as_json(backend.formula(request))


@router.get(
    "/v1/statements/{id_or_label:path}",
    summary="One statement with what it uses, what uses it and its definitions (`show --json`)",
)
async def statement(backend: Backend, id_or_label: str, depth: Annotated[int, Query(ge=0, le=5)] = 2) -> dict[str, Any]:
    try:
        return (await backend.statement(id_or_label, depth)).to_dict()
    except DeadlineError as error:
        raise past_deadline(error) from None
