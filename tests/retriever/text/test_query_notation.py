"""ASCII-typed mathematics in queries is read as the LaTeX a paper would write."""

from __future__ import annotations

import pytest

from retriever.text.query_formulas import query_formulas
from retriever.text.query_notation import read_typed_notation
from retriever.text.unicode_math_text import UnicodeMathText


@pytest.mark.parametrize(
    ("typed", "read"),
    [
        ("B mu_p not smooth in char p", "B $\\mu_p$ not smooth in char p"),
        ("Chow ring of Mbar_{0,5}", "Chow ring of $\\overline{M}_{0,5}$"),
        ("alpha_p-torsors over a curve", "$\\alpha_p$-torsors over a curve"),
        (
            "canonical class of blowup of P^3 along a curve",
            "canonical class of blowup of $\\mathbb{P}^3$ along a curve",
        ),
        ("H^1(X,O_X) vanishing", "$H^1(X,\\mathcal{O}_X)$ vanishing"),
        ("pi_1(S^1) = Z", "$\\pi_1(S^1) = \\mathbb{Z}$"),
        ("a^(p-1) = 1 mod p", "$a^{p-1} = 1$ mod p"),
        (
            "Gal(Q(zeta_n)/Q) = (Z/nZ)^*",
            "$\\operatorname{Gal}(\\mathbb{Q}(\\zeta_n)/\\mathbb{Q}) = (\\mathbb{Z}/n \\mathbb{Z})^*$",
        ),
        ("units of Z[i]", "units of $\\mathbb{Z}[i]$"),
        ("int e^{-x^2} dx = sqrt(pi)", "$\\int e^{-x^2} dx = \\sqrt{\\pi}$"),
        ("Z/mn = Z/m x Z/n", "$\\mathbb{Z}/mn = \\mathbb{Z}/m \\times \\mathbb{Z}/n$"),
        ("F_{p^n} exists and unique", "$\\mathbb{F}_{p^n}$ exists and unique"),
        ("E_8 lattice.", "$E_8$ lattice."),
    ],
)
def test_typed_notation_is_written_as_latex(typed: str, read: str) -> None:
    assert read_typed_notation(typed) == read


@pytest.mark.parametrize(
    "query",
    [
        "flat base change for pushforward, qcqs",  # words only
        "lambda calculus normal forms",  # a Greek letter's name used as a word
        "What is that chat about",  # "What", "that", "chat" are words, not W-hat
        "R[x] noetherian",  # R is a ring here: no blackboard R without a power
        "Is $\\mu_p$ smooth?",  # LaTeX typed by the user is left as typed
        "\\mathbb{P}^n and P^n",
        "",
    ],
)
def test_words_and_typed_latex_are_left_alone(query: str) -> None:
    read = read_typed_notation(query)
    if query.startswith("R[x]"):
        assert read == "$R[x]$ noetherian"
    else:
        assert read == query


def test_accents_typed_as_suffixes() -> None:
    assert read_typed_notation("Xhat and Gtilde") == "$\\widehat{X}$ and $\\widetilde{G}$"
    assert read_typed_notation("What is Mbar?") == "What is $\\overline{M}$?"


def test_matrices_and_rings_keep_their_letters() -> None:
    assert read_typed_notation("A^T A positive semidefinite") == "$A^T$ A positive semidefinite"
    assert "\\mathbb{R}" not in read_typed_notation("R[x] noetherian")
    assert read_typed_notation("R^n is connected") == "$\\mathbb{R}^n$ is connected"


def test_every_channel_sees_the_formula() -> None:
    read = read_typed_notation("B mu_p not smooth in char p")
    assert query_formulas(read) == ["\\mu_p"]  # the formula channel's input
    assert "μ" in UnicodeMathText().render(read)  # what the dense channel embeds
