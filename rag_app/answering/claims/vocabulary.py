"""The one vocabulary every reader of mathematical English and formulas here shares: the claims reading
(``claim_terms``, ``statement_claims``, ``refutation``, ``implied_conditions``, ``yes_no_questions``), the chooser's
features, the conversation's rewrite check and the written answer's check (``rag_app.answering.statement_check``).

One stopword list, one negation list, one formula comparer, and the word tables (signs, antonyms, spellings,
abbreviations, number words, object nouns), so that a word learned for one reader is learned for all. An entry is
general mathematical English (an antonym formed by a prefix, a spelling variant, a sign's name); one written to make
a single sentence of a question set pass has no place here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from retriever.text.unicode_math_text import UnicodeMathText

# Words that deny what follows ("is not solvable", "has no zeros", "a ring without zero divisors").
NEGATIONS = frozenset(
    "not no never cannot can't isn't aren't doesn't don't nor neither none nothing fails fail without".split()  # noqa: SIM905
)
# Words that ask whether a claim fails without denying anything themselves ("Is it false that ...", "Is there a
# counterexample to ..."): a question that uses one is read as negated, as one with a negation is.
FAILURE_WORDS = frozenset({"false", "counterexample", "counterexamples"})
_NEGATED = re.compile(
    r"\b(?:" + "|".join(sorted(map(re.escape, NEGATIONS | FAILURE_WORDS), key=len, reverse=True)) + r"|non[-\w]*)\b",
    re.IGNORECASE,
)


def negates(text: str) -> bool:
    """Whether ``text`` carries a negation (a word of :data:`NEGATIONS`, "non-", "false", "counterexample")."""
    return bool(_NEGATED.search(text))


# Words that carry no claim of their own: the scaffolding every phrasing of one claim may or may not use ("Is every
# X Y?", "Must an X be Y?", "Does an X always Y?"), articles, pronouns, auxiliaries, prepositions, connectives. Not
# here: negations (above), the number words and the words said as signs (below: "at most", "less than" are claims),
# the words of an answer's discourse and those that name a statement (below: "exactly one" is a claim). Quantifiers
# are, as a named part: the written answer's check keeps them (a sentence that says "every" where its source says
# "some" changes the claim).
UNIVERSAL_QUANTIFIERS = frozenset({"every", "any", "all", "each", "arbitrary"})  # the claims read them as generalizing
QUANTIFIERS = UNIVERSAL_QUANTIFIERS | {"some", "always", "exist", "exists", "existing"}
ARTICLES = frozenset({"a", "an", "the"})
STOPWORDS = frozenset(
    """
    is are was were be been being does do did can could must should will would may might shall has have had a an
    the of in on at to for from by with as and or if then than into onto over under about what which when
    whenever where who whom whose why how that this these those it its it's there here such also still every
    each any all some always necessarily true hold holds really indeed so thus hence therefore let given suppose
    assume assuming we our one ones arbitrary certain whether necessary need needs say says exist exists
    existing actually just case cases whole following ie eg resp cf but however moreover yet becomes become
    respect having either only again too possible possibly you your they them
    """.split()  # noqa: SIM905 (one word list, read as prose)
)
# The words of an answer's discourse ("namely", "it follows", "as is well known"): the written answer's check and the
# conversation's passes over them; the claims read them ("exactly one", "the same dimension" are claims).
DISCOURSE_WORDS = frozenset(
    """
    us their i me my he she his her same other another very yes namely precisely exactly called said state
    states stated follow denoted written note see fact known both particular particularly consequently implies
    imply implied since because so-called like iff specifically automatically directly direct fundamental
    consequence provided provides mention mentions mentioned show shows shown confirm confirms guaranteed
    guarantees express expressed expresses respectively well-known important crucial key basic e specified
    """.split()  # noqa: SIM905
)
# Words that name a statement rather than say it ("the theorem states", "by the lemma"): the written answer's check
# passes over them; the claims and the chooser read them (a question's "main theorem" is a statement's name).
STATEMENT_WORDS = frozenset(
    """statement statements theorem theorems lemma lemmas proposition propositions corollary corollaries definition
    definitions remark remarks example result results source sources property properties""".split()  # noqa: SIM905
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

# Antonym pairs (stems): the second member is the negative of the first.
ANTONYMS = {
    "diverg": "converg",
    "infinit": "finit",
    "unbound": "bound",
    "uncount": "countabl",
    "nontrivi": "trivial",
    "non-trivi": "trivial",
    "nonconst": "constant",
    "non-const": "constant",
    "nonplanar": "planar",
    "non-planar": "planar",
    "unsolv": "solvabl",
    "nonzero": "zero",
    "non-zero": "zero",
    "nonempti": "empti",
    "non-empti": "empti",
    "non-abelian": "abelian",
    "nonabelian": "abelian",
    "noncompact": "compact",
    "non-compact": "compact",
    "disconnect": "connect",
    "non-homeomorph": "homeomorph",
    "non-isomorph": "isomorph",
    "nonisomorph": "isomorph",
    "irreduc": "reduc",
    "nonneg": "neg",
    "non-neg": "neg",
    "non-singular": "singular",
    "nonsingular": "singular",
    "nondegener": "degener",
}
# The same thing named two ways (stems, after abbreviations are expanded): each maps to one name.
SAME_STEMS = {
    "colour": "color",
    "neighbour": "neighbor",
    "factoris": "factor",
    "factoriz": "factor",
    "centr": "center",
    "centre": "center",
    "root": "zero",
    "diagonalis": "diagonaliz",
    "normalis": "normaliz",
    "vertic": "vertex",
}
# Abbreviations people type, as the statements write them.
ABBREVIATIONS = {
    "PID": "principal ideal domain",
    "PIDs": "principal ideal domains",
    "UFD": "unique factorization domain",
    "UFDs": "unique factorization domains",
    "DVR": "discrete valuation ring",
    "RV": "random variable",
    "RVs": "random variables",
}


# ---------------------------------------------------------------- formulas: one comparer
_UNICODE = UnicodeMathText()
# Bold capitals are the number systems where research text writes them so (the Stacks project's $\\mathbf{Z}$).
_LETTER_VARIANTS = str.maketrans(
    {"ϕ": "φ", "ϵ": "ε", "ϑ": "θ", "ϱ": "ρ", "𝐑": "ℝ", "𝐂": "ℂ", "𝐙": "ℤ", "𝐐": "ℚ", "𝐍": "ℕ"}
)
_PMOD = re.compile(r"\\pmod\s*\{([^{}]*)\}|\\pmod\s*(\w)")
# Relation macros as their signs before rendering (pylatexenc drops some of them: ``\ne`` renders as nothing).
_RELATION_SIGNS = {
    "ne": "≠", "neq": "≠", "le": "≤", "leq": "≤", "ge": "≥", "geq": "≥", "nmid": "∤", "mid": "|", "equiv": "≡",
    "subseteq": "⊆", "subset": "⊂", "ll": "≪", "cong": "≅", "sim": "∼", "simeq": "≃", "in": "∈", "notin": "∉",
    "to": "→", "mapsto": "↦", "lt": "<", "gt": ">",
}  # fmt: skip
_RELATION_MACRO = re.compile(r"\\(" + "|".join(sorted(_RELATION_SIGNS, key=len, reverse=True)) + r")(?![A-Za-z])")
# What a formula's letters are, for a comparison up to renaming: one letter standing alone, not a command's name or
# the argument of \mathrm, \operatorname, \text (those are names: Spec, Hom) nor a number system's letter.
_NAMED = re.compile(r"\\(?:mathrm|operatorname|text|mathbb|mathbf)\s*\{[^{}]*\}|\\[A-Za-z]+")
_LETTER = re.compile(r"[A-Za-z]")


def formula_key(latex: str) -> str:
    """A formula as compared: rendered as Unicode, without spaces, braces or ``\\left``/``\\right``."""
    latex = _PMOD.sub(lambda m: f"(\\mathrm{{mod}}\\ {m.group(1) or m.group(2)})", latex)
    latex = latex.replace("\\bmod", "\\mathrm{mod}")
    latex = _RELATION_MACRO.sub(lambda m: _RELATION_SIGNS[m.group(1)], latex)
    rendered = _UNICODE.render(f"${latex}$")
    rendered = rendered.replace("\\", "")
    rendered = re.sub(r"[\s{}]|left|right", "", rendered).replace("−", "-").replace("∣", "|")
    return rendered.translate(_LETTER_VARIANTS)


def formula_shape(latex: str) -> str:
    """A formula as compared up to renaming its variables: each single letter named by the order it first appears in
    (``IM = M`` and ``J N=N`` have one shape, ``IM = N`` another), then compared as :func:`formula_key` compares."""
    names: dict[str, str] = {}
    parts = []
    last = 0
    for named in _NAMED.finditer(latex):
        parts.append(_renamed(latex[last : named.start()], names))
        parts.append(named.group(0))
        last = named.end()
    parts.append(_renamed(latex[last:], names))
    return formula_key("".join(parts))


def _renamed(text: str, names: dict[str, str]) -> str:
    return _LETTER.sub(lambda m: names.setdefault(m.group(0), f"\\alpha_{{{len(names)}}}"), text)


def same_formula(formula: str, other: str) -> bool:
    """``formula`` is ``other`` up to renaming, or a run of it as written (spaces, braces and sizes aside)."""
    return formula_shape(formula) == formula_shape(other) or formula_key(formula) in formula_key(other)
