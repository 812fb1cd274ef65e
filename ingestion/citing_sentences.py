"""The sentence around a reference: what a citing statement says of the statement it references.

A proof that writes "the module is flat, hence free by Nakayama's lemma (Lemma~\\ref{lemma-NAK})" says
what the lemma is for, in the citer's words and often by a name the lemma itself never writes. Each
reference a statement or its proof makes is kept with that sentence (:class:`ingestion.records.LabelReference`
``sentence``); the statement graph gathers a statement's citing sentences from every statement that
references it (``retriever.storage.statement_graph``), for the search to match and the reader to see.

Sentences are cut from the LaTeX (macros expanded) at sentence ends outside braces and math
(:class:`SentenceEnds`), at most :data:`MAX_SOURCE_CHARS` of source on either side of the reference and
never inside a formula, then made readable by the paper's own converter (math kept as LaTeX). A bare
sentence ("Apply Lemma 10.3.2.") has its neighbour before it prepended, which says what the lemma was
applied to. A reference to a label its paper does not define (another chapter's lemma) reads "[ref]", so
the target's own label words never pose as the citer's.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Container

MAX_SOURCE_CHARS = 320  # of LaTeX on either side of the reference
MAX_SENTENCE_CHARS = 400  # of readable text kept
MIN_WORDS = 7  # a sentence with fewer words gets the one before it
UNRESOLVED = "[ref]"

_DISPLAY = r"(?:equation|align|alignat|gather|multline|eqnarray|displaymath|math|flalign)\*?"
# One pass reads, in order: escapes, math delimiters, braces, and the marks that end a sentence
# (". " before a capital or a command, a blank line, an \item, a list's or proof's edge).
_TOKEN = re.compile(
    r"(?P<open_display>\\begin\{" + _DISPLAY + r"\}|\\\[|\\\()"
    r"|(?P<close_display>\\end\{" + _DISPLAY + r"\}|\\\]|\\\))"
    r"|(?P<escape>\\.)"
    r"|(?P<dollars>\$\$?)"
    r"|(?P<brace>[{}])"
    r"|(?P<end>[.!?]\s+(?=[A-Z\\(])|\n[ \t]*\n|(?=\\item\b)|(?=\\(?:begin|end)\{(?:enumerate|itemize|description)\}))"
)
_WORD = re.compile(r"(?<!\\)\b[A-Za-z]{2,}\b")
_SPACE = re.compile(r"\s+")


class SentenceEnds:
    """Where sentences end in one piece of LaTeX, and where it is inside math (read once, for every
    reference in it)."""

    def __init__(self, latex: str) -> None:
        self.latex = latex
        self.ends: list[int] = [0]
        self._math: list[tuple[int, int]] = []
        depth, math_since, dollars = 0, -1, ""
        for token in _TOKEN.finditer(latex):
            kind = token.lastgroup
            if kind == "open_display" and math_since < 0:
                math_since = token.start()
            elif kind == "close_display" and math_since >= 0 and not dollars:
                self._math.append((math_since, token.end()))
                math_since = -1
            elif kind == "dollars":
                if math_since < 0:
                    math_since, dollars = token.start(), token.group()
                elif dollars == token.group():
                    self._math.append((math_since, token.end()))
                    math_since, dollars = -1, ""
            elif kind == "brace" and math_since < 0:
                depth = depth + 1 if token.group() == "{" else max(0, depth - 1)
            elif kind == "end" and math_since < 0 and depth == 0:
                self.ends.append(token.end())
        if math_since >= 0:
            self._math.append((math_since, len(latex)))
        self.ends.append(len(latex))
        self._math_starts = [start for start, _ in self._math]

    def in_math(self, position: int) -> bool:
        at = bisect.bisect_right(self._math_starts, position) - 1
        return at >= 0 and self._math[at][0] < position < self._math[at][1]

    def sentence(self, start: int, end: int) -> str:
        """The LaTeX of the sentence holding ``latex[start:end]`` (a reference command), with the one
        before it when it is short, at most :data:`MAX_SOURCE_CHARS` either side and cut outside math."""
        before = bisect.bisect_right(self.ends, start) - 1
        after = bisect.bisect_left(self.ends, end)
        first, last = self.ends[before], self.ends[min(after, len(self.ends) - 1)]
        if before > 0 and len(_WORD.findall(self.latex, first, last)) < MIN_WORDS:
            first = self.ends[before - 1]  # "Apply Lemma 3." says more with what it is applied to
        cut_first, cut_last = first < start - MAX_SOURCE_CHARS, last > end + MAX_SOURCE_CHARS
        if cut_first:
            first = self._space_after(start - MAX_SOURCE_CHARS, start)
        if cut_last:
            last = self._space_before(end + MAX_SOURCE_CHARS, end)
        text = self.latex[first:last].strip()
        return ("… " if cut_first else "") + text + (" …" if cut_last else "")

    def _space_after(self, position: int, limit: int) -> int:
        for space in _SPACE.finditer(self.latex, position, limit):
            if not self.in_math(space.start()):
                return space.end()
        return limit

    def _space_before(self, position: int, limit: int) -> int:
        found = limit
        for space in _SPACE.finditer(self.latex, limit, position):
            if not self.in_math(space.start()):
                found = space.start()
        return found


def readable_sentence(latex: str, labels: Container[str], referenced: list[str], convert: Callable[[str], str]) -> str:
    """``latex`` (a sentence) as readable text, at most :data:`MAX_SENTENCE_CHARS` characters; each of
    ``referenced`` that ``labels`` (the paper's) lacks reads :data:`UNRESOLVED`."""
    text = convert(latex)
    for label in referenced:
        if label not in labels:
            text = text.replace(f"[{label}]", UNRESOLVED)
    text = " ".join(text.split())
    if len(text) > MAX_SENTENCE_CHARS:
        text = text[:MAX_SENTENCE_CHARS].rsplit(" ", 1)[0] + " …"
    return text
