"""Settings of the Streamlit chat: follow-up questions and uploads."""

from __future__ import annotations

from pydantic import BaseModel, Field


class ConversationSettings(BaseModel):
    """Follow-up questions in the chat: the retrieval query is rewritten from the recent turns."""

    rewrite_with_llm: bool = Field(
        True, description="ask the LLM for a standalone query (else: join with the last search)"
    )
    max_turns: int = Field(3, ge=0, description="recent turns the rewrite reads")
    rewrite_max_tokens: int = Field(64, ge=8)


class UISettings(BaseModel):
    """The Streamlit chat."""

    max_upload_mb: int = Field(50, ge=1, description="largest LaTeX archive or .tex file accepted from the browser")
    next_results_shown: int = Field(
        20, ge=0, description="the next results listed under an answer at first (`retrieval.next_results` kept)"
    )
