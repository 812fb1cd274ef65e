"""References read from statements and proofs: every form, each label once, resolved within the paper."""

from __future__ import annotations

from pathlib import Path

from ingestion.latex_ingestor import LatexIngestor
from ingestion.latex_references import referenced_labels, statement_references
from ingestion.records import LabelReference, StatementRecord


def test_every_reference_form_is_read_in_order() -> None:
    latex = (
        r"By Lemma~\ref{lem:a} and \eqref{eq:1}, \cref{thm:b, thm:c} and \Cref{def:d}; see \autoref{sec:e}, "
        r"\hyperref[sec:f]{the section}, \crefrange{lem:g}{lem:h}, \thref{thm:i}, \ref*{lem:j}, "
        r"\nameref{sec:k}, \vref{fig:l} and \pageref{lem:a}."
    )
    assert referenced_labels(latex) == [
        "lem:a", "eq:1", "thm:b", "thm:c", "def:d", "sec:e", "sec:f", "lem:g", "lem:h", "thm:i", "lem:j",
        "sec:k", "fig:l", "lem:a",
    ]  # fmt: skip


def test_look_alikes_are_not_references() -> None:
    latex = r"\refl{x} \refstepcounter{thm} \href{http://a}{b} \crefname{lemma}{lemma}{lemmas} \label{x} \cite{y}"
    assert referenced_labels(latex) == []


def test_each_label_once_where_first_referenced_statement_first() -> None:
    references = statement_references(r"By \ref{a} and \ref{b}.", r"Apply \ref{c}, then \ref{a} and \ref{c}.")
    assert references == (
        LabelReference("a", "statement"),
        LabelReference("b", "statement"),
        LabelReference("c", "proof"),
    )


def test_ten_thousand_references_in_one_proof_are_fine() -> None:
    proof = " ".join(rf"\ref{{eq:{i % 5000}}}" for i in range(10_000))
    references = statement_references("", proof)
    assert len(references) == 5000 and references[0] == LabelReference("eq:0", "proof")


DOCUMENT = r"""\documentclass{amsart}
\newtheorem{lemma}{Lemma}
\newtheorem{theorem}[lemma]{Theorem}
\newtheorem{definition}[lemma]{Definition}
\newcommand{\lemref}[1]{Lemma~\ref{#1}}
\begin{document}
\section{Basics}\label{sec:basics}
Running text with an equation
\begin{equation}\label{eq:outside} a = a \end{equation}
\begin{definition}\label{def:nice} A ring is \emph{nice} if it is zero. \end{definition}
\begin{lemma}\label{lem:first} Nice rings are zero, see \eqref{eq:inside} and Theorem~\ref{thm:later}.
\begin{equation}\label{eq:inside} 0 = 1 \end{equation}
\end{lemma}
\begin{proof} By Definition~\ref{def:nice}, \cref{sec:basics,eq:outside} and \ref{other-lemma-x}. \end{proof}
\begin{theorem}\label{thm:later} By \lemref{lem:first}, everything holds. \end{theorem}
\begin{proof} Use \eqref{eq:inside} and \ref{lem:first} again; cycles are fine: \ref{thm:later}. \end{proof}
\end{document}
"""


def test_references_resolve_to_statements_equations_and_sections_within_the_paper(tmp_path: Path) -> None:
    main = tmp_path / "paper" / "main.tex"
    main.parent.mkdir()
    main.write_text(DOCUMENT)
    [paper] = LatexIngestor().ingest([main.parent])
    by_label = {record.label: record for record in paper.records}
    definition, lemma, theorem = by_label["def:nice"], by_label["lem:first"], by_label["thm:later"]
    stated = "Nice rings are zero, see (2) and Theorem 3."  # each reference keeps its citing sentence
    proved = "By Definition 1, Section 1, Equation 1 and [ref]."  # another paper's label: "[ref]"
    assert lemma.references == (
        LabelReference("eq:inside", "statement", lemma.id, "", stated),  # an equation inside it: itself
        LabelReference("thm:later", "statement", theorem.id, "", stated),  # a later statement: resolved too
        LabelReference("def:nice", "proof", definition.id, "", proved),
        LabelReference("sec:basics", "proof", "", "Basics", proved),  # a section: by its name
        LabelReference("eq:outside", "proof", "", "Basics", proved),  # an equation between statements: its section
        LabelReference("other-lemma-x", "proof", "", "", proved),  # not defined here: kept, unresolved
    )
    assert theorem.references[0].sentence == "By Lemma 2, everything holds."  # through the paper's macro
    # through the paper's own macro; a reference cycle and a self-reference are fine
    assert [(r.label, r.statement_id) for r in theorem.references] == [
        ("lem:first", lemma.id), ("eq:inside", lemma.id), ("thm:later", theorem.id)
    ]  # fmt: skip
    assert definition.references == ()
    assert (paper.references, paper.unresolved_references) == (9, 1)
    assert lemma.metadata["section_label"] == "sec:basics"
    # ``ingest --parse-only --json`` prints them
    assert lemma.to_dict()["references"][1] == {
        "label": "thm:later", "where": "statement", "statement_id": theorem.id, "section": "", "sentence": stated
    }  # fmt: skip
    assert StatementRecord.from_dict(lemma.to_dict()) == lemma
