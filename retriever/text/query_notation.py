"""Mathematics typed in ASCII or in words, read as LaTeX: ``mu_n`` -> ``$\\mu_n$``.

People type questions the way they type e-mail: ``B mu_p not smooth in char p``, ``Chow ring of
Mbar_{0,5}``, ``H^1(X,O_X)``, ``Z/nZ``, ``a^(p-1) = 1 mod p``. The statements we index keep their
mathematics as LaTeX (``\\mu_p``, ``\\overline{M}_{0,5}``, ``\\mathbb{P}^n``), which the formula
channel matches token by token and the dense channel reads rendered as Unicode (``μ_p``). A query
typed in ASCII meets none of that: ``mu_p`` is one unknown word to BM25, the formula channel sees no
formula, and the embedder reads ``mu``. This module finds the math a query types without delimiters
and writes it as the LaTeX a paper would, inside ``$...$``, so every channel reads it as mathematics.

Only tokens that look like mathematics are touched: a token with ``_``, ``^``, a slash between
symbols, brackets after a letter, or a known notation word (``Mbar``, ``sqrt(2)``). Words stay words:
``lambda calculus`` and ``phi function`` are left alone, and a query that already holds ``$`` or a
backslash is taken as LaTeX the user typed and returned unchanged.
"""

from __future__ import annotations

import re

_GREEK_NAMES = (
    "alpha beta gamma delta epsilon varepsilon zeta eta theta vartheta iota kappa lambda mu nu xi pi rho sigma "
    "tau upsilon phi varphi chi psi omega Gamma Delta Theta Lambda Xi Pi Sigma Upsilon Phi Psi Omega"
)
GREEK = tuple(_GREEK_NAMES.split(" "))
_GREEK = "|".join(sorted(GREEK, key=len, reverse=True))

# Letters that, standing alone in typed mathematics, mean the number systems and spaces papers write in
# blackboard bold. R, C, P, A and F are also ordinary names (a ring R, a curve C, a matrix A), so they are
# read as blackboard only in the shapes that are nearly always the space: R^n, C^2, P^3, A^1, F_q.
_ALWAYS_BLACKBOARD = {"Z", "Q", "N"}
_BLACKBOARD_WITH_POWER = {"R", "C", "P", "A"}
_BLACKBOARD_WITH_INDEX = {"F"}
_POWER = re.compile(r"\^(?:\d+|[nmdkNr]|\{[^{}]*\})")

# "Mbar", "Xhat", "Gtilde": the accents typed as a suffix word ("What", "that", "chat" are words).
_ACCENT_SUFFIX = re.compile(r"\b(?:([A-Za-z])(bar|tilde)|([ABD-SU-VX-Zabd-su-vx-z])(hat))(?=[_^({\s,.;:]|$)")
_ACCENTS = {"bar": "\\overline", "hat": "\\widehat", "tilde": "\\widetilde"}

_WORD_OPERATORS = {
    "sqrt": "\\sqrt",
    "binom": "\\binom",
    "infty": "\\infty",
    "oo": "\\infty",
    "int": "\\int",
    "sum": "\\sum",
    "prod": "\\prod",
    "lim": "\\lim",
    "log": "\\log",
    "exp": "\\exp",
    "det": "\\det",
    "tr": "\\operatorname{tr}",
    "Spec": "\\operatorname{Spec}",
    "Hom": "\\operatorname{Hom}",
    "Ext": "\\operatorname{Ext}",
    "Tor": "\\operatorname{Tor}",
    "Gal": "\\operatorname{Gal}",
    "Pic": "\\operatorname{Pic}",
    "GL": "\\mathrm{GL}",
    "SL": "\\mathrm{SL}",
}
# the other operator words, in one pattern compiled once (this runs on every query)
_OPERATOR_WORD = re.compile(
    r"(?<![A-Za-z\\{])("
    + "|".join(sorted((w for w in _WORD_OPERATORS if w not in ("sqrt", "binom")), key=len, reverse=True))
    + r")(?=[_^(\s{]|$)"
)
_CALLIGRAPHIC = {"O": "\\mathcal{O}"}  # O_X, O_{X,x}: the structure sheaf

_SYMBOLS = (("<=>", "\\iff"), ("<=", "\\le"), (">=", "\\ge"), ("!=", "\\ne"), ("->", "\\to"), ("|->", "\\mapsto"))

# A math token: a run without spaces holding one of the signs of typed mathematics.
_TOKEN = re.compile(r"\S+")
_MATH_SIGN = re.compile(r"[_^]|[A-Za-z0-9)\]}]/[A-Za-z0-9(]|[A-Za-z]\[[^\]]*\]|\|\||^\(.*[_^].*\)$")
_NOTATION_WORD = re.compile(r"^(?:[A-Za-z](?:bar|tilde)|[ABD-SU-VX-Zabd-su-vx-z]hat|sqrt\(?.*|binom\(.*)$")
_EQUATION_SIGNS = re.compile(r"^(?:=|<|>|<=|>=|!=|->|\+|-|\*|~|x)$")
_OPERATOR_WORDS = {"int", "sum", "prod", "lim"}  # "int e^{-x^2} dx": the operator belongs to the formula
_JOINED = re.compile(r"[A-Za-z0-9()\[\]+\-*/^_{},]+")
_TRAILING = re.compile(r"[,.;:?!]+$")


