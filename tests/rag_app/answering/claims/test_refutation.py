"""Statements that refute a yes/no claim as asked: counterexamples, warnings, the converse denied (units)."""

from __future__ import annotations

import pytest

from rag_app.answering.claims import Verdict, compare
from rag_app.answering.claims.refutation import refutes

LIMIT = (
    r"There exists an inverse system of quasi-compact topological spaces over $\mathbf{N}$ whose limit is not "
    r"quasi-compact."
)
WARNING = (
    r"It is not true that a finite $R$-module which is $R$-flat is automatically projective. A counter example is "
    r"where $R = \mathcal{C}^\infty(\mathbf{R})$."
)
OPEN = (
    r"An open immersion is in general not quasi-compact. The standard example of this is the open subspace "
    r"$U \subset X$."
)
FINITE = "A finite extension of fields is a finitely generated field extension. The converse is not true."
TFAE = (
    r"Let $f : X \to S$ be a morphism of schemes. The following are equivalent \begin{enumerate} "
    r"\item $f$ is finite, and \item $f$ is affine and proper. \end{enumerate}"
)


@pytest.mark.parametrize(
    ("question", "statement", "kind", "form"),
    [
        ("Is the limit of an inverse system of quasi-compact topological spaces quasi-compact?", LIMIT, "lemma",
         "counterexample"),
        ("Over an arbitrary ring, is a finite flat module projective?", WARNING, "remark", "counterexample"),
        ("Is an open immersion of schemes always quasi-compact?", OPEN, "example", "counterexample"),
        ("Is every finitely generated field extension finite?", FINITE, "lemma", "opposite"),
    ],
)  # fmt: skip
def test_a_counterexample_a_warning_or_the_converse_denied_refutes_the_claim(
    question: str, statement: str, kind: str, form: str
) -> None:
    refutation = refutes(question, statement, kind)
    assert refutation is not None and refutation.form == form
    comparison = compare(question, statement, kind)
    assert comparison.verdict is Verdict.NO and comparison.reason.endswith(form)


def test_what_the_statement_proves_is_not_refuted_by_it() -> None:
    assert refutes("Is a finite extension of fields finitely generated?", FINITE, "lemma") is None
    assert compare("Is a finite extension of fields finitely generated?", FINITE, "lemma").verdict is Verdict.YES
    # a negated question, and a statement about other objects, are left alone
    assert refutes("Is there an open immersion that is not quasi-compact?", OPEN, "example") is None
    assert refutes("Is every closed immersion of schemes quasi-compact?", OPEN, "example") is None
    limit = "Is the limit of an inverse system of quasi-compact spaces quasi-compact?"
    assert refutes(limit, LIMIT, "conjecture") is None
    assert refutes(limit, LIMIT, "answer") is None, "an answer post answers its own thread's question"


def test_the_following_are_equivalent_reads_as_an_equivalence_of_its_items() -> None:
    assert compare("Is a finite morphism of schemes proper?", TFAE).verdict is Verdict.YES
    converse = compare("Is every proper morphism of schemes finite?", TFAE)
    assert converse.verdict is Verdict.ONLY_IF and converse.missing == ("affine",)


def test_hypotheses_named_are_hypotheses_not_the_word_asked_nor_the_kind_of_object() -> None:
    catenary = (
        "Any localization of a catenary ring is catenary. Any localization of a Noetherian universally catenary "
        "ring is universally catenary."
    )
    asked = compare("Is every localization of a ring catenary?", catenary)
    assert asked.verdict is Verdict.ONLY_IF and "catenary" in asked.missing, "the word asked states no hypothesis"
    # Noetherian is what the second claim assumes, with more: neither claim proves it of a Noetherian ring
    assert compare("Is every localization of a Noetherian ring catenary?", catenary).verdict is Verdict.NONE
    jacobson = (
        "The ring $\\mathbf{Z}$ is a Jacobson ring.\nMore generally, let $R$ be a ring such that\n\n* $R$ is a "
        "domain,\n\n* $R$ has infinitely many maximal ideals.\n\nThen $R$ is a Jacobson ring."
    )
    other = compare("Is a domain with finitely many maximal ideals a Jacobson ring?", jacobson)
    assert other.verdict is Verdict.NONE, "the claim about Z proves nothing of the domain the question names"
    closed = "A closed subset of a quasi-compact topological space is quasi-compact."
    assert compare("Is a closed subset of a quasi-compact space quasi-compact?", closed).verdict is Verdict.YES


