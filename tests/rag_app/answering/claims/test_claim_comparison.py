"""The yes/no verdict that compares claims: the question's against the quoted statement's (units)."""

from __future__ import annotations

import pytest

from rag_app.answering.claims import Verdict, compare, is_yes_no_question, statement_claims
from rag_app.answering.claims.claim_terms import question_latex
from rag_app.answering.claims.vocabulary import formula_key

LIOUVILLE = "A bounded entire function is constant."
MERTENS = (
    r"As $x \to \infty$, $\sum_{p \le x} \frac{1}{p} = \log\log x + M + O(1/\log x)$ for a constant $M$; in "
    r"particular the sum of the reciprocals of the primes diverges."
)
NAKAYAMA = (
    r"Let $M$ be a finitely generated $R$-module and $I \subseteq \operatorname{Jac}(R)$ an ideal. If $IM = M$, "
    r"then $M = 0$."
)
COMPACT_CLOSED = (
    "A compact subset of a Hausdorff space is closed. Hence a continuous bijection from a compact space onto a "
    "Hausdorff space is a homeomorphism."
)
TWO_SQUARES = r"An odd prime $p$ is a sum of two squares $p = x^2 + y^2$ if and only if $p \equiv 1 \pmod{4}$."
FREDHOLM = (
    r"If $K$ is a compact operator on a Banach space and $\lambda \ne 0$, then $K - \lambda I$ is injective if and "
    r"only if it is surjective."
)
ROUCHE = (
    r"If $f$ and $g$ are holomorphic inside and on a simple closed curve $\gamma$ and $|g| < |f|$ on $\gamma$, then "
    r"$f$ and $f + g$ have the same number of zeros inside $\gamma$."
)
P_GROUP = r"A nontrivial finite $p$-group has a nontrivial center."
PID_UFD = "A principal ideal domain is a unique factorization domain."


def verdict(question: str, statement: str, kind: str = "theorem") -> Verdict:
    return compare(question, statement, kind).verdict


@pytest.mark.parametrize(
    ("question", "statement"),
    [
        ("Must an entire function that is bounded be constant?", LIOUVILLE),
        ("Does the sum of the reciprocals of the primes diverge?", MERTENS),
        (r"If $M$ is a finitely generated $R$-module, $I \subseteq \operatorname{Jac}(R)$ an ideal and $IM = M$, is "
         r"$M = 0$?", NAKAYAMA),
        ("Is a continuous bijection from a compact space onto a Hausdorff space a homeomorphism?", COMPACT_CLOSED),
        ("If f and g are holomorphic inside and on a simple closed curve with |g| < |f| on it, do f and f + g have the "
         "same number of zeros inside?", ROUCHE),
        ("Does every nontrivial finite p-group have a nontrivial center?", P_GROUP),
        ("Is every PID a UFD?", PID_UFD),
    ],
)  # fmt: skip
def test_yes_where_the_statement_proves_the_claim(question: str, statement: str) -> None:
    assert verdict(question, statement) is Verdict.YES


@pytest.mark.parametrize(
    ("question", "statement"),
    [
        ("Is every entire function constant?", LIOUVILLE),  # "bounded" dropped
        (r"If $M$ is a module, $I \subseteq \operatorname{Jac}(R)$ an ideal and $IM = M$, is $M = 0$?", NAKAYAMA),
        ("Is every continuous bijection onto a Hausdorff space a homeomorphism?", COMPACT_CLOSED),
        ("Is every odd prime a sum of two squares?", TWO_SQUARES),  # the other side of the equivalence
        ("For a compact operator K on a Banach space, is K injective if and only if it is surjective?", FREDHOLM),
    ],
)
def test_only_under_a_hypothesis_the_question_drops(question: str, statement: str) -> None:
    comparison = compare(question, statement)
    assert comparison.verdict is Verdict.ONLY_IF and comparison.missing


@pytest.mark.parametrize(
    ("question", "statement"),
    [
        ("Is every bounded holomorphic function on the unit disc constant?", LIOUVILLE),  # another object
        ("Is every closed subset of a Hausdorff space compact?", COMPACT_CLOSED),  # the converse
        ("Is every unique factorization domain a principal ideal domain?", PID_UFD),  # the converse
        ("Do f and g have the same number of zeros inside when |g| < |f| on the curve?", ROUCHE),  # f + g asked as g
        ("Does every nontrivial finite group have a nontrivial center?", P_GROUP),  # p-group is not group
        ("Is the sum of the reciprocals of the primes convergent?", MERTENS),  # "series" or not: never yes
        ("Does every bounded sequence in R^n converge?", "Every bounded sequence in $\\mathbb{R}^n$ has a convergent "
         "subsequence."),  # a stronger conclusion
        ("Is every group of order p^3 abelian?", "Every group of order $p^2$, with $p$ prime, is abelian."),
        ("If a type has decidable equality, is it necessarily a set?",  # proved of one type: a special case
         r"The type ${\mathbb{N}}$ of natural numbers has decidable equality, and hence is a set."),
        ("Is every flat ring map faithfully flat?",
         "A composition of (faithfully) flat ring maps is (faithfully) flat."),
    ],
)  # fmt: skip
def test_never_yes_to_a_claim_the_statement_does_not_prove(question: str, statement: str) -> None:
    assert verdict(question, statement) is not Verdict.YES


