"""Formula normalization: equivalent spellings meet, omitted braces are completed, numbers are
position-aware, and malformed LaTeX falls back to raw tokens without raising."""

from __future__ import annotations

import random
import string

import pytest

from retriever.text.formula_normalizer import encode_number, normalize_formula, raw_tokens


@pytest.mark.parametrize(
    ("first", "second"),
    [
        (r"\dfrac12", r"\frac{1}{2}"),
        (r"\tfrac{a}{b}", r"\frac a b"),
        (r"\left( x^2 \right)", r"(x^{2})"),
        (r"\operatorname{Spec}(R)", r"\mathrm{Spec}(R)"),
        (r"\mathop{\rm Spec}(R)", r"\operatorname{Spec} (R)"),
        (r"x \le y", r"x\leq y"),
        (r"f\colon X\to Y", r"f : X \rightarrow Y"),
        (r"\varepsilon > 0\,,", r"\epsilon>0,"),
        (r"a \cdot b \label{eq:1}", r"a\cdot b"),
        (r"\mathrm{d}x", r"dx"),
        (r"\lvert z \rvert", r"|z|"),
    ],
)
def test_equivalent_spellings_normalize_to_the_same_tokens(first: str, second: str) -> None:
    assert normalize_formula(first).tokens == normalize_formula(second).tokens
    assert not normalize_formula(first).malformed


def test_commands_stay_whole_and_arguments_are_braced() -> None:
    normalized = normalize_formula(r"\sqrt[3]{x} + x^ab")
    assert normalized.tokens == (r"\sqrt", "[", "3", "]", "{", "x", "}", "+", "x", "^", "{", "a", "}", "b")


def test_numbers_are_position_aware() -> None:
    assert encode_number("30") == ["3", "10e1"]
    assert encode_number("305") == ["3", "10e2", "5"]
    assert encode_number("0.5") == ["5", "10e-1"]
    assert encode_number("0") == ["0"]
    assert normalize_formula("x^{30}").tokens == ("x", "^", "{", "3", "10e1", "}")


def test_paths_tie_leaves_to_their_ancestors() -> None:
    paths = normalize_formula(r"\frac{a}{b^2}").paths
    assert r"a<\frac.1" in paths and r"b<\frac.2" in paths and r"2<^.1<\frac.2" in paths
    terms = normalize_formula(r"\frac{a}{b}").terms()
    assert r"\frac" in terms and "a b" in terms and "{" not in terms


@pytest.mark.parametrize("latex", [r"\frac{a}{", "a}b", r"\frac", r"x^", r"\sqrt[3", "{{{"])
def test_malformed_latex_falls_back_to_raw_tokens(latex: str) -> None:
    normalized = normalize_formula(latex)
    assert normalized.malformed
    assert list(normalized.tokens) == raw_tokens(latex)


def test_random_input_never_raises() -> None:
    rng = random.Random(7)
    alphabet = string.ascii_letters + string.digits + r"\{}[]^_()+-=&$ " * 3
    for _ in range(2000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40)))
        normalized = normalize_formula(text)
        assert isinstance(normalized.tokens, tuple)
