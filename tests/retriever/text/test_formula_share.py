from __future__ import annotations

import pytest

from retriever.text.formula_share import formula_share, formula_slice


@pytest.mark.parametrize(
    ("query", "share"),
    [
        ("Nakayama's lemma", 0.0),
        ("$x^2$", 1.0),
        # math: x ^ 2 (3 tokens); text: solve, for (2 tokens)
        ("solve $x^2$ for", 3 / 5),
        (r"\[ \frac{a}{b} \] is a fraction", 3 / 6),
        (r"Prove \(\sqrt{2}\) irrational", 2 / 4),
        ("", 0.0),
    ],
)
def test_share_of_tokens_inside_math(query: str, share: float) -> None:
    assert formula_share(query) == pytest.approx(share)


def test_slices() -> None:
    assert formula_slice(0.0) == "no formula"
    assert formula_slice(0.2) == "formula ≤30%"
    assert formula_slice(0.3) == "formula ≤30%"
    assert formula_slice(0.5) == "formula 30-70%"
    assert formula_slice(0.71) == "formula >70%"
    assert formula_slice(1.0) == "formula >70%"
