"""The next results as a list a reader scans in seconds: one line a statement, grouped by where it comes from.

Under an answer (the chat, ``rag-app ask``) and on the chat's Search page, results after the first few are
shown one line each: the statement's kind, number and name, its paper (or chapter) and section, and the
first words of the statement. Several results from one paper and section stand together under it, at the
place of the best of them, so that a reader sees "three lemmas of the same section" at a glance.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from retriever.types import SearchHit

FIRST_WORDS_CHARS = 110  # about a line of the chat beside the statement's name

# Where mathematics opens or closes: a cut between these would leave half a formula.
_MATH_MARK = re.compile(r"\\\\|\\\$|\$\$|\$|\\\(|\\\)|\\\[|\\\]|\\begin\{[a-zA-Z*]+\}|\\end\{[a-zA-Z*]+\}")


def first_words(text: str, limit: int = FIRST_WORDS_CHARS) -> str:
    """The statement's first words, about ``limit`` characters, cut between words and never inside mathematics
    (a formula that runs past ``limit`` is kept whole); " …" marks a cut."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cuts = _cuts_outside_math(text)
    before = [cut for cut in cuts if cut <= limit]
    after = [cut for cut in cuts if cut > limit]
    if before and before[-1] >= limit // 3:
        cut = before[-1]
    elif after:
        cut = after[0]
    else:
        return text
    return text[:cut].rstrip(" ,;:") + " …"


def _cuts_outside_math(text: str) -> list[int]:
    """Positions of the spaces that are outside every formula."""
    math_spans: list[tuple[int, int]] = []
    opened_at: int | None = None
    closer = ""
    for match in _MATH_MARK.finditer(text):
        mark = match.group(0)
        if mark in ("\\\\", "\\$"):
            continue  # a line break or a dollar sign typed as text
        if opened_at is None:
            if mark in ("$", "$$", "\\(", "\\[") or mark.startswith("\\begin"):
                opened_at = match.start()
                closer = {"$": "$", "$$": "$$", "\\(": "\\)", "\\[": "\\]"}.get(mark, mark.replace("begin", "end"))
        elif mark == closer:
            math_spans.append((opened_at, match.end()))
            opened_at = None
    if opened_at is not None:
        math_spans.append((opened_at, len(text)))  # an unclosed formula runs to the end
    cuts, span = [], 0
    for position, char in enumerate(text):
        if char != " ":
            continue
        while span < len(math_spans) and math_spans[span][1] <= position:
            span += 1
        if span < len(math_spans) and math_spans[span][0] <= position:
            continue
        cuts.append(position)
    return cuts


@dataclass(frozen=True, slots=True)
class PlaceGroup:
    """Results from one place (a paper or chapter, and a section in it), best first."""

    paper_id: str
    paper_title: str
    section: str
    hits: tuple[SearchHit, ...]

    @property
    def place(self) -> str:
        """The place as one line: "Title · Section" (no section: the title alone)."""
        title = self.paper_title or self.paper_id
        return f"{title} · {self.section}" if self.section else title


def grouped_by_place(hits: Sequence[SearchHit]) -> list[PlaceGroup]:
    """``hits`` grouped by paper and section, each group where its best result ranks, its results in rank order."""
    groups: dict[tuple[str, str], list[SearchHit]] = {}
    for hit in hits:
        groups.setdefault((hit.record.paper_id, hit.record.section or ""), []).append(hit)
    return [
        PlaceGroup(paper_id, members[0].record.source_title, section, tuple(members))
        for (paper_id, section), members in groups.items()
    ]
