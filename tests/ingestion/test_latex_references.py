"""References read from statements and proofs: every form, each label once, resolved within the paper."""

from __future__ import annotations

from ingestion.latex_references import referenced_labels, statement_references
from ingestion.records import LabelReference


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
