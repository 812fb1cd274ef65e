"""Training pairs for the formula encoder: equivalent rewrites from sympy, and near misses.

A source expression (a random expression, or a corpus formula sympy can parse) is rewritten into
mathematically equal forms: expanded, factored, simplified, trigonometric and logarithm identities
applied, variables renamed, operands commuted. Its hard negative is a structurally close formula
that is not equal (a constant changed, a sign flipped, a function swapped), checked numerically.
Every sympy call runs under a time limit: some expressions make ``factor`` or ``simplify`` crawl.
"""

from __future__ import annotations

import random
import re
import signal
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass

import sympy
from lark.exceptions import LarkError
from sympy.parsing.latex import parse_latex
from sympy.parsing.latex.errors import LaTeXParsingError
from tqdm import tqdm

from retriever.text.formula_normalizer import normalize_formula

_COMMAND = re.compile(r"\\[A-Za-z]+")
_ELEMENTARY = frozenset(
    {r"\frac", r"\sqrt", r"\sin", r"\cos", r"\tan", r"\log", r"\ln", r"\exp", r"\left", r"\right", r"\cdot"}
    | {r"\pi", r"\alpha", r"\beta", r"\theta", r"\lambda"}
)
_NON_ALGEBRAIC = re.compile(r"[,;:|<>\[\]]|\\[,;!]|=.*=")
MIN_TOKENS = 4  # shorter anchors (a lone x) carry nothing to learn
_SYMBOLS = sympy.symbols("x y z t a b n k u v")
_RENAMES = sympy.symbols("x y z t s w a b c p q r u v alpha beta theta lambda")
_UNARY = (sympy.sin, sympy.cos, sympy.tan, sympy.exp, sympy.log, sympy.sqrt)
_SWAP = {sympy.sin: sympy.cos, sympy.cos: sympy.sin, sympy.tan: sympy.sin, sympy.exp: sympy.log, sympy.log: sympy.exp}


@dataclass(frozen=True, slots=True)
class EquivalencePair:
    """Two spellings of one formula, and a close formula that differs (``""`` when none was found)."""

    anchor: str
    positive: str
    negative: str
    kind: str  # the rewrite: expand, factor, rename, commute, ... or co-occurrence


class _TimeoutError(Exception):
    pass


# What sympy may raise on a formula it cannot read, rewrite or evaluate: such a formula is skipped. Anything else
# (a bug, memory running out) is raised: catching every exception would swallow a bug along with the rest.
_SYMPY_FAILURES = (
    _TimeoutError,
    ArithmeticError,
    AttributeError,
    IndexError,
    KeyError,
    NotImplementedError,
    RecursionError,
    TypeError,
    ValueError,
    sympy.SympifyError,
    sympy.PolynomialError,
    LaTeXParsingError,
    LarkError,
)


@contextmanager
def _time_limit(seconds: float) -> Iterator[None]:
    def _raise(signum: int, frame: object) -> None:
        raise _TimeoutError

    previous = signal.signal(signal.SIGALRM, _raise)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _limited(function: Callable[[], sympy.Expr | None], seconds: float = 0.5) -> sympy.Expr | None:
    try:
        with _time_limit(seconds):
            return function()
    except _SYMPY_FAILURES:
        return None


def random_expression(rng: random.Random, depth: int = 3) -> sympy.Expr:
    """A random expression over a few symbols: sums, products, powers, quotients and functions."""
    if depth == 0 or rng.random() < 0.2:
        return rng.choice(_SYMBOLS[:6]) if rng.random() < 0.75 else sympy.Integer(rng.randint(1, 9))
    choice = rng.random()
    left = random_expression(rng, depth - 1)
    if choice < 0.3:
        return left + random_expression(rng, depth - 1)
    if choice < 0.5:
        return left * random_expression(rng, depth - 1)
    if choice < 0.65:
        return left ** rng.randint(2, 4)
    if choice < 0.8:
        return left / random_expression(rng, depth - 1)
    return rng.choice(_UNARY)(left)


def looks_parseable(latex: str) -> bool:
    """A cheap filter before sympy's parser: only elementary commands, nothing sympy cannot hold."""
    commands = set(_COMMAND.findall(latex))
    return len(latex) <= 120 and commands <= _ELEMENTARY and not _NON_ALGEBRAIC.search(latex)


