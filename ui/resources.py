"""What every page of the chat shares, opened once per process: the index (``MathRAG``) and the serving
backend in front of it (every page's searches, statement views, answers and ingests go through it)."""

from __future__ import annotations

import streamlit as st

from rag_app import MathRAG, Settings
from rag_app.api.blocking_backend import BlockingBackend
from rag_app.api.warm_up import start_warm_up
from ui.failures import show_failure

__all__ = ["open_backend", "open_rag", "open_rag_or_say_why"]


@st.cache_resource
def open_rag() -> MathRAG:
    return MathRAG(Settings.load())


def open_rag_or_say_why() -> tuple[MathRAG, int] | None:
    """The index and its statement count, or None after saying why it cannot be opened (never a traceback)."""
    try:
        rag = open_rag()
        return rag, rag.index.count()
    except Exception as error:  # shown to the user as a message, never as a traceback
        show_failure("The index could not be opened", error)
        return None


@st.cache_resource
def open_backend() -> BlockingBackend:
    """The serving backend every session of the chat shares: its searches in one limit, its answers in one
    queue at the LLM, each with the API's deadlines (``[api]`` settings). Warmed up as ``serve`` is
    (``api.warm_up``): the models load and the statements are read in beside the first page."""
    rag = open_rag()
    if rag.settings.api.warm_up:
        start_warm_up(rag)
    return BlockingBackend(rag)
