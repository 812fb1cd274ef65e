"""A failure the chat shows in words, and logs whole for whoever runs it: a line on the page alone, with
nothing in the log, leaves a failure in the chat that cannot be diagnosed from the server."""

from __future__ import annotations

import logging

import streamlit as st

logger = logging.getLogger("ui")


def show_failure(message: str, error: BaseException) -> None:
    """``message: error`` in the page, never a traceback; the traceback in the log."""
    logger.error("%s: %s", message, error, exc_info=error)
    st.error(f"{message}: {error}")