def parse_formula(latex: str) -> sympy.Expr | None:
    """A corpus formula as a sympy expression, or None when sympy cannot read it (most cannot)."""
    if not looks_parseable(latex):
        return None
    expression = _limited(lambda: parse_latex(latex, backend="lark"), 0.3)
    return expression if isinstance(expression, sympy.Expr) and expression.free_symbols else None


def rewrites(expression: sympy.Expr, rng: random.Random) -> list[tuple[str, sympy.Expr | str]]:
    """Equal forms of ``expression`` with the rewrite that made each (a str is already LaTeX)."""
    candidates: list[tuple[str, sympy.Expr | str | None]] = [
        ("expand", _limited(lambda: sympy.expand(expression))),
        ("factor", _limited(lambda: sympy.factor(expression))),
        ("simplify", _limited(lambda: sympy.simplify(expression), 1.0)),
        ("trigonometric", _limited(lambda: sympy.expand_trig(expression))),
        ("trigonometric", _limited(lambda: sympy.trigsimp(expression))),
        ("logarithm", _limited(lambda: sympy.expand_log(expression, force=True))),
        ("logarithm", _limited(lambda: sympy.logcombine(expression, force=True))),
        ("together", _limited(lambda: sympy.together(expression))),
        ("rename", _rename(expression, rng)),
        ("commute", _commuted(expression, rng)),
    ]
    return [(kind, form) for kind, form in candidates if form is not None]


def near_miss(expression: sympy.Expr, rng: random.Random) -> sympy.Expr | None:
    """A small structural change that makes a different function (checked at random points)."""
    for _ in range(4):
        changed = _perturb(expression, rng)
        if changed is not None and _numerically_different(expression, changed, rng):
            return changed
    return None


def latex(expression: sympy.Expr | str) -> str:
    """LaTeX of a rewrite (a commuted rewrite is LaTeX already: sympy would re-sort its operands)."""
    if isinstance(expression, str):
        return expression
    return sympy.latex(expression)


def pairs_from_expression(expression: sympy.Expr, rng: random.Random, origin: str = "") -> list[EquivalencePair]:
    """One pair per distinct rewrite of ``expression``, each with the same near miss."""
    anchor = _limited(lambda: latex(expression))
    if not anchor or len(anchor) > 300 or len(normalize_formula(anchor).tokens) < MIN_TOKENS:
        return []
    negative_expression = near_miss(expression, rng)
    negative = (_limited(lambda: latex(negative_expression)) if negative_expression is not None else "") or ""
    pairs = []
    seen = {anchor}
    for kind, form in rewrites(expression, rng):
        positive = _limited(lambda form=form: latex(form))
        if positive and positive not in seen and len(positive) <= 300:
            seen.add(positive)
            pairs.append(EquivalencePair(anchor, positive, negative, origin + kind))
    return pairs