def test_each_claim_of_a_statement_is_read_apart() -> None:
    normal = "Every metric space is normal, and every compact Hausdorff space is normal."
    assert verdict("Is every compact Hausdorff space normal?", normal) is Verdict.YES
    assert verdict("Is every Hausdorff space normal?", normal) is Verdict.ONLY_IF


def test_the_opposite_where_the_statement_asserts_it() -> None:
    assert verdict("Does the sum of the reciprocals of the primes converge?", MERTENS) is Verdict.OPPOSITE
    planar = (
        r"A simple planar graph with $n \ge 3$ vertices has at most $3n - 6$ edges; in particular $K_5$ is not planar."
    )
    assert verdict("Is K_5 planar?", planar) is Verdict.OPPOSITE
    assert verdict("Is K_5 non-planar?", planar) is Verdict.YES


def test_only_what_a_paper_proves_is_read_for_a_verdict() -> None:
    conjecture = compare("Must an entire function that is bounded be constant?", LIOUVILLE, "conjecture")
    assert conjecture.verdict is Verdict.NONE and "not a proved statement" in conjecture.reason
    assert verdict("Is every bounded entire function constant?", LIOUVILLE, "answer") is Verdict.NONE
    assert verdict("Is every bounded entire function constant?", "Yes. " + LIOUVILLE, "theorem") is Verdict.NONE


def test_statements_are_read_into_hypotheses_and_conclusions() -> None:
    (claim,) = statement_claims(LIOUVILLE)
    assert {w.stem for w in claim.hypotheses.words} == {"bound", "entir", "function"}
    assert {w.stem for w in claim.conclusion.words} == {"constant"}
    nakayama = statement_claims(NAKAYAMA)[-1]
    assert "IM=M" in nakayama.hypotheses.formulas and "M=0" in nakayama.conclusion.formulas
    assert "finit" in nakayama.hypotheses.stems  # the "Let ..." sentence holds for every claim after it
    sides = statement_claims(TWO_SQUARES)
    assert len(sides) == 2 and all(claim.equivalence for claim in sides)


def test_yes_no_questions_with_their_hypotheses_first_are_recognised() -> None:
    assert is_yes_no_question("If p is prime and does not divide a, is a^(p-1) = 1 mod p?")
    assert is_yes_no_question("For integers a and b not both zero, are there x and y with ax + by = gcd(a, b)?")
    assert not is_yes_no_question("If I have a ring, what is its spectrum?")
    assert not is_yes_no_question("For which n is Z/nZ a field?")


def test_typed_and_latex_formulas_meet() -> None:
    assert formula_key(r"\mathbb{R}^n") == "ℝ^n"
    assert formula_key(r"\lambda \ne 0") == "λ≠0"
    assert "$n \\ge 3$" in question_latex("a graph on n >= 3 vertices")
    assert "principal ideal domain" in question_latex("Is every PID a UFD?")


def test_two_kinds_of_object_of_one_subject_are_claims_of_their_own() -> None:
    both = "Quotients and localizations of Noetherian rings are Noetherian."
    assert compare("Is a quotient of a Noetherian ring Noetherian?", both, "proposition").verdict is Verdict.YES
    assert compare("Is a localization of a Noetherian ring Noetherian?", both, "proposition").verdict is Verdict.YES
    assert compare("Is a subring of a Noetherian ring Noetherian?", both, "proposition").verdict is not Verdict.YES


def test_an_existence_with_a_negation_proves_no_claim() -> None:
    weird = "There exists a ring $A$ and a module $M$ such that $M$ is flat, which is never projective."
    assert compare("Is a flat module over a ring projective?", weird, "lemma").verdict is not Verdict.YES


def test_the_category_a_statement_works_in_is_no_hypothesis() -> None:
    """The issue's own example: "Only under a hypothesis the question does not state (category)"."""
    injective = (
        "An abelian group $J$ is an injective object in the category of abelian groups if and only if $J$ is "
        "divisible."
    )
    asked = "Is an abelian group injective as a Z-module exactly when it is divisible?"
    assert compare(asked, injective, "lemma").verdict is Verdict.YES
