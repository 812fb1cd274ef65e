"""The formulas a query asks about."""

from __future__ import annotations

import re

from ingestion.formula_spans import find_formula_spans

_LATEX_HINT = re.compile(r"\\[A-Za-z]+|[\^_=]")


def query_formulas(query: str) -> list[str]:
    """The query's math spans; a query without delimiters that reads as LaTeX is one formula.

    ``\\int \\frac{dx}{(x^2+1)^n}`` typed bare is a formula; ``Nakayama's lemma`` has none.
    """
    spans = find_formula_spans(query)
    if spans:
        return [span.latex for span in spans]
    stripped = query.strip()
    return [stripped] if stripped and _LATEX_HINT.search(stripped) else []


def strip_delimiters(formula: str) -> str:
    """A formula typed with its delimiters (``$x^2$``, ``\\[x^2\\]``) without them."""
    spans = find_formula_spans(formula)
    if len(spans) == 1 and spans[0].start == 0 and spans[0].end == len(formula.strip()):
        return spans[0].latex
    return formula.strip()
