"""The HTTP API's routes, one router per family; each takes the app's :class:`ServingBackend` from its state
(created and closed in the app's lifespan, :func:`rag_app.api.http_app.create_app`) and only turns the
backend's records into the CLI's JSON shapes."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from rag_app.api.errors import ApiError
from rag_app.api.serving_backend import DeadlineError, ServingBackend


def backend_of(request: Request) -> ServingBackend:
    backend: ServingBackend | None = getattr(request.app.state, "backend", None)
    if backend is None or backend.closed:
        raise ApiError(503, "the server is starting or stopping; try again in a moment")
    return backend


Backend = Annotated[ServingBackend, Depends(backend_of)]


def past_deadline(error: DeadlineError) -> ApiError:
    return ApiError(504, str(error))
