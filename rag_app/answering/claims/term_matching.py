"""Whether a question's terms are what a statement says: its words (stemmed), or a sign, a number or an
operator in its formulas ("isomorphic" as ≅, "pi" as π), read the same way by the verdict and the refutation."""

from __future__ import annotations

import re

from rag_app.answering.claims.claim_terms import Terms, Word, is_generic, stem_of
from rag_app.answering.claims.vocabulary import SYMBOL_WORDS

_GREEK_LETTERS = {
    "alpha": "α", "beta": "β", "gamma": "γ", "delta": "δ", "epsilon": "ε", "zeta": "ζ", "theta": "θ",
    "lambda": "λ", "mu": "μ", "nu": "ν", "pi": "π", "rho": "ρ", "sigma": "σ", "tau": "τ", "phi": "φϕ",
    "chi": "χ", "omega": "ω",
}  # fmt: skip

_PLAIN_LETTERS = {"ℝ": "R", "ℂ": "C", "ℤ": "Z", "ℚ": "Q", "ℕ": "N"}

# Nouns a question may add without asking anything more: "the set of primes", "the number of zeros".
_FILLER = frozenset(stem_of(word) for word in ("set", "number", "element", "value", "collection", "itself"))


# Words a statement may write as a sign in its formulas (rendered as Unicode): the lexicon's, by stem.
_WORD_SIGNS = {stem_of(word): signs.unicode for word, signs in SYMBOL_WORDS.items() if signs.unicode}


def unmatched_terms(asked: Terms, stems: frozenset[str], formulas: str) -> tuple[str, ...]:
    """The question's words and formulas that the statement never uses."""
    missing = [w.surface for w in asked.words if w.stem not in stems and not written_otherwise(w, formulas)]
    missing += [f for f in asked.formulas if f not in formulas and not _named_plainly(f, formulas)]
    return tuple(dict.fromkeys(missing))


def _named_plainly(formula: str, formulas: str) -> bool:
    """``R`` typed alone is ℝ or a ring named R: either is what the statement says when it writes R."""
    plain = _PLAIN_LETTERS.get(formula)
    return plain is not None and re.search(rf"(?<![A-Za-z]){plain}(?![a-z])", formulas) is not None


def written_otherwise(word: Word, formulas: str) -> bool:
    """Whether the statement says the word another way: a number or a sign in its formulas (``isomorphic``
    as ``≅``, ``pi`` as ``π``), or the word only names the kind of object ("function" for ``f``)."""
    if word.stem in _FILLER or (is_generic(word.stem) and not word.quantified):
        return True  # ("over every field" against "over ℚ" generalizes: not said otherwise)
    if word.stem.isdigit():
        return word.stem in formulas
    signs = _WORD_SIGNS.get(word.stem, "") + _GREEK_LETTERS.get(word.surface.lower(), "")
    if any(sign in formulas for sign in signs):
        return True
    # an operator written in the formula ("mod", "log", "gcd", "dim", "Re")
    operator = re.compile(rf"(?<![a-z]){re.escape(word.surface.lower())}(?![a-z])")
    return len(word.surface) >= 2 and operator.search(formulas.lower()) is not None
