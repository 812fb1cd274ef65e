"""Which of a text's formulas are fused: distinct, not trivial, the longest first."""

from __future__ import annotations

from collections.abc import Iterable

from retriever.text.formula_normalizer import normalize_formula

MIN_FUSED_TOKENS = 3  # a lone symbol (``$R$``, ``$x$``) says little about the mathematics


def select_formulas(formulas: Iterable[str], limit: int) -> list[str]:
    """Up to ``limit`` distinct formulas with at least three normalized tokens, longest first."""
    lengths: dict[tuple[str, ...], tuple[int, str]] = {}
    for formula in formulas:
        tokens = normalize_formula(formula).tokens
        if len(tokens) >= MIN_FUSED_TOKENS and tokens not in lengths:
            lengths[tokens] = (len(tokens), formula)
    ranked = sorted(lengths.values(), key=lambda item: -item[0])
    return [formula for _, formula in ranked[:limit]]
