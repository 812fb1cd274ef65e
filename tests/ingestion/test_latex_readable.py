from __future__ import annotations

from ingestion.latex_numbering import Reference, number_document
from ingestion.latex_readable import ReadableLatex, normalize_math_delimiters
from ingestion.latex_statements import theorem_environments

DOCUMENT = r"""
\documentclass{amsart}
\newtheorem{thm}{Theorem}[section]
\newtheorem{lem}[thm]{Lemma}
\theoremstyle{definition}
\newtheorem{defn}[thm]{Definition}
\newtheorem*{claim}{Claim}
\numberwithin{equation}{section}
\begin{document}
\section{Intro}\label{sec:intro}
\begin{thm}\label{thm:a} A \end{thm}
\section{Main}
\begin{lem}\label{lem:b} B \begin{equation}\label{eq:c} x = y \end{equation} \end{lem}
\begin{claim}\label{cl} C \end{claim}
\begin{defn}\label{def:d} D \end{defn}
\appendix
\section{Extra}\label{sec:extra}
\begin{thm}\label{thm:e} E \end{thm}
\end{document}
"""


def test_labels_get_the_numbers_latex_prints() -> None:
    numbering = number_document(DOCUMENT, theorem_environments(DOCUMENT))
    names = {label: ref.name for label, ref in numbering.labels.items()}
    assert names == {
        "sec:intro": "Section 1",
        "thm:a": "Theorem 1.1",
        "lem:b": "Lemma 2.1",
        "eq:c": "Equation 2.1",
        "def:d": "Definition 2.2",
        "sec:extra": "Appendix A",
        "thm:e": "Theorem A.1",
    }


def test_references_and_citations_read_as_text() -> None:
    readable = ReadableLatex({"lem:b": Reference("Lemma", "2.1"), "eq:c": Reference("Equation", "2.1")})
    text = readable.convert(
        r"By Lemma~\ref{lem:b}, \cref{lem:b} and \eqref{eq:c} (see \cite[Thm.~3]{Mat}), "
        r"\emph{every} \textbf{finite} module; \ref{unknown-label}."
    )
    assert text == ("By Lemma 2.1, Lemma 2.1 and (2.1) (see [Mat, Thm. 3]), every finite module; [unknown-label].")


def test_math_is_normalized_to_one_inline_and_one_display_convention() -> None:
    text = normalize_math_delimiters(
        r"Inline \(a\) and $b$; display \[c\] $$d$$ "
        r"\begin{equation}\label{x} e \end{equation} \begin{align*} f &= g \\ h &= i \nonumber\end{align*} "
        r"\begin{gather} j \end{gather} \begin{multline*} k \end{multline*} costs \$5"
    )
    assert text == (
        r"Inline $a$ and $b$; display $$c$$ $$d$$ $$e$$ $$\begin{aligned} f &= g \\ h &= i \end{aligned}$$ "
        r"$$\begin{gathered} j \end{gathered}$$ $$\begin{gathered} k \end{gathered}$$ costs \$5"
    )


def test_text_outside_math_is_plain_and_math_is_untouched() -> None:
    readable = ReadableLatex()
    text = readable.convert(r"\textit{Let} $\mathcal{F}$ be a sheaf \index{sheaf} on \ensuremath{X}\footnote{a space}.")
    assert text == r"Let $\mathcal{F}$ be a sheaf on $X$ [a space]."


def test_small_leaks_multicols_argument_and_section_sign() -> None:
    # Issue 26, defect 10.
    readable = ReadableLatex({})
    text = readable.convert(r"\begin{multicols}{2} See III\S 3 and \S\S 4--5. \end{multicols}")
    assert text == "See III§3 and §§4--5."
