from ingestion.latex_front_matter import document_authors, document_title
from ingestion.latex_statements import (
    extract_statements,
    kind_for,
    theorem_environments,
)
from ingestion.records import StatementKind

PREAMBLE = r"""
\documentclass{amsart}
\newtheorem{thm}{Theorem}[section]
\newtheorem{keylem}[thm]{Key Lemma}
\newtheorem*{mainthm}{Main Theorem}
\newtheorem{conj}{Conjecture}
\declaretheorem[name=Proposition]{proposicion}
\newcommand{\mythm}[2]{\newtheorem{#1}{#2}}
\title[Short]{A \emph{Long} Title}
\author{Ada Lovelace \and Emmy Noether}
"""


def test_newtheorem_aliases_map_to_canonical_kinds() -> None:
    environments = theorem_environments(PREAMBLE + r"\begin{document}\begin{defn}x\end{defn}\end{document}")
    assert environments["thm"].kind is StatementKind.THEOREM
    assert environments["keylem"].kind is StatementKind.LEMMA  # by title, not by name
    assert environments["mainthm"].kind is StatementKind.THEOREM
    assert environments["conj"].kind is StatementKind.CONJECTURE
    assert environments["proposicion"].kind is StatementKind.PROPOSITION
    assert environments["defn"].kind is StatementKind.DEFINITION  # undeclared common name
    assert "#1" not in environments  # \newtheorem inside a macro body is not a declaration
    assert "thm*" in environments


def test_kind_for_earliest_keyword_and_plural_names() -> None:
    assert kind_for("x", "Main Theorem") is StatementKind.THEOREM
    assert kind_for("x", "Lemma-Definition") is StatementKind.LEMMA
    assert kind_for("remarks") is StatementKind.REMARK
    assert kind_for("figure") is None


def test_statements_with_names_labels_sections_and_proofs() -> None:
    body = r"""
\begin{document}
\section{Groups}\label{sec:groups}
\begin{thm}[Lagrange]\label{thm:lagrange}
The order of a subgroup divides $|G|$.
\end{thm}
\noindent
\begin{proof}[Proof of Lagrange]
Cosets partition $G$. \begin{proof} nested \end{proof}
\end{proof}
\subsection{Sylow}
\begin{keylem}
A $p$-group has a nontrivial center.
\begin{thm} Inner \end{thm}
\end{keylem}
\section{Next}
\begin{conj}Open.\end{conj}
\end{document}
"""
    document = PREAMBLE + body
    statements = extract_statements(document, theorem_environments(document))
    assert [s.kind for s in statements] == [
        StatementKind.THEOREM,
        StatementKind.LEMMA,
        StatementKind.THEOREM,
        StatementKind.CONJECTURE,
    ]
    lagrange = statements[0]
    assert lagrange.name == "Lagrange"
    assert lagrange.label == "thm:lagrange"
    assert lagrange.text == "The order of a subgroup divides $|G|$."
    assert lagrange.proof.startswith("Cosets partition $G$.")
    assert lagrange.proof.endswith("\\end{proof}")  # the nested proof stays inside the outer one
    assert lagrange.section == "Groups"
    key = statements[1]
    assert key.section == "Groups" and key.subsection == "Sylow"
    assert "\\begin{thm} Inner \\end{thm}" in key.text
    assert statements[3].section == "Next" and statements[3].subsection == ""


def test_unclosed_environment_does_not_raise() -> None:
    document = r"\begin{document}\begin{theorem}[Broken] never closed"
    statements = extract_statements(document, theorem_environments(document))
    assert len(statements) == 1 and statements[0].name == "Broken"


def test_title_and_authors() -> None:
    assert document_title(PREAMBLE) == "A \\emph{Long} Title"
    assert document_authors(PREAMBLE) == ["Ada Lovelace", "Emmy Noether"]


def test_a_label_with_braces_is_kept_and_an_equations_label_is_not_the_statements() -> None:
    # Issue 26, defects 3 and 6.
    body = r"""
\begin{document}
\begin{thm}\label{thm:E_{1,s}}
The page $E_{1,s}$ degenerates.
\end{thm}
\begin{thm}
For all $x$, \\[2pt]
\begin{equation}\label{eq:gauss}
\int e^{-x^2} dx = \sqrt{\pi}.
\end{equation}
\end{thm}
\begin{thm}
Let \[ a = b \label{eq:ab} \] and then \label{thm:after-display} all is well.
\end{thm}
\end{document}
"""
    document = PREAMBLE + body
    braced, gauss, after = extract_statements(document, theorem_environments(document))
    assert braced.label == "thm:E_{1,s}" and "label" not in braced.text
    assert gauss.label == "" and "eq:gauss" not in gauss.text
    assert after.label == "thm:after-display"


def test_a_note_in_braces_after_begin_is_the_name_not_text() -> None:
    # Issue 26, defect 10 (the optional argument given in braces).
    body = r"""
\begin{document}
\begin{thm}{(see \cite[III\S 3]{hartshorne})}
Every projective variety is proper.
\end{thm}
\begin{thm}
{Braces} that open the text stay text.
\end{thm}
\end{document}
"""
    document = PREAMBLE + body
    noted, plain = extract_statements(document, theorem_environments(document))
    assert noted.name == r"see \cite[III\S 3]{hartshorne}" and noted.text == "Every projective variety is proper."
    assert plain.name == "" and plain.text.startswith("{Braces}")


def test_a_newenvironment_taking_its_heading_gets_the_kind_and_name_from_it() -> None:
    # Issue 26, defect 5.
    document = r"""
\documentclass{article}
\def\claim#1{\par\noindent\textbf{#1.}\itshape}
\def\endclaim{\par}
\newenvironment{thm}{\claim}{\endclaim}
\newtheorem{theorem}{Theorem}
\newenvironment{namedthm}[1]{\begin{theorem}[#1]}{\end{theorem}}
\newenvironment{block}[1]{\textbf{#1}}{}
\begin{document}
\begin{thm}{Exercise} Show that $x = x$. \end{thm}
\begin{thm}{Hopf--Rinow theorem} A complete manifold is geodesically complete. \end{thm}
\begin{namedthm}{Gauss} Every polynomial has a root. \end{namedthm}
\begin{block}{Summary} Not a statement. \end{block}
\end{document}
"""
    body = document.find("\\begin{document}")
    statements = [s for s in extract_statements(document, theorem_environments(document)) if s.offset > body]
    exercise, hopf, gauss = statements
    assert (exercise.kind, exercise.name, exercise.text) == (StatementKind.EXERCISE, "", "Show that $x = x$.")
    assert (hopf.kind, hopf.name) == (StatementKind.THEOREM, "Hopf--Rinow theorem")
    assert hopf.text == "A complete manifold is geodesically complete."
    assert (gauss.kind, gauss.name, gauss.text) == (StatementKind.THEOREM, "Gauss", "Every polynomial has a root.")


def test_headings_in_other_languages_and_with_tex_accents_give_the_kind() -> None:
    assert kind_for("x", r"Th\'eor\`eme") is StatementKind.THEOREM
    assert kind_for("x", "Théorème principal") is StatementKind.THEOREM
    assert kind_for("x", "Hilfssatz") is StatementKind.LEMMA  # not "Satz" (theorem) inside it
    assert kind_for("x", "Definición") is StatementKind.DEFINITION
    assert kind_for("x", "Problema") is StatementKind.PROBLEM  # not "lema" inside it
    assert kind_for("x", r"Corollaire") is StatementKind.COROLLARY
    assert kind_for("satz") is StatementKind.THEOREM and kind_for("bem") is StatementKind.REMARK