def generate_pairs(
    count: int, seed: int, corpus_formulas: Sequence[str] = (), workers: int = 1, show_progress: bool = False
) -> list[EquivalencePair]:
    """About ``count`` rewrite pairs: corpus formulas sympy can parse first, random expressions after."""
    chunks = [(seed * 1000 + i, list(corpus_formulas[i::64]), count // 64 + 1) for i in range(64)]
    pairs: list[EquivalencePair] = []
    with tqdm(total=count, desc="formula rewrites", unit="pair", disable=not show_progress) as progress:
        if workers > 1:
            with ProcessPoolExecutor(workers) as pool:
                for chunk in pool.map(_generate_chunk, chunks):
                    pairs.extend(chunk)
                    progress.update(len(chunk))
        else:
            for args in chunks:
                chunk = _generate_chunk(args)
                pairs.extend(chunk)
                progress.update(len(chunk))
    return pairs[:count]


def _generate_chunk(args: tuple[int, list[str], int]) -> list[EquivalencePair]:
    seed, formulas, wanted = args
    rng = random.Random(seed)
    pairs: list[EquivalencePair] = []
    rng.shuffle(formulas)
    for formula in formulas[: wanted * 3]:  # most corpus formulas do not parse; bound the attempts
        if len(pairs) >= wanted // 3:  # a third at most from the corpus: it is mostly one style
            break
        expression = parse_formula(formula)
        if expression is not None:
            pairs.extend(_one_per_anchor(pairs_from_expression(expression, rng, "corpus "), rng))
    attempts = 0
    while len(pairs) < wanted and attempts < wanted * 20:
        attempts += 1
        pairs.extend(_one_per_anchor(pairs_from_expression(random_expression(rng), rng), rng, keep=2))
    return pairs


def _one_per_anchor(pairs: list[EquivalencePair], rng: random.Random, keep: int = 1) -> list[EquivalencePair]:
    """A few rewrites of each anchor, so that a batch rarely holds two positives of one anchor.

    Renaming and commuting always succeed; they are kept less often so the algebraic rewrites
    (expand, factor, identities) make up most of the pairs.
    """
    rng.shuffle(pairs)
    pairs.sort(key=lambda pair: pair.kind.endswith(("rename", "commute")) and rng.random() < 0.7)
    return pairs[:keep]


def _rename(expression: sympy.Expr, rng: random.Random) -> sympy.Expr | None:
    symbols = sorted(expression.free_symbols, key=str)
    if not symbols:
        return None
    fresh = [s for s in _RENAMES if s not in expression.free_symbols]
    rng.shuffle(fresh)
    mapping = dict(zip(symbols, fresh, strict=False))
    return _limited(lambda: expression.xreplace(mapping))


def _commuted(expression: sympy.Expr, rng: random.Random) -> str | None:
    """The top-level sum or product with its operands in another order (sympy would re-sort them)."""
    if not isinstance(expression, sympy.Add | sympy.Mul) or len(expression.args) < 2:
        return None
    args = list(expression.args)
    rng.shuffle(args)
    if args == list(expression.args):
        args.reverse()
    parts = [sympy.latex(arg) for arg in args]
    if isinstance(expression, sympy.Add):
        text = parts[0]
        for part in parts[1:]:
            text += part if part.startswith("-") else " + " + part
        return text
    return " ".join(
        f"\\left({part}\\right)" if isinstance(arg, sympy.Add) else part for part, arg in zip(parts, args, strict=True)
    )


def _perturb(expression: sympy.Expr, rng: random.Random) -> sympy.Expr | None:
    atoms = list(expression.atoms(sympy.Integer))
    functions = [f for f in expression.atoms(sympy.Function) if type(f) in _SWAP]
    symbols = sorted(expression.free_symbols, key=str)
    choice = rng.random()
    if choice < 0.35 and atoms:
        old = rng.choice(atoms)
        return _limited(lambda: expression.xreplace({old: old + rng.choice([-1, 1, 2])}))
    if choice < 0.6 and functions:
        old = rng.choice(functions)
        return _limited(lambda: expression.xreplace({old: _SWAP[type(old)](*old.args)}))
    if choice < 0.8 and symbols:
        old = rng.choice(symbols)
        return _limited(lambda: expression.xreplace({old: old + 1}))
    if symbols and len(symbols) > 1:
        first, second = rng.sample(symbols, 2)
        return _limited(lambda: expression.xreplace({first: second}))
    return _limited(lambda: -expression)


def _numerically_equal(first: sympy.Expr, second: sympy.Expr, rng: random.Random) -> bool:
    """The two agree at three random points, at least one of which could be evaluated: a pair no point
    can evaluate is not called equal."""
    return _compared_at_points(first, second, rng) is True


def _numerically_different(first: sympy.Expr, second: sympy.Expr, rng: random.Random) -> bool:
    """The two disagree at a random point: a pair no point could evaluate is neither equal nor different."""
    return _compared_at_points(first, second, rng) is False


def _compared_at_points(first: sympy.Expr, second: sympy.Expr, rng: random.Random) -> bool | None:
    """True where the two agree at three random points, False where they disagree at one, None where no point
    could be evaluated."""
    symbols = sorted(first.free_symbols | second.free_symbols, key=str)
    evaluated = 0
    for _ in range(3):
        point = {symbol: sympy.Float(rng.uniform(0.3, 2.5)) for symbol in symbols}
        try:
            with _time_limit(0.5):
                a = complex(first.evalf(subs=point))
                b = complex(second.evalf(subs=point))
                differ = abs(a - b) > 1e-6 * max(1.0, abs(a))  # (abs of a huge complex overflows)
        except _SYMPY_FAILURES:
            continue
        evaluated += 1
        if differ:
            return False
    return True if evaluated else None
