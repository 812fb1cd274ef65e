"""Retrieved statements rendered as numbered, fenced sources for the prompt."""

from __future__ import annotations

from collections.abc import Sequence

from retriever.types import SearchHit

# Rough characters per token for LaTeX-heavy English; used to keep the prompt in the window.
CHARS_PER_TOKEN = 3.0


def format_sources(hits: Sequence[SearchHit], budget_tokens: int) -> str:
    """Number each statement ``[n]`` inside ``<source>`` tags, trimmed to fit the budget.

    A document cannot close its own fence: ``<source``/``</source`` inside text are defused.
    """
    if not hits:
        return "(no sources were found)"
    per_source_chars = max(200, int(budget_tokens * CHARS_PER_TOKEN / len(hits)))
    blocks = []
    for number, hit in enumerate(hits, start=1):
        record = hit.record
        heading = record.display_name
        where = record.title or record.paper_id
        text = record.text if len(record.text) <= per_source_chars else record.text[:per_source_chars] + " …"
        text = text.replace("<source", "‹source").replace("</source", "‹/source")
        blocks.append(f'<source id="{number}">\n[{number}] {heading} — from {where}\n{text}\n</source>')
    return "\n\n".join(blocks)
