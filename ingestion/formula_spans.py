"""Every math span of a text that keeps its mathematics as LaTeX, with where it sits."""

from __future__ import annotations

import re
from typing import NamedTuple

_DISPLAY_ENVS = (
    "equation",
    "align",
    "gather",
    "multline",
    "eqnarray",
    "flalign",
    "alignat",
    "displaymath",
    "math",
)
_MATH_PATTERN = re.compile(
    r"(?<!\\)\$\$(?P<dd>.+?)(?<!\\)\$\$"
    r"|(?<!\\)\$(?P<d>.+?)(?<!\\)\$"
    r"|\\\((?P<p>.+?)\\\)"
    r"|\\\[(?P<b>.+?)\\\]"
    r"|\\begin\{(?P<env>(?:" + "|".join(_DISPLAY_ENVS) + r")\*?)\}(?P<e>.+?)\\end\{(?P=env)\}",
    re.DOTALL,
)
_DISPLAY_GROUPS = ("dd", "b", "e")


class FormulaSpan(NamedTuple):
    """One math span: its LaTeX without delimiters, and the character offsets of the whole span."""

    latex: str
    start: int
    end: int
    display: bool


def find_formula_spans(text: str) -> list[FormulaSpan]:
    """Every non-empty math span (``$..$``, ``$$..$$``, ``\\(..\\)``, ``\\[..\\]``, display environments)."""
    spans = []
    for match in _MATH_PATTERN.finditer(text):
        group = next(name for name in ("dd", "d", "p", "b", "e") if match.group(name) is not None)
        body = match.group(group).strip()
        if body:
            spans.append(FormulaSpan(body, match.start(), match.end(), group in _DISPLAY_GROUPS))
    return spans
