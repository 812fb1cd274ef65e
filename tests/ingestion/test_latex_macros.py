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


def test_newcommand_with_an_unbraced_one_token_body() -> None:
    # Issue 26, defect 8.
    table = MacroTable.from_document(r"\newcommand\sheaf\mathscr \newcommand*\one1 \newcommand{\two}[1]\mathbf")
    assert table.expand(r"$\sheaf{O}_X$, $\one$") == r"$\mathscr{O}_X$, $1$"
    assert table.expand(r"$\two{x}$") == r"$\mathbf$"  # an unbraced body does not use its argument


def test_xparse_document_commands_with_mandatory_optional_and_star_arguments() -> None:
    # Issue 26, defect 9.
    table = MacroTable.from_document(
        r"""
\NewDocumentCommand{\Hom}{m O{R} m}{\operatorname{Hom}_{#2}(#1, #3)}
\DeclareDocumentCommand\abs{s m}{\lvert #2 \rvert}
\ProvideDocumentCommand{\abs}{m}{WRONG}
\RenewDocumentCommand{\pt}{o}{\mathrm{pt}}
\NewDocumentCommand{\weird}{r()}{never}
"""
    )
    expected = r"$\operatorname{Hom}_{R}(M, N)$ $\operatorname{Hom}_{S}(M, N)$"
    assert table.expand(r"$\Hom{M}{N}$ $\Hom{M}[S]{N}$") == expected
    assert table.expand(r"$\abs*{x} + \abs{y}$") == r"$\lvert x \rvert + \lvert y \rvert$"
    assert table.expand(r"$\pt[1] \pt$") == r"$\mathrm{pt} \mathrm{pt}$"
    assert "weird" not in table  # an argument type we do not read: left as written, not half-expanded