def read_typed_notation(query: str) -> str:
    """The query with its ASCII-typed mathematics written as LaTeX inside ``$...$``.

    A query with ``$`` or a backslash is returned as it is: its author typed LaTeX.
    """
    if "$" in query or "\\" in query:
        return query
    tokens = _TOKEN.findall(query)
    if not tokens:
        return query
    math = [_is_math_token(token) for token in tokens]
    # A sign between two math tokens ("pi_1(S^1) = Z", "a^(p-1) = 1") belongs to the formula, as do the
    # plain letters and numbers it joins.
    for i, token in enumerate(tokens):
        if _EQUATION_SIGNS.match(token) and 0 < i < len(tokens) - 1 and (math[i - 1] or math[i + 1]):
            math[i] = True
            for j in (i - 1, i + 1):
                if _JOINED.fullmatch(tokens[j]) and len(tokens[j]) <= 12:
                    math[j] = True
    for i, token in enumerate(tokens[:-1]):
        if token in _OPERATOR_WORDS and math[i + 1]:
            math[i] = True
    parts: list[str] = []
    run: list[str] = []
    for token, is_math in zip(tokens, math, strict=True):
        if is_math:
            run.append(token)
            continue
        if run:
            parts.append(_formula(" ".join(run)))
            run = []
        parts.append(token)
    if run:
        parts.append(_formula(" ".join(run)))
    return " ".join(parts)


def _is_math_token(token: str) -> bool:
    core = _TRAILING.sub("", token)
    if not core or core.startswith("http"):
        return False
    if any(c.isspace() for c in core):
        return False
    return bool(_MATH_SIGN.search(core) or _NOTATION_WORD.match(core) or core in ("Z", "Q"))


def _formula(run: str) -> str:
    """``$...$`` around a run of math tokens, with trailing punctuation and word suffixes kept outside."""
    trailing = _TRAILING.search(run)
    tail = trailing.group(0) if trailing else ""
    core = run[: len(run) - len(tail)] if tail else run
    suffix = ""
    hyphen_word = re.search(r"-([A-Za-z]{3,})$", core)  # alpha_p-torsors -> $\alpha_p$-torsors
    if hyphen_word and not re.search(r"\d-[A-Za-z]{3,}$", core[-len(hyphen_word.group(0)) - 1 :]):
        suffix = hyphen_word.group(0)
        core = core[: -len(suffix)]
    possessive = re.search(r"'s$", core)
    if possessive:
        suffix = "'s" + suffix
        core = core[:-2]
    return f"${to_latex(core)}${suffix}{tail}"


def to_latex(text: str) -> str:
    """One run of ASCII-typed mathematics written as LaTeX (no delimiters)."""
    out = text
    for ascii_sign, command in _SYMBOLS:
        out = out.replace(ascii_sign, f" {command} ")
    out = re.sub(r"(?<=\S) x (?=\S)", r" \\times ", out)  # "Z/m x Z/n"
    out = _ACCENT_SUFFIX.sub(lambda m: f"{_ACCENTS[m.group(2) or m.group(4)]}{{{m.group(1) or m.group(3)}}}", out)
    out = _braced_scripts(out)
    out = re.sub(rf"(?<![A-Za-z\\])({_GREEK})(?![A-Za-z])", r"\\\1", out)
    out = _functions(out)
    out = _blackboard(out)
    out = re.sub(r"(?<![A-Za-z\\])O(?=_)", lambda m: _CALLIGRAPHIC["O"], out)
    out = out.replace("||", "\\|")
    return " ".join(out.split())


def _braced_scripts(text: str) -> str:
    """``x^(p-1)`` -> ``x^{p-1}`` and ``F_(q)`` -> ``F_{q}``: parentheses after a script sign are its
    grouping, as people type it; ``mu_p^2`` stays as it is."""
    result: list[str] = []
    i = 0
    while i < len(text):
        char = text[i]
        if char in "^_" and i + 1 < len(text) and text[i + 1] == "(":
            depth, j = 0, i + 1
            while j < len(text):
                depth += {"(": 1, ")": -1}.get(text[j], 0)
                if depth == 0:
                    break
                j += 1
            if j < len(text):
                result.append(f"{char}{{{text[i + 2 : j]}}}")
                i = j + 1
                continue
        result.append(char)
        i += 1
    return "".join(result)


def _functions(text: str) -> str:
    """Operator words as commands: ``sqrt(-5)`` -> ``\\sqrt{-5}``, ``binom(n,k)`` -> ``\\binom{n}{k}``,
    ``Spec(R)`` -> ``\\operatorname{Spec}(R)``."""
    text = re.sub(r"(?<![A-Za-z\\])sqrt\(([^()]*)\)", r"\\sqrt{\1}", text)
    text = re.sub(r"(?<![A-Za-z\\])sqrt(\d+|[A-Za-z])(?![A-Za-z])", r"\\sqrt{\1}", text)
    text = re.sub(r"(?<![A-Za-z\\])binom\(([^(),]*),([^()]*)\)", r"\\binom{\1}{\2}", text)
    return _OPERATOR_WORD.sub(lambda m: _WORD_OPERATORS[m.group(1)], text)


def _blackboard(text: str) -> str:
    def replace(match: re.Match[str]) -> str:
        letter, after = match.group(1), text[match.end() :]
        if letter in _ALWAYS_BLACKBOARD:
            return f"\\mathbb{{{letter}}}"
        if letter in _BLACKBOARD_WITH_POWER and _POWER.match(after):
            return f"\\mathbb{{{letter}}}"
        if letter in _BLACKBOARD_WITH_INDEX and re.match(r"_(?:\d+|[pqlQ]|\{[^{}]*\})", after):
            return f"\\mathbb{{{letter}}}"
        return letter

    text = re.sub(r"(?<![A-Za-z\\])([a-z0-9])Z(?![A-Za-z])", r"\1 Z", text)  # "Z/nZ": n times Z
    return re.sub(r"(?<![A-Za-z\\{])([A-Z])(?![A-Za-z])", replace, text)
