"""Formula normalization and tokenization, after MaRF's appendix.

A formula is tokenized with LaTeX commands kept whole, equivalent spellings are unified
(``\\dfrac`` and ``\\tfrac`` are ``\\frac``, ``\\le`` is ``\\leq``, ``\\operatorname{Spec}`` and
``\\mathrm{Spec}`` are one token ``\\Spec``), sizing and spacing commands are dropped, omitted
braces are completed (``\\frac12`` is ``\\frac{1}{2}``, ``x^ab`` is ``x^{a}b``) and numbers are
written position-aware (``30`` is ``3 10e1``), so that two spellings of one formula give one
token sequence. The parse also yields leaf-to-root paths (``x`` under the denominator of a
fraction is ``x<\\frac.2``), the structural terms of the lexical formula channel.

Malformed LaTeX (unbalanced braces, a command missing its argument) never raises: the result
falls back to the raw tokens and says so in ``malformed``, for the caller to count.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from functools import lru_cache

_RAW_TOKEN = re.compile(r"\\[A-Za-z]+\*?|\\.|\d+(?:\.\d+)?|[A-Za-z]|\S")

# Dropped: sizing, spacing, alignment and style commands that do not change the mathematics.
_DROPPED = frozenset(
    {
        r"\left",
        r"\right",
        r"\middle",
        r"\big",
        r"\Big",
        r"\bigg",
        r"\Bigg",
        r"\bigl",
        r"\bigr",
        r"\Bigl",
        r"\Bigr",
        r"\biggl",
        r"\biggr",
        r"\Biggl",
        r"\Biggr",
        r"\,",
        r"\;",
        r"\:",
        r"\!",
        r"\quad",
        r"\qquad",
        r"\enspace",
        r"\thinspace",
        r"\medspace",
        r"\thickspace",
        r"\negthinspace",
        r"\displaystyle",
        r"\textstyle",
        r"\scriptstyle",
        r"\scriptscriptstyle",
        r"\limits",
        r"\nolimits",
        r"\nonumber",
        r"\notag",
        r"\\",
        "&",
        "~",
        r"\hfill",
        r"\allowbreak",
        r"\relax",
        "\\ ",
    }
)
# Dropped together with their argument.
_DROPPED_WITH_ARGUMENT = frozenset(
    {r"\label", r"\tag", r"\hspace", r"\vspace", r"\phantom", r"\hphantom", r"\vphantom"}
)

_SYNONYMS = {
    r"\dfrac": r"\frac", r"\tfrac": r"\frac", r"\cfrac": r"\frac",
    r"\dbinom": r"\binom", r"\tbinom": r"\binom",
    r"\le": r"\leq", r"\leqslant": r"\leq", r"\ge": r"\geq", r"\geqslant": r"\geq", r"\ne": r"\neq",
    r"\to": r"\rightarrow", r"\gets": r"\leftarrow", r"\implies": r"\Rightarrow", r"\iff": r"\Leftrightarrow",
    r"\lbrace": r"\{", r"\rbrace": r"\}", r"\lbrack": "[", r"\rbrack": "]",
    r"\vert": "|", r"\lvert": "|", r"\rvert": "|", r"\mid": "|",
    r"\Vert": r"\|", r"\lVert": r"\|", r"\rVert": r"\|",
    r"\bar": r"\overline", r"\hat": r"\widehat", r"\tilde": r"\widetilde",
    r"\varepsilon": r"\epsilon", r"\varphi": r"\phi", r"\vartheta": r"\theta", r"\varrho": r"\rho",
    r"\dots": r"\ldots", r"\cdots": r"\ldots", r"\dotsc": r"\ldots", r"\dotsb": r"\ldots", r"\dotsm": r"\ldots",
    r"\ast": "*", r"\colon": ":", r"\lnot": r"\neg", r"\land": r"\wedge", r"\lor": r"\vee",
    r"\bm": r"\boldsymbol", r"\mathbold": r"\boldsymbol", r"\Bbb": r"\mathbb",
    r"\rm": r"\mathrm", r"\textrm": r"\mathrm", r"\text": r"\mathrm", r"\textup": r"\mathrm",
    r"\textnormal": r"\mathrm", r"\mbox": r"\mathrm", r"\mathop": r"\mathrm", r"\operatorname": r"\mathrm",
    r"\operatorname*": r"\mathrm", r"\textit": r"\mathit", r"\textbf": r"\mathbf", r"\cal": r"\mathcal",
    r"\infin": r"\infty", r"\emptyset": r"\varnothing", r"\smallsetminus": r"\setminus",
}  # fmt: skip

# Commands and their number of required arguments; an argument given without braces is one token.
_ARITY = {
    r"\frac": 2, r"\binom": 2, r"\sqrt": 1, r"\overline": 1, r"\underline": 1, r"\widehat": 1,
    r"\widetilde": 1, r"\vec": 1, r"\dot": 1, r"\ddot": 1, r"\check": 1, r"\breve": 1,
    r"\mathbb": 1, r"\mathcal": 1, r"\mathfrak": 1, r"\mathscr": 1, r"\mathbf": 1, r"\mathsf": 1,
    r"\mathit": 1, r"\mathtt": 1, r"\boldsymbol": 1, r"\mathrm": 1, r"\overrightarrow": 1,
    r"\underbrace": 1, r"\overbrace": 1, r"\stackrel": 2, r"\overset": 2, r"\underset": 2,
    r"\pmod": 1, r"\bmod": 0, "^": 1, "_": 1,
}  # fmt: skip
_WORD = re.compile(r"[A-Za-z]{2,}")


@dataclass(frozen=True, slots=True)
class NormalizedFormula:
    """The normalized token sequence of a formula, its leaf-to-root paths, and whether it parsed."""

    tokens: tuple[str, ...]
    paths: tuple[str, ...]
    malformed: bool

    def terms(self) -> list[str]:
        """What the lexical formula channel indexes: tokens, token bigrams and paths (braces left out)."""
        symbols = [token for token in self.tokens if token not in "{}"]
        bigrams = [f"{a} {b}" for a, b in itertools.pairwise(symbols)]
        return symbols + bigrams + list(self.paths)


class _MalformedError(ValueError):
    pass


@dataclass(slots=True)
class _Node:
    """A command or script with its (always braced) arguments, or a plain token (no arguments)."""

    head: str
    arguments: list[list[_Node]]
    optional: list[_Node] | None = None


def raw_tokens(latex: str) -> list[str]:
    """The formula's tokens before normalization: commands whole, single letters, numbers, symbols."""
    return _RAW_TOKEN.findall(latex)