def test_a_number_written_as_a_word_is_compared_with_the_formula() -> None:
    artinian = (
        r"A Noetherian ring of dimension $0$ is Artinian. Conversely, any Artinian ring is Noetherian of dimension "
        r"zero."
    )
    assert compare("Is a Noetherian ring of dimension one Artinian?", artinian).verdict is not Verdict.YES
    assert compare("Is a Noetherian ring of dimension zero Artinian?", artinian).verdict is Verdict.YES


def test_a_listed_equivalence_asked_backwards_is_no_yes() -> None:
    dedekind = (
        "Let $R$ be a ring. The following are equivalent\n\n* $R$ is a Dedekind domain,\n\n* $R$ is a Noetherian, "
        "normal domain, and $\\dim(R) \\leq 1$."
    )  # as the index stores a list: Markdown bullets
    assert compare("Is every Dedekind domain a Noetherian normal domain?", dedekind).verdict is Verdict.YES
    backwards = compare("Is every Noetherian normal domain a Dedekind domain?", dedekind)
    assert backwards.verdict is Verdict.ONLY_IF and any("≤1" in m for m in backwards.missing)


STRANGE = (
    "Strange flat modules.\n\n* There exists a ring $R$ and a finite flat $R$-module $M$ which is\nnot projective."
    "\n\n* There exists a closed immersion which is flat but not open."
)
KOLMOGOROV = (
    "Let $Y$ be an infinite set, furnished with the topology whose closed sets are\n$Y$ and the finite subsets of"
    " $Y$. Then $Y$ is Kolmogorov but not quasi-sober.\nHowever, the family of its singletons is\na covering by"
    " discrete and hence sober spaces."
)


@pytest.mark.parametrize(
    ("question", "statement", "kind"),
    [
        # each item of a list of warnings is a warning of its own
        ("Is every flat closed immersion of schemes an open immersion?", STRANGE, "lemma"),
        # the sentences that set a warning up ("Let Y be ...") come before it
        ("Is every Kolmogorov topological space quasi-sober?", KOLMOGOROV, "example"),
        # a qualifier that narrows the object keeps the counterexample one: a finite flat module is a flat module
        ("Is every flat module projective?", STRANGE, "lemma"),
        # "étale" as a question types it, "nonflat" as "not flat"
        ("Is every formally etale ring map flat?", "There exist formally étale nonflat ring maps.", "lemma"),
        # a negation denies the question's words to the end of its clause, however far they stand
        ("Is every flat algebra a filtered colimit of finitely presented flat algebras?",
         "There exists a ring $A$ and a flat $A$-algebra $B$ which cannot be written as a filtered colimit of "
         "finitely presented flat $A$-algebras.", "lemma"),
        # the kind of object asked as the predicate ("a set") is what the statement denies
        ("Is the universe a set?", r"The universe $\mathcal{U}$ is not a set. To prove this, ...", "example"),
    ],
)  # fmt: skip
def test_research_warnings_refute_the_claim_they_deny(question: str, statement: str, kind: str) -> None:
    assert refutes(question, statement, kind) is not None


def test_a_modifier_that_changes_the_notion_or_a_negation_of_something_else_refutes_nothing() -> None:
    # "formally smooth" is another notion than "smooth": no counterexample to a claim about smooth maps
    assert refutes("Is every smooth ring map flat?", "There exists a formally smooth ring map which is not flat.",
                   "lemma") is None  # fmt: skip
    # an existence whose negation denies nothing the question asks ("x not in V") refutes nothing
    valuation = (
        "Let $A$ be a normal domain with fraction field $K$.\n\n* For every $x \\in K$, $x \\not \\in A$ there "
        "exists a valuation ring\n$A \\subset V \\subset K$ with fraction field $K$ such that $x \\not \\in V$."
    )
    assert refutes("Is a valuation ring a normal domain?", valuation, "lemma") is None
    # "locally free" is not "local": the phrase "local ring" is not in "a ring R ... not locally free"
    not_locally_free = "There exists a ring $R$ and a finite flat $R$-module $M$ which is not locally free."
    assert refutes("Over a local ring, is every finite flat module free?", not_locally_free, "lemma") is None
