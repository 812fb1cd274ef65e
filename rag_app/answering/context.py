"""Retrieved statements rendered as numbered, fenced sources, packed into the model's window.

Two layouts, chosen by the prompt (its ``layout`` key). "fenced": each source sits between
``<source n key=K>`` and ``</source key=K>`` under a heading (kind, name, paper). "lines": one fence
``<sources key=K>`` ... ``</sources key=K>`` around all of them, each source one line ``[n] Kind (name):
text`` with its whitespace collapsed, so no statement can begin a line that looks like another source;
the fences and headings of the first layout cost about 40 tokens a source, which is what a deeper
reading (8 openings in the tokens of 4) cannot spare. ``K`` is a random key made for this
one question. A statement cannot close its fence (it would have to guess the key, and fence-like tags
in it are defused) nor open a chat turn (template control tokens such as ``<|im_start|>`` are
defused: llama.cpp tokenizes them as control tokens even inside a message).
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from ingestion.records import StatementRecord
from retriever.types import SearchHit

# Rough characters per token for LaTeX-heavy English, when the server cannot count tokens.
CHARS_PER_TOKEN = 3.0
# A source trimmed below this many tokens says too little to cite; later sources are dropped instead.
MIN_SOURCE_TOKENS = 48
# The same in the "lines" layout, where a source's line spends only a few tokens on its number and kind.
MIN_LINE_TOKENS = 24

# Chat-template control tokens of the model families we serve (ChatML, Llama 2/3, Mistral, Gemma, ...).
_CONTROL_TOKEN = re.compile(r"<\|[^|<>\n]{1,40}\|>|</?s>|\[/?INST\]|<</?SYS>>|<(?:start|end)_of_turn>")
_FENCE_TAG = re.compile(r"<(/?)(source)", re.IGNORECASE)

TokenCounter = Callable[[str], "int | None"]
SourceLayout = Literal["fenced", "lines"]

# A question that asks for a proof or a reason: then the sources' proofs are worth their tokens.
_ASKS_FOR_PROOF = re.compile(
    r"\b(proofs?|prove[sd]?|proving|show that|why|derive|derivation|argument|reason)\b", re.IGNORECASE
)


def asks_for_proof(question: str) -> bool:
    return bool(_ASKS_FOR_PROOF.search(question))


def new_fence_key() -> str:
    """A key no document can know in advance."""
    return secrets.token_hex(6)


def estimate_tokens(text: str) -> int:
    return int(len(text) / CHARS_PER_TOKEN) + 1


def defuse(text: str, fence_key: str) -> str:
    """``text`` with fence tags, control tokens and the fence key made inert (still readable)."""
    text = text.replace(fence_key, "")
    text = _FENCE_TAG.sub(lambda m: f"‹{m[1]}{m[2]}", text)
    return _CONTROL_TOKEN.sub(
        lambda m: m[0].replace("<", "‹").replace(">", "›").replace("[", "(").replace("]", ")"), text
    )


@dataclass(frozen=True, slots=True)
class PackedSources:
    """The sources block of a prompt and what went into it."""

    text: str
    hits: list[SearchHit]  # the sources given, numbered 1..n in this order
    tokens: int  # of ``text``: counted by the server's tokenizer when it could, else estimated
    counted: bool
    trimmed: list[int] = field(default_factory=list)  # numbers of sources cut to fit
    dropped: int = 0  # retrieved statements left out for want of room
    source_tokens: list[int] = field(default_factory=list)  # of each source's block, in order
    proofs: bool = False  # the sources' proofs were given


def source_text(hit: SearchHit, proof: bool = False) -> str:
    """What the model reads of a source: the statement, and its proof when asked for and known."""
    record = hit.record
    if proof and record.proof.strip():
        return f"{record.text}\nProof. {record.proof.strip()}"
    return record.text


def source_block(number: int, hit: SearchHit, fence_key: str, text: str | None = None) -> str:
    record = hit.record
    where = record.source_title
    body = defuse(record.text if text is None else text, fence_key)
    heading = defuse(f"[{number}] {record.display_name} — from {where}", fence_key)
    return f"<source {number} key={fence_key}>\n{heading}\n{body}\n</source key={fence_key}>"


def source_line(number: int, hit: SearchHit, fence_key: str, text: str | None = None) -> str:
    """A source as one line of the "lines" layout: ``[n] Kind (name): text``, whitespace collapsed."""
    record = hit.record
    body = " ".join((record.text if text is None else text).split())
    return defuse(f"[{number}] {record.display_name}: {body}", fence_key)


def lines_fence(fence_key: str) -> tuple[str, str]:
    """The opening and closing lines around all sources of the "lines" layout."""
    return f"<sources key={fence_key}>", f"</sources key={fence_key}>"


def definitions_note(definitions: Sequence[StatementRecord], max_tokens: int) -> str:
    """The definitions a source relies on, each cut (at a word) to about ``max_tokens``."""
    lines = []
    for record in definitions:
        text = " ".join(record.text.split())
        keep = max_tokens * 4  # characters: the estimate's ratio
        if len(text) > keep:
            text = text[:keep].rsplit(" ", 1)[0] + " …"
        lines.append(f"- {record.display_name}: {text}")
    return "It relies on these definitions:\n" + "\n".join(lines) if lines else ""


def pack_sources(
    hits: Sequence[SearchHit],
    budget_tokens: int,
    fence_key: str,
    count_tokens: TokenCounter | None = None,
    max_source_tokens: int | None = None,
    proofs: bool = False,
    notes: Mapping[str, str] | None = None,
    layout: SourceLayout = "fenced",
) -> PackedSources:
    """As many sources as fit in ``budget_tokens``, in rank order; the one that overflows is trimmed.

    ``max_source_tokens``: no source takes more (a longer one is trimmed at a word), so that one long
    statement does not crowd out the others nor the model's time. ``proofs``: each source's proof
    follows its statement (when the question asks for one). Token counts come from ``count_tokens``
    (the served model's tokenizer), else from an estimate. ``notes``: text given after a source's
    statement (by statement id), outside the budget: the definitions it relies on.
    """
    counted = True

    def count(text: str) -> int:
        nonlocal counted
        tokens = count_tokens(text) if count_tokens is not None else None
        if tokens is None:
            counted = False
            return estimate_tokens(text)
        return tokens

    lines = layout == "lines"
    render = source_line if lines else source_block
    separator = "\n" if lines else "\n\n"
    opening, closing_fence = lines_fence(fence_key)
    min_tokens = MIN_LINE_TOKENS if lines else MIN_SOURCE_TOKENS
    blocks: list[str] = []
    given: list[SearchHit] = []
    trimmed: list[int] = []
    block_tokens: list[int] = []
    used = count(f"{opening}\n\n{closing_fence}") if lines and hits else 0
    note_tokens = 0
    for hit in hits:
        number = len(given) + 1
        room = budget_tokens - used - len(separator)  # the line break(s) between blocks
        remaining = room if max_source_tokens is None else min(room, max_source_tokens)
        text = source_text(hit, proofs)
        block = render(number, hit, fence_key, text)
        tokens = count(block)
        if tokens > remaining:
            if room < min_tokens:
                break
            block, tokens = _trim_to_fit(number, hit, text, fence_key, tokens, remaining, count, render)
            if block is None:
                break
            trimmed.append(number)
        used += tokens + len(separator)
        note = (notes or {}).get(hit.record.id, "")
        if note and lines:  # on the source's own line, outside the budget
            block = f"{block} {defuse(' '.join(note.split()), fence_key)}"
            noted = count(block)
            note_tokens += noted - tokens
            tokens = noted
        elif note:  # after the statement (cut or not), inside its fence, outside the budget
            closing = block.rindex("\n</source key=")
            block = block[:closing] + "\n" + defuse(note, fence_key) + block[closing:]
            noted = count(block)
            note_tokens += noted - tokens
            tokens = noted
        blocks.append(block)
        block_tokens.append(tokens)
        given.append(hit)
    if not blocks:
        return PackedSources("(no sources were found)", [], 0, counted, dropped=len(hits), proofs=proofs)
    dropped = len(hits) - len(given)
    text = separator.join(blocks)
    if lines:
        text = f"{opening}\n{text}\n{closing_fence}"
    return PackedSources(text, given, used + note_tokens, counted, trimmed, dropped, block_tokens, proofs)


def _trim_to_fit(
    number: int,
    hit: SearchHit,
    text: str,
    fence_key: str,
    tokens: int,
    remaining: int,
    count: Callable[[str], int],
    render: Callable[[int, SearchHit, str, str], str] = source_block,
) -> tuple[str | None, int]:
    """The block with ``text`` cut (at a word) until it fits; a few counts at most."""
    for _ in range(6):
        keep = int(len(text) * max(0.05, (remaining / tokens) * 0.95))
        text = text[:keep].rsplit(" ", 1)[0] if " " in text[:keep] else text[:keep]
        block = render(number, hit, fence_key, text + " …")
        tokens = count(block)
        if tokens <= remaining:
            return block, tokens
    return None, 0
