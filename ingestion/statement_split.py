"""Splitting long statements into parts at sentence boundaries that never cut through math.

The reference thesis splits over-long statements at sentence ends outside formulas rather than
truncating them; so do we. A single sentence longer than the budget stays whole: text is never
dropped and a formula is never cut.
"""

from __future__ import annotations

import re

from ingestion.latex_readable import split_math

# A sentence ends at . ! ? (or a paragraph break) followed by space and a capital, a formula or a digit.
_SENTENCE_END = re.compile("(?<=[.!?])\\s+(?=[A-Z(\u27e6\\d])|\\n\\s*\\n")
_PLACEHOLDER = re.compile("\u27e6(\\d+)\u27e7")


def split_statement(text: str, max_chars: int) -> list[str]:
    """``text`` in parts of at most ``max_chars`` where sentence ends allow; one part if it fits."""
    if len(text) <= max_chars:
        return [text]
    protected, spans = split_math(text)

    def restore(piece: str) -> str:
        return _PLACEHOLDER.sub(lambda m: spans[int(m.group(1))].delimited(), piece).strip()

    sentences = [restore(s) for s in _SENTENCE_END.split(protected) if s and s.strip()]
    parts: list[str] = []
    current = ""
    for sentence in sentences:
        candidate = f"{current} {sentence}".strip() if current else sentence
        if current and len(candidate) > max_chars:
            parts.append(current)
            current = sentence
        else:
            current = candidate
    if current:
        parts.append(current)
    return parts
