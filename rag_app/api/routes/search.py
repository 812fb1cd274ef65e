"""Statements, papers, formulas and one statement: ``search --json``, ``search --papers --json``,
``search --formula --json`` and ``show --json``, each as GET (query string) and POST (JSON body)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from rag_app.api.requests import FormulaRequest, SearchRequest
from rag_app.api.routes import Backend, past_deadline
from rag_app.api.serving_backend import DeadlineError

router = APIRouter()


async def _statements(backend: Backend, request: SearchRequest) -> list[dict[str, Any]]:
    try:
        return [hit.to_dict() for hit in await backend.search(request)]
    except DeadlineError as error:
        raise past_deadline(error) from None


async def _papers(backend: Backend, request: SearchRequest) -> list[dict[str, Any]]:
    try:
        return [paper.to_dict() for paper in await backend.papers(request)]
    except DeadlineError as error:
        raise past_deadline(error) from None


async def _formula(backend: Backend, request: FormulaRequest) -> list[dict[str, Any]]:
    try:
        return [hit.to_dict() for hit in await backend.formula(request)]
    except DeadlineError as error:
        raise past_deadline(error) from None


@router.get("/v1/search", summary="Statements that match a query (`search --json`)")
async def search_get(backend: Backend, request: Annotated[SearchRequest, Query()]) -> list[dict[str, Any]]:
    return await _statements(backend, request)


@router.post("/v1/search", summary="Statements that match a query (`search --json`)")
async def search_post(backend: Backend, request: SearchRequest) -> list[dict[str, Any]]:
    return await _statements(backend, request)


@router.get("/v1/papers", summary="Papers whose statements match a query (`search --papers --json`)")
async def papers_get(backend: Backend, request: Annotated[SearchRequest, Query()]) -> list[dict[str, Any]]:
    return await _papers(backend, request)


@router.post("/v1/papers", summary="Papers whose statements match a query (`search --papers --json`)")
async def papers_post(backend: Backend, request: SearchRequest) -> list[dict[str, Any]]:
    return await _papers(backend, request)


@router.get("/v1/formula", summary="Statements holding a formula or a similar one (`search --formula --json`)")
async def formula_get(backend: Backend, request: Annotated[FormulaRequest, Query()]) -> list[dict[str, Any]]:
    return await _formula(backend, request)


@router.post("/v1/formula", summary="Statements holding a formula or a similar one (`search --formula --json`)")
async def formula_post(backend: Backend, request: FormulaRequest) -> list[dict[str, Any]]:
    return await _formula(backend, request)


@router.get(
    "/v1/statements/{id_or_label:path}",
    summary="One statement with what it uses, what uses it and its definitions (`show --json`)",
)
async def statement(backend: Backend, id_or_label: str, depth: Annotated[int, Query(ge=0, le=5)] = 2) -> dict[str, Any]:
    try:
        return (await backend.statement(id_or_label, depth)).to_dict()
    except DeadlineError as error:
        raise past_deadline(error) from None
