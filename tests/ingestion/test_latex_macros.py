from __future__ import annotations

import time

import pytest

from ingestion.latex_macros import MacroTable, definition_line

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


def test_an_argument_or_expansion_never_fuses_with_a_control_word_beside_it() -> None:
    # TeX reads a body as tokens: \lVert#1 with "v" is \lVert v; text substitution must keep them apart.
    table = MacroTable.from_document(
        r"\newcommand{\norm}[1]{\lVert#1\rVert}\newcommand{\sub}[1]{#1x}\newcommand{\cc}[2]{#1\circ#2}"
    )
    assert table.expand(r"$\norm{v} \norm{\alpha}$") == r"$\lVert v\rVert \lVert\alpha\rVert$"
    assert table.expand(r"$\sub{\alpha} \sub{y}$") == r"$\alpha x yx$"
    # The HoTT book's $t\mapsto\composecocone{t}c$: \mapsto t, never \mapstot.
    assert table.expand(r"$t\mapsto\cc{t}c$, $\mapsto{}\cc{t}c$") == r"$t\mapsto t\circ c$, $\mapsto{}t\circ c$"


def test_programming_macros_are_left_alone() -> None:
    table = MacroTable.from_document(r"\def\prd#1{\@ifnextchar\bgroup{\prd{#1}}{\prod_{#1}}}")
    assert table.expand(r"$\prd{x:A} B$") == r"$\prd{x:A} B$"
    # The common \DHLhksqrt redefinition of \sqrt builds boxes: left as written, not expanded wrongly.
    table = MacroTable.from_document(
        r"\let\oldsqrt\sqrt\def\sqrt{\mathpalette\DHLhksqrt}"
        r"\def\DHLhksqrt#1#2{\setbox0=\hbox{$#1\oldsqrt{#2\,}$}}\newcommand{\N}{\mathbb{N}}"
    )
    assert table.expand(r"$\sqrt{2} \in \N$") == r"$\sqrt{2} \in \mathbb{N}$"


@pytest.mark.parametrize(
    ("definition", "runaway"),
    [
        (r"\def\again{\again x}", "again"),
        (r"\newcommand{\a}{\b}\newcommand{\b}{\a}", "a"),
        (r"\newcommand{\grow}{\grow\grow}", "grow"),
    ],
)
def test_a_runaway_macro_is_left_as_written_and_the_rest_still_expands(definition: str, runaway: str) -> None:
    # Issue 38, point 1: one macro that cannot be expanded costs that macro, never the text.
    table = MacroTable.from_document(definition + r"\newcommand{\R}{\mathbb{R}}", max_expansions=500, max_length=10_000)
    assert table.expand(rf"$\{runaway} \in \R$") == rf"$\{runaway} \in \mathbb{{R}}$"
    assert set(table.unexpandable) == {runaway} and "expands" in table.unexpandable[runaway]
    # Known to run away, it is not tried again.
    assert table.expand(rf"$\{runaway}$, $\R$") == rf"$\{runaway}$, $\mathbb{{R}}$"


def test_the_runaway_is_the_macro_that_calls_itself_not_one_it_calls_more_often() -> None:
    table = MacroTable.from_document(r"\newcommand{\R}{\mathbb{R}}\def\a{\R\R\a}", max_expansions=500)
    assert table.expand(r"$\a$ and $\R$") == r"$\a$ and $\mathbb{R}$"
    assert set(table.unexpandable) == {"a"}
    # No macro calls itself: the one expanded most often is blamed (a deep blow-up, TeX would finish it).
    table = MacroTable.from_document(r"\def\b{\c\c\c\c}\def\c{\d\d\d\d}\def\d{xyz}", max_expansions=10)
    assert table.expand(r"$\b$") == "$" + r"\d" * 16 + "$" and set(table.unexpandable) == {"d"}


def test_a_macro_bomb_is_stopped_fast_at_the_default_bounds() -> None:
    table = MacroTable.from_document(r"\def\a{\a\a}\def\b{xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\b}")
    started = time.perf_counter()
    assert table.expand(r"$\a + \b$") == r"$\a + \b$"
    assert time.perf_counter() - started < 1.0
    assert table.unexpandable == {"a": "expands more than 20000 times", "b": "expands beyond 200000 characters"}


@pytest.mark.parametrize(
    "definition",
    [
        r"\NewDocumentCommand{\height}{m}{\kl[\height]{\mathfrak{h}}(#1)}",
        r"\newcommand{\height}[1]{\kl[\height]{\mathfrak{h}}(#1)}",
    ],
)
def test_a_macro_naming_itself_where_tex_never_expands_expands_once(definition: str) -> None:
    # The knowledge package's \kl[key]{notation}: the key is a name, never expanded by TeX.
    table = MacroTable.from_document(definition)
    assert table.expand(r"$\height{T} < \omega$") == r"$\kl[\height]{\mathfrak{h}}(T) < \omega$"
    assert table.unexpandable == {}


def test_let_copies_the_meaning_of_that_moment() -> None:
    # Issue 38, point 2: a later redefinition of the original does not change the copy.
    table = MacroTable.from_document(
        r"""
\newcommand{\emb}{\hookrightarrow}
\newcommand*{\tight}[1]{#1\nobreak}
\let\oldemb\emb
\def\emb{\tight\oldemb}
\let\oldsum=\sum
\renewcommand{\sum}{\oldsum\limits}
"""
    )
    assert table.expand(r"$H \emb G$") == r"$H \hookrightarrow\nobreak G$"
    assert table.expand(r"$\oldemb$") == r"$\hookrightarrow$"
    # A copy of LaTeX's own command prints that command, even once the original is redefined.
    assert table.expand(r"$\sum_i$") == r"$\sum\limits_i$"
    assert table.unexpandable == {}


def test_let_in_a_paper_copies_its_package_macro() -> None:
    packages = MacroTable.from_package(r"\newcommand{\into}{\hookrightarrow}")
    table = MacroTable.from_document(r"\let\oldinto\into \renewcommand{\into}{\oldinto\nobreak}", base=packages)
    assert table.expand(r"$A \into B$") == r"$A \hookrightarrow\nobreak B$"


def test_definition_line_names_the_last_definition_outside_comments() -> None:
    source = "\\newcommand{\\h}{1}\n% \\renewcommand{\\h}{2}\n\\NewDocumentCommand\\h{m}{3}\n\\newcommand{\\hh}{4}\n"
    assert definition_line(source, "h") == 3
    assert definition_line(source, "hh") == 4
    assert definition_line(source, "x") is None


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
