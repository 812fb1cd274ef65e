"""The words every reader of mathematical English here shares: the claims reading (``claim_terms``,
``statement_claims``, ``refutation``, ``implied_conditions``) and the written answer's check
(``rag_app.answering.statement_check``). One list each, so that a word learned for one reader is learned for all;
the regular expressions built from them live here too."""

from __future__ import annotations

import re
from dataclasses import dataclass

# Words that deny what follows ("is not solvable", "has no zeros", "a ring without zero divisors").
NEGATIONS = frozenset(
    "not no never cannot can't isn't aren't doesn't don't nor neither none fails fail without".split()  # noqa: SIM905
)

# Words that open a sentence setting up a statement's objects rather than claiming ("Let $X$ be a scheme.").
SETUP_WORDS = ("let", "suppose", "assume", "fix", "consider", "denote", "given", "set", "throughout", "write")
SETUP_SENTENCE = re.compile(r"\s*(?:" + "|".join(SETUP_WORDS) + r")\b", re.IGNORECASE)

# Phrases that state an equivalence; a claim read with one compares its two sides.
EQUIVALENCE_PHRASES = ("if and only if", "iff", "exactly when", "precisely when")
EQUIVALENCE = re.compile(r"\b(?:" + "|".join(EQUIVALENCE_PHRASES) + r")\b", re.IGNORECASE)

# Nouns that name the kind of object, not a hypothesis about it: "Let R be a ring" binds a name, and a sentence
# that leaves out "ring" has dropped nothing. Its qualifiers ("Noetherian", "finite") are hypotheses.
OBJECT_NOUNS = frozenset(
    """set sets subset subsets space spaces function functions map maps mapping element elements point points
    number numbers integer integers ring rings module modules group groups field fields matrix matrices sequence
    sequences series family families object objects morphism morphisms scheme schemes graph graphs polynomial
    polynomials vector vectors variable variables ideal ideals operator operators measure measures value values
    term terms collection collections structure structures coefficient coefficients system systems
    topological category categories type types sheaf sheaves algebra algebras variety varieties site sites
    complex complexes""".split()  # noqa: SIM905 (one word list, read as prose)
)
# Of those, the kinds a question asks as its predicate ("Is O a sheaf for the h topology?", "Is X a variety?"):
# there the noun is the claim, and a claim's reader must not pass over it (read as a mere kind of object,
# "sheaf" loses the refutation of that question). The written-answer check reads them as objects.
PREDICATE_NOUNS = frozenset(
    "type types sheaf sheaves algebra algebras variety varieties site sites complex complexes".split()  # noqa: SIM905
)
# The kinds of object a claim's reader passes over: a question that leaves one out has dropped nothing.
GENERIC_NOUNS = OBJECT_NOUNS - PREDICATE_NOUNS


# Words a statement often writes as a sign instead: said when its formulas hold the sign. Each reader takes the
# signs of the notation it reads: the written-answer check reads a statement's LaTeX, the claims its formulas
# rendered as Unicode (so "equal" is "=" in both, "isomorphic" is \cong for one and ≅ for the other).
@dataclass(frozen=True, slots=True)
class Signs:
    latex: tuple[str, ...] = ()
    unicode: str = ""


SYMBOL_WORDS: dict[str, Signs] = {
    "equal": Signs(("=", "\\ge", "\\le", "\\geq", "\\leq"), "="),
    "between": Signs(("<", "\\le")),
    "greater": Signs((">", "\\ge", "\\geq"), ">"),
    "less": Signs(("<", "\\le", "\\leq"), "<"),
    "most": Signs((), "≤"),
    "least": Signs((), "≥"),
    "dimension": Signs(("\\dim",)),
    "degree": Signs(("\\deg", "[")),
    "product": Signs(("\\prod", "\\times", "\\otimes", "\\cdot"), "∏"),
    "tensor": Signs(("\\otimes",)),
    "sum": Signs(("\\sum", "+", "\\oplus"), "∑"),
    "union": Signs(("\\cup", "\\bigcup"), "∪"),
    "intersection": Signs(("\\cap", "\\bigcap"), "∩"),
    "cap": Signs((), "∩"),
    "subset": Signs(("\\subset", "\\subseteq")),
    "contains": Signs((), "⊆⊂"),
    "inside": Signs((), "⊆⊂"),
    "integral": Signs(("\\int",), "∫∮"),
    "infinite": Signs(("\\infty",)),
    "infinity": Signs((), "∞"),
    "spectrum": Signs(("\\mathrm{Spec}", "Spec")),
    "inequality": Signs(("\\le", "\\ge", "<", ">")),
    "bound": Signs(("\\le", "\\ge", "\\ll", "\\lesssim")),
    "kernel": Signs(("\\ker", "{ker}")),
    "image": Signs(("\\im", "\\operatorname{im}")),
    "composition": Signs(("\\circ",)),
    "isomorphic": Signs(("\\cong", "\\simeq"), "≅"),
    "congruent": Signs((), "≡"),
    "asymptotic": Signs((), "∼"),
    "limit": Signs(("\\lim", "\\to")),
    "converges": Signs((), "→"),
    "tends": Signs((), "→"),
    "complex": Signs((), "ℂ"),
    "plane": Signs((), "ℂ"),
    "real": Signs((), "ℝ"),
    "integer": Signs((), "ℤ"),
    "rational": Signs((), "ℚ"),
    "natural": Signs((), "ℕ"),
    "divides": Signs((), "|∣"),
    "divisor": Signs((), "|∣"),
    "zero": Signs((), "0"),
}

# Numbers written as words ("dimension one", "greater than two").
NUMBER_WORDS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9,
    "ten": 10,
}  # fmt: skip

# A word of running text (hyphens and apostrophes inside it).
WORD = re.compile(r"[A-Za-z][A-Za-z'-]+")
