"""How much of a query is formula: the share of its tokens that sit inside math (as in MaRF).

The evaluation slices queries by it; the second embedding model's weight shrinks with it.

Text tokens are words and numbers; math tokens are LaTeX commands, identifiers, numbers and symbols
(braces do not count). Queries are then sliced into bands so math-heavy queries get their own line.
"""

from __future__ import annotations

import re

from ingestion.formula_spans import find_formula_spans
from retriever.text.query_formulas import query_formulas

_MATH = re.compile(
    r"\$\$(?P<a>.+?)\$\$|\$(?P<b>.+?)\$|\\\[(?P<c>.+?)\\\]|\\\((?P<d>.+?)\\\)"
    r"|\\begin\{(?P<env>equation|align|gather|multline|eqnarray)\*?\}(?P<e>.+?)\\end\{(?P=env)\*?\}",
    re.DOTALL,
)
_MATH_TOKEN = re.compile(r"\\[A-Za-z]+|\\.|[A-Za-z]+|\d+(?:\.\d+)?|[^\s{}]")
_TEXT_TOKEN = re.compile(r"\w+(?:['’]\w+)*")

# Bands of formula share: (name, lower bound exclusive, upper bound inclusive).
SLICES: tuple[tuple[str, float, float], ...] = (
    ("no formula", -1.0, 0.0),
    ("formula ≤30%", 0.0, 0.3),
    ("formula 30-70%", 0.3, 0.7),
    ("formula >70%", 0.7, 1.0),
)


def formula_share(text: str) -> float:
    """Share (0 to 1) of the query's tokens that are inside math."""
    math_tokens = 0
    text_tokens = 0
    position = 0
    for match in _MATH.finditer(text):
        text_tokens += len(_TEXT_TOKEN.findall(text[position : match.start()]))
        body = next(group for group in (match.group(k) for k in "abcde") if group is not None)
        math_tokens += len(_MATH_TOKEN.findall(body))
        position = match.end()
    text_tokens += len(_TEXT_TOKEN.findall(text[position:]))
    total = math_tokens + text_tokens
    return math_tokens / total if total else 0.0


def formula_tokens(latex: str) -> list[str]:
    """The tokens of a formula as this module counts them (commands whole, braces not counted)."""
    return _MATH_TOKEN.findall(latex)


def formula_slice(share: float) -> str:
    """The band a formula share falls in."""
    for name, low, high in SLICES:
        if low < share <= high:
            return name
    return SLICES[-1][0]


def query_formula_share(query: str) -> float:
    """``formula_share``, where a query typed as bare LaTeX (no delimiters, see ``query_formulas``) is all formula."""
    if not find_formula_spans(query) and query_formulas(query):
        return 1.0
    return formula_share(query)