@lru_cache(maxsize=65_536)
def normalize_formula(latex: str) -> NormalizedFormula:
    """Normalize one formula (see the module docstring); never raises."""
    tokens = raw_tokens(latex)
    unified = _unify(tokens)
    try:
        nodes, _ = _parse_sequence(unified, 0, closing=None)
    except (_MalformedError, RecursionError):
        return NormalizedFormula(tuple(tokens), (), malformed=True)
    out: list[str] = []
    paths: list[str] = []
    _serialize(nodes, out, paths, ancestors=())
    return NormalizedFormula(tuple(out), tuple(paths), malformed=False)


def formula_terms(latex: str) -> list[str]:
    return normalize_formula(latex).terms()


def encode_number(number: str) -> list[str]:
    """Position-aware digits: ``30`` is ``3 10e1``, ``305`` is ``3 10e2 5``, ``0.5`` is ``5 10e-1``."""
    whole, _, fraction = number.partition(".")
    whole = whole.lstrip("0")
    digits = [(digit, len(whole) - 1 - i) for i, digit in enumerate(whole)]
    digits += [(digit, -(i + 1)) for i, digit in enumerate(fraction)]
    out: list[str] = []
    for digit, power in digits:
        if digit == "0":
            continue
        out.append(digit)
        if power:
            out.append(f"10e{power}")
    return out or ["0"]


# --------------------------------------------------------------------------- internals
def _unify(tokens: list[str]) -> list[str]:
    """Synonyms replaced, dropped commands removed (with their argument where they take one)."""
    out: list[str] = []
    i = 0
    while i < len(tokens):
        token = tokens[i]
        if token in _DROPPED_WITH_ARGUMENT:
            i = _skip_argument(tokens, i + 1)
            continue
        if token in (r"\left", r"\right", r"\middle") and i + 1 < len(tokens) and tokens[i + 1] == ".":
            i += 2  # \left. is an invisible delimiter
            continue
        if token not in _DROPPED:
            out.append(_SYNONYMS.get(token, token))
        i += 1
    return out


