from __future__ import annotations

import pytest

from ingestion.latex_macros import MacroExpansionError, MacroTable

PREAMBLE = r"""
\newcommand{\R}{\mathbb{R}}
\newcommand*{\norm}[1]{\lVert #1 \rVert}
\newcommand{\pair}[2][x]{(#1, #2)}
\renewcommand{\R}{\mathbf{R}}
\providecommand{\R}{WRONG}
\providecommand{\Z}{\mathbb{Z}}
\def\Hom{\operatorname{Hom}}
\def\ip#1#2{\langle #1, #2\rangle}
\DeclareMathOperator{\Spec}{Spec}
\DeclareMathOperator*{\colim}{colim}
\let\phi\varphi
\let\into=\hookrightarrow
\def\delimited#1.{never}
"""


def test_every_defining_command_is_expanded() -> None:
    table = MacroTable.from_document(PREAMBLE)
    assert table.expand(r"$\R$ and $\Z$") == r"$\mathbf{R}$ and $\mathbb{Z}$"
    assert table.expand(r"$\norm{v}$") == r"$\lVert v \rVert$"
    assert table.expand(r"$\pair{y}$ $\pair[a]{b}$") == "$(x, y)$ $(a, b)$"
    assert table.expand(r"$\Hom(M,N)$ $\ip{u}{v}$") == r"$\operatorname{Hom}(M,N)$ $\langle u, v\rangle$"
    assert table.expand(r"$\Spec R$, $\colim_i$") == r"$\operatorname{Spec} R$, $\operatorname*{colim}_i$"
    assert table.expand(r"$\phi: A \into B$") == r"$\varphi: A \hookrightarrow B$"
    # Delimited parameters are not supported: such a macro stays as written.
    assert table.expand(r"\delimited x.") == r"\delimited x."


def test_nested_macros_and_word_boundaries() -> None:
    table = MacroTable.from_document(r"\newcommand{\A}{\mathcal{A}}\newcommand{\B}{\A_0}\newcommand{\Ab}{X}")
    assert table.expand(r"$\B \Ab \A$") == r"$\mathcal{A}_0 X \mathcal{A}$"
    # A control word expanding to a control word must not fuse with the next letter.
    table = MacroTable.from_document(r"\newcommand{\to2}{\to}\newcommand{\arr}{\to}")
    assert table.expand(r"$a\arr b$") == r"$a\to b$"


def test_programming_macros_are_left_alone() -> None:
    table = MacroTable.from_document(r"\def\prd#1{\@ifnextchar\bgroup{\prd{#1}}{\prod_{#1}}}")
    assert table.expand(r"$\prd{x:A} B$") == r"$\prd{x:A} B$"


@pytest.mark.parametrize(
    "definition",
    [r"\def\again{\again x}", r"\newcommand{\a}{\b}\newcommand{\b}{\a}", r"\newcommand{\grow}{\grow\grow}"],
)
def test_runaway_expansion_is_an_error(definition: str) -> None:
    table = MacroTable.from_document(definition, max_expansions=500, max_length=10_000)
    with pytest.raises(MacroExpansionError, match="expands"):
        table.expand(r"$\again \a \grow$")
