from __future__ import annotations

from ingestion.theorem_packages import rewrite_theorem_packages


def test_mdframed_tcolorbox_and_restatable_become_newtheorem_latex() -> None:
    source = (
        r"\newmdtheoremenv[linecolor=red]{mdlem}[thm]{Lemma}"
        r"\newtcbtheorem[use counter from=thm]{tdef}{Definition}{}{def}"
        r"\newtcbtheorem{note}{Note}{}{}"
        r"\begin{tdef}{Group}{group}A group is ...\end{tdef}"
        r"\begin{tdef*}{}{}Unnamed.\end{tdef*}"
        r"\begin{note}{}{plain}N.\end{note}"
        r"\begin{restatable}[Lagrange]{theorem}{lagrange}Orders divide.\end{restatable}"
        r"\begin{restatable*}{lemma}{aux}\begin{equation}x\end{equation}\end{restatable*}"
    )
    assert rewrite_theorem_packages(source) == (
        r"\newtheorem{mdlem}[thm]{Lemma}"
        r"\newtheorem{tdef}[thm]{Definition}"
        r"\newtheorem{note}{Note}"
        r"\begin{tdef}[Group]\label{def:group}A group is ...\end{tdef}"
        r"\begin{tdef*}Unnamed.\end{tdef*}"
        r"\begin{note}\label{plain}N.\end{note}"
        r"\begin{theorem}[Lagrange]Orders divide.\end{theorem}"
        r"\begin{lemma}\begin{equation}x\end{equation}\end{lemma}"
    )


def test_a_document_without_these_packages_is_unchanged() -> None:
    source = r"\newtheorem{thm}{Theorem}\begin{document}\begin{thm}restatable is a word\end{thm}"
    assert rewrite_theorem_packages(source) == source