def _skip_argument(tokens: list[str], i: int) -> int:
    if i < len(tokens) and tokens[i] == "{":
        depth = 0
        while i < len(tokens):
            depth += {"{": 1, "}": -1}.get(tokens[i], 0)
            i += 1
            if depth == 0:
                return i
        return i
    return i + 1


def _parse_sequence(tokens: list[str], i: int, closing: str | None) -> tuple[list[_Node], int]:
    nodes: list[_Node] = []
    while i < len(tokens):
        token = tokens[i]
        if token == "}":
            if closing == "}":
                return nodes, i + 1
            raise _MalformedError("unbalanced closing brace")
        if closing == "]" and token == "]":
            return nodes, i + 1
        if token == "{":
            group, i = _parse_sequence(tokens, i + 1, closing="}")
            nodes.extend(group)  # a bare group only groups: its braces carry no meaning of their own
            continue
        node, i = _parse_atom(tokens, i)
        if node.head == r"\mathrm":
            nodes.extend(_roman(node))
        else:
            nodes.append(node)
    if closing is not None:
        raise _MalformedError(f"missing {closing}")
    return nodes, i


def _parse_atom(tokens: list[str], i: int) -> tuple[_Node, int]:
    token = tokens[i]
    i += 1
    arity = _ARITY.get(token, 0)
    optional = None
    if token == r"\sqrt" and i < len(tokens) and tokens[i] == "[":
        optional, i = _parse_sequence(tokens, i + 1, closing="]")
    if token == r"\mathrm" and i < len(tokens) and tokens[i] != "{":
        # \rm and \mathop{\rm Spec} act on the letters that follow: take the next word
        word: list[_Node] = []
        while i < len(tokens) and re.fullmatch(r"[A-Za-z]", tokens[i]):
            word.append(_Node(tokens[i], []))
            i += 1
        return _Node(token, [word]), i
    arguments = []
    for _ in range(arity):
        argument, i = _parse_argument(tokens, i)
        arguments.append(argument)
    return _Node(token, arguments, optional), i


def _parse_argument(tokens: list[str], i: int) -> tuple[list[_Node], int]:
    if i >= len(tokens):
        raise _MalformedError("a command is missing its argument")
    token = tokens[i]
    if token == "{":
        return _parse_sequence(tokens, i + 1, closing="}")
    if token == "}":
        raise _MalformedError("a command is missing its argument")
    if token[0].isdigit() and len(token) > 1:
        # TeX reads one character as an unbraced argument: \frac12 is \frac{1}{2}
        tokens[i : i + 1] = [token[0], token[1:]]
    node, i = _parse_atom(tokens, i)
    return [node], i


def _roman(node: _Node) -> list[_Node]:
    """``\\mathrm{Spec}`` and ``\\operatorname{Spec}`` are the command ``\\Spec``; ``\\mathrm{d}`` is ``d``."""
    argument = node.arguments[0] if node.arguments else []
    letters = "".join(child.head for child in argument if not child.arguments)
    if len(argument) > 1 and _WORD.fullmatch(letters):
        return [_Node("\\" + letters, [])]
    return argument


def _serialize(nodes: list[_Node], out: list[str], paths: list[str], ancestors: tuple[str, ...]) -> None:
    for node in nodes:
        if node.head[0].isdigit():
            for digit in encode_number(node.head):
                out.append(digit)
            _add_path(node.head, ancestors, paths)
            continue
        out.append(node.head)
        if not node.arguments and node.optional is None:
            _add_path(node.head, ancestors, paths)
            continue
        if node.optional is not None:
            out.append("[")
            _serialize(node.optional, out, paths, (*ancestors, f"{node.head}.0"))
            out.append("]")
        for index, argument in enumerate(node.arguments, start=1):
            out.append("{")
            _serialize(argument, out, paths, (*ancestors, f"{node.head}.{index}"))
            out.append("}")


def _add_path(leaf: str, ancestors: tuple[str, ...], paths: list[str]) -> None:
    """Leaf-to-root paths of one and two steps (deeper paths are too specific to match)."""
    if ancestors:
        paths.append(f"{leaf}<{ancestors[-1]}")
        if len(ancestors) > 1:
            paths.append(f"{leaf}<{ancestors[-1]}<{ancestors[-2]}")
