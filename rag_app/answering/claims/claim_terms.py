"""The terms a yes/no verdict compares: words (stemmed), numbers and formulas of a question or a statement.

A question types its mathematics in ASCII (``a^(p-1)``, ``R^n``, ``|g| < |f|``); a statement keeps it as
LaTeX. Both are read the same way: the question's typed notation is written as LaTeX first
(:func:`retriever.text.query_notation.read_typed_notation`), then every formula of either is rendered as
Unicode and its spaces dropped (``$\\mathbb{R}^n$`` and ``R^n`` both become ``ℝ^n``), so one formula can be
looked for inside another. Words are lower-cased and stemmed (``converges``/``convergent`` → ``converg``);
a hyphenated word stays one term (``path-connected`` is not ``connected``).

Each word also carries its polarity: negative after "not", "no", "never", ... (``has no zeros``), or when
it is the negative of an antonym pair (``diverges`` against ``converges``, ``nonconstant`` against
``constant``), so that a question and a statement that say opposite things about one term can be told apart.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from rag_app.answering.claims.vocabulary import (
    ABBREVIATIONS,
    ANTONYMS,
    ARTICLES,
    GENERIC_NOUNS,
    NEGATIONS,
    NUMBER_WORDS,
    SAME_STEMS,
    STOPWORDS,
    UNIVERSAL_QUANTIFIERS,
    formula_key,
)
from retriever.text.math_tokenizer import english_stemmer
from retriever.text.query_notation import read_typed_notation, to_latex

# Formulas: $$...$$, $...$, \[...\], \(...\), and the display environments statements use.
_MATH = re.compile(
    r"\$\$(.+?)\$\$|\$(.+?)\$|\\\[(.+?)\\\]|\\\((.+?)\\\)"
    r"|\\begin\{(equation|align|gather|multline|eqnarray)\*?\}(.+?)\\end\{\5\*?\}",
    re.DOTALL,
)
_PLACEHOLDER = "\ue000{}\ue001"  # a formula's place in the text, so that splitting on "." or "," misses it
_LATEX_MARKUP = re.compile(r"\\(?:emph|textit|textbf|text|it|bf|em)\b|\{\\it\s|[{}]|\\[A-Za-z]+")
# A formula naming one object (M, R, x_1, 𝔭) says nothing a question must repeat.
_NAME_ONLY = re.compile(r"^[^\W\d_]{1,2}(?:_[^\W_]{1,2})?'?$")

_ABBREVIATION = re.compile(r"\b(" + "|".join(sorted(ABBREVIATIONS, key=len, reverse=True)) + r")\b")
# "a^(p-1) congruent to 1 mod p" typed in words: the congruence a statement writes with ≡
_TYPED_CONGRUENCE = re.compile(
    r"(?<![\w$])(\$[^$]+\$|[\w^()+\-!/]+) (?:is )?congruent to (\$[^$]+\$|[\w^()+\-/]+) mod(?:ulo)? (\$[^$]+\$|\w+)"
)
_OPERAND = r"(?:[A-Za-z0-9|][A-Za-z0-9_^/+|.\-]{0,14}(?:\([^()$]{0,20}\))?)+(?<![,.])"
_TYPED_RELATION = re.compile(rf"(?<![A-Za-z]){_OPERAND}\s*(?:<=|>=|!=|<|>|=|\+)\s*{_OPERAND}(?![A-Za-z])")
_TOKEN = re.compile("\ue000(\\d+)\ue001|[A-Za-z][A-Za-z'’]*(?:-[A-Za-z]+)*|\\d+|[,.;:()]")
_PUNCTUATION = frozenset(",.;:()")
_NUMBER_SYSTEMS = frozenset("ℝℂℤℚℕ")
_BLACKBOARD_LETTERS = {"R": "ℝ", "C": "ℂ", "Z": "ℤ", "Q": "ℚ", "N": "ℕ"}
_MEASURED_NUMBER = re.compile(
    r"\b(dimension|rank|degree|genus|codimension|height|length|order|characteristic|depth)\s+("
    + "|".join(NUMBER_WORDS)
    + r")\b",
    re.IGNORECASE,
)
# "nonflat", "non-split" (the pairs above keep the words whose stem changes); not "none", "nonetheless"
_NON_PREFIX = re.compile(r"^non-?(?=[a-z]{4})(?!etheless|sense)")
_TYPED_OVER = re.compile(r"\b[A-Z]-(?=(?:modules?|algebras?|schemes?|spaces?|linear|flat|maps?|morphisms?)\b)")
_COMPOUND = re.compile("\ue000(\\d+)\ue001-([A-Za-z]+)")
# Letters that, before a hyphen, make another object: a p-group, a q-expansion, an n-cycle.
_MEANINGFUL_PREFIXES = frozenset({"p", "q", "ℓ", "l", "n", "k", "m"})


@dataclass(frozen=True, slots=True)
class Word:
    """One word as compared: its stem, its polarity, and how the text wrote it."""

    stem: str
    negative: bool
    surface: str
    phrase: int = 0  # words of one phrase (no scaffolding or formula between them) share a number
    binds: bool = False  # the word after a formula that names an object ("$V$ vertices"): its type, not a claim
    quantified: bool = False  # in a phrase opened by "every", "any", "all": the question generalizes it
    of_link: bool = False  # "of" (and articles) between this word and the one before ("subgroup of order")


@dataclass(frozen=True, slots=True)
class Terms:
    """The comparable terms of one stretch of text: its words (scaffolding dropped) and its formulas,
    each formula rendered and without spaces."""

    words: tuple[Word, ...]
    formulas: tuple[str, ...]
    names: tuple[str, ...] = ()  # formulas that only name an object (M, R, x_1)

    @property
    def stems(self) -> frozenset[str]:
        return frozenset(word.stem for word in self.words)

    def merged(self, other: Terms) -> Terms:
        return Terms(self.words + other.words, self.formulas + other.formulas, self.names + other.names)


def split_math(latex: str) -> tuple[str, list[str]]:
    """The text with each formula replaced by a numbered placeholder, and the formulas (LaTeX) in order."""
    formulas: list[str] = []

    def keep(match: re.Match[str]) -> str:
        body = next(group for group in (*match.groups()[:4], match.group(6)) if group is not None)
        formulas.append(body)
        return _PLACEHOLDER.format(len(formulas) - 1)

    return _MATH.sub(keep, latex), formulas


def question_latex(question: str) -> str:
    """A question as LaTeX: abbreviations written out, typed notation inside ``$...$``, and the plain
    relations typed between them (``n >= 3``, ``|g| < |f|``) as formulas too."""
    expanded = _ABBREVIATION.sub(lambda m: ABBREVIATIONS[m.group(1)], question)
    latex = _TYPED_CONGRUENCE.sub(_congruence, read_typed_notation(expanded))
    parts = re.split(r"(\$[^$]*\$)", latex)
    return "".join(part if part.startswith("$") else _TYPED_RELATION.sub(_relation, part) for part in parts)


def _congruence(match: re.Match[str]) -> str:
    left, right, modulus = (to_latex(group.strip("$")) for group in match.groups())
    return f"${left} \\equiv {right} \\pmod{{{modulus}}}$"


def _relation(match: re.Match[str]) -> str:
    return f"${to_latex(match.group(0))}$"


def terms_of(text: str, formulas: list[str]) -> Terms:
    """The terms of ``text`` (placeholders standing for ``formulas``)."""
    text = _COMPOUND.sub(lambda m: _compound(m, formulas), text)
    text = _TYPED_OVER.sub("", text)  # "R-algebras" typed: the algebras, as "$R$-algebras" is read
    # "dimension one" is "dimension 1" ("one" alone is scaffolding: "every one of them")
    text = _MEASURED_NUMBER.sub(lambda m: f"{m.group(1)} {NUMBER_WORDS[m.group(2).lower()]}", text)
    text = _without_accents(_LATEX_MARKUP.sub(" ", text).replace("’", "'"))
    words: list[Word] = []
    keys: list[str] = []
    names: list[str] = []
    negate_next = 0
    phrase = 0
    after_name = False
    quantified = False
    of_link = False
    for match in _TOKEN.finditer(text):
        token = match.group(0)
        if match.group(1) is not None:  # a formula
            number = int(match.group(1))
            key = formula_key(formulas[number]) if number < len(formulas) else ""
            after_name = bool(key) and bool(_NAME_ONLY.match(key)) and key not in _NUMBER_SYSTEMS
            if key and not after_name:
                keys.append(key)
            elif key:
                names.append(key)
            phrase += 1
            continue
        if token in _PUNCTUATION:
            phrase += 1
            after_name = quantified = of_link = False
            continue
        lowered = token.lower()
        if lowered in NEGATIONS:
            negate_next = 3  # "not", "no": the next few words are denied ("is not solvable", "has no zeros")
            phrase += 1
            continue
        if token in _BLACKBOARD_LETTERS:  # "R", "Z" typed alone: the number systems
            keys.append(_BLACKBOARD_LETTERS[token])
            phrase += 1
            continue
        if lowered in STOPWORDS or (len(lowered) < 2 and not lowered.isdigit()):
            negate_next = max(0, negate_next - 1)
            phrase += 1
            after_name = False
            quantified = lowered in UNIVERSAL_QUANTIFIERS  # "every finite field": up to the next small word
            if lowered == "of":
                of_link = True
            elif lowered not in ARTICLES:
                of_link = False
            continue
        stem = stem_of(lowered)
        negative = negate_next > 0
        if stem in ANTONYMS:
            stem, negative = ANTONYMS[stem], not negative
        elif (plain := _NON_PREFIX.sub("", lowered)) != lowered:  # "nonflat", "non-split": not flat, not split
            stem, negative = stem_of(plain), not negative
        words.append(Word(stem, negative, token, phrase, after_name, quantified, of_link and bool(words)))
        negate_next = max(0, negate_next - 1)
        after_name = False
        of_link = False
    return Terms(tuple(words), tuple(keys), tuple(names))


def _without_accents(text: str) -> str:
    """``étale`` as ``etale``: a question typed in ASCII names what the statement writes with accents."""
    if text.isascii():
        return text
    return "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))


def _compound(match: re.Match[str], formulas: list[str]) -> str:
    """``$p$-group`` as the word ``p-group`` (a p-group is not any group); ``$R$-module`` as ``module`` (R
    only names the ring)."""
    number = int(match.group(1))
    key = formula_key(formulas[number]) if number < len(formulas) else ""
    if key in _MEANINGFUL_PREFIXES or key.isdigit():
        return f" {key}-{match.group(2)}"
    return f" {match.group(2)}"


def stem_of(word: str) -> str:
    """One word's stem; a hyphenated word stems its last part (``path-connected`` → ``path-connect``)."""
    head, _, last = word.rpartition("-")
    stem = english_stemmer().stemWord(last)
    stem = SAME_STEMS.get(stem, stem)
    return f"{head}-{stem}" if head else stem


def is_generic(stem: str) -> bool:
    return stem in _GENERIC_STEMS


_GENERIC_STEMS = frozenset(stem_of(noun) for noun in GENERIC_NOUNS)
