"""A statement read into claims: what each of its sentences assumes and what it concludes.

The hypotheses are what "Let ... be", "If ..., then", "For ...," and the subject of "A bounded entire function
is ..." state; the conclusion is the rest. "if and only if" and definitions read both ways; "In particular",
"hence", "so" start a further claim under the same hypotheses. Sentences opening with "Let", "Suppose", ...
are the hypotheses of every claim after them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from rag_app.answering.claims.claim_terms import Terms, split_math, terms_of
from rag_app.answering.claims.vocabulary import EQUIVALENCE_PHRASES, SETUP_SENTENCE

# The verbs that end a statement's subject ("A bounded entire function | is constant").
_VERB = re.compile(
    r"\b(?:is|are|has|have|satisfies|satisfy|admits|admit|converges|converge|diverges|diverge|extends|extend|"
    r"lifts|factors|factor|maps|attains|attain|agree|agrees|equals|contains|contain|divides|forms|form|"
    r"induce|induces|generate|generates|lies|lie|holds|exists|exist|occur|occurs|can|must|splits|coincide|"
    r"coincides|tends|commute|commutes|becomes|take|takes)\b"
)


_IF_THEN = re.compile(r"^(?:if|when|whenever|provided(?: that)?)\s+(.+?)(?:,\s*then\s+|\s+then\s+)(.+)$", re.I | re.S)

_IF_COMMA = re.compile(r"^(?:if|when|whenever|provided(?: that)?)\s+(.+),\s+(.+)$", re.I | re.S)

_SCOPE = re.compile(r"^(?:for|on|in|over|under|given)\s+(.+?),\s+(.+)$", re.I | re.S)

_IFF = re.compile(r"\s(?:" + "|".join(EQUIVALENCE_PHRASES) + r")\s", re.I)

_THERE_IS = re.compile(r"^there\s+(?:is|are|exists?)\b", re.I)

_FURTHER = re.compile(
    r"^(?:then|moreover|furthermore|in particular|hence|thus|so|consequently|conversely|equivalently|indeed|"
    r"that is|i\.e\.|also)\b,?\s*",
    re.I,
)

_CLAUSE_BREAK = re.compile(
    r"(?<=[.;:])\s+|;\s*|\.\s*$|,\s+(?:so|hence|thus|in particular)\s+"
    r"|,\s+and\s+(?=(?:every|each|any|all|an?|the)\s)",  # "Every metric space is normal, and every compact ..."
    re.I,
)

_ABBREVIATED = re.compile(r"\b(?:i\.e|e\.g|resp|cf|etc)\.", re.I)

# A list's items as LaTeX writes them, or as the index stores them (Markdown bullets, "(1)", "1.")
_ITEM = re.compile(r"\\item\b(?:\[[^\]]*\])?|\n\s*(?:[*\u2022-]|\(?\d{1,2}[.)])\s+")
_FOLLOWING_EQUIVALENT = re.compile(r"\bthe following are equivalent\b:?", re.IGNORECASE)
_ENVIRONMENT = re.compile(r"\\(?:begin|end)\{[a-z*]+\}|\\item\b|\\label\{[^}]*\}|\\ref\{[^}]*\}|~")

_COORDINATED_SUBJECT = re.compile(r"^\s*(?:the\s+)?([A-Za-z-]+s)\s+(?:and|or)\s+([A-Za-z-]+s)\s+(of\s.+)$", re.I | re.S)

_PARENTHESIZED = re.compile(r"\((?:[^()\uE000]|\uE000\d+\uE001)*\)")


@dataclass(frozen=True, slots=True)
class StatementClaim:
    """One claim of a statement: what it assumes and what it concludes (both ways, for an equivalence)."""

    hypotheses: Terms
    conclusion: Terms
    equivalence: bool
    # each direction of the equivalence is a claim of its own ("A iff B", "the following are equivalent"):
    # this one reads one way only, so asking it backwards is its converse
    directed: bool = False


def statement_claims(latex: str, definition: bool = False) -> list[StatementClaim]:
    """The claims of a statement (LaTeX), in order. Sentences opening with "Let", "Suppose", ... are the
    hypotheses of every claim after them; ``definition``: every claim reads both ways. "The following are
    equivalent" and its items read as an equivalence of the items, under the sentences before it."""
    if (equivalent := _FOLLOWING_EQUIVALENT.search(latex)) and _ITEM.search(latex[equivalent.end() :]):
        return _listed_equivalence(latex[: equivalent.start()], latex[equivalent.end() :])
    text, formulas = split_math(_ENVIRONMENT.sub(" ", latex))
    text = _ABBREVIATED.sub(lambda m: m.group(0).replace(".", ""), text)
    # "(faithfully) flat", "(resp. ...)", "(see ...)": a reading the claim may or may not carry, never a word
    # a question can rest on
    text = _PARENTHESIZED.sub(" ", text)
    context = Terms((), ())
    claims: list[StatementClaim] = []
    for clause in _clauses(text):
        if SETUP_SENTENCE.match(clause) and not re.search(r"\bthen\b", clause, re.I):
            context = context.merged(terms_of(clause, formulas))
            continue
        for claim in _claim(clause, formulas, definition):
            claims.append(replace(claim, hypotheses=context.merged(claim.hypotheses)))
    return claims


def _listed_equivalence(before: str, items: str) -> list[StatementClaim]:
    """ "Let f be ... The following are equivalent (1) f is finite, (2) f is affine and proper": each item
    implies each other, under the hypotheses of the sentences before the list."""
    context = terms_of(*split_math(_ENVIRONMENT.sub(" ", before)))
    text, formulas = split_math(_ENVIRONMENT.sub(" ", _ITEM.sub(" \ue002 ", items)))
    sides = [terms_of(_PARENTHESIZED.sub(" ", side).strip(" ,.;"), formulas) for side in text.split("\ue002")[1:]]
    sides = [side for side in sides if side.words or side.formulas]
    return [
        StatementClaim(context.merged(given), concluded, True, directed=True)
        for i, given in enumerate(sides)
        for j, concluded in enumerate(sides)
        if i != j
    ]


def _clauses(text: str) -> list[str]:
    """The sentences and clauses of a statement, with "then", "in particular", ... at their start removed."""
    clauses = []
    for raw in _CLAUSE_BREAK.split(text):
        clause = " ".join(raw.split()).strip(" ,.")
        while (stripped := _FURTHER.sub("", clause, count=1)) != clause:
            clause = stripped
        if clause:
            clauses.append(clause)
    return clauses


def _claim(clause: str, formulas: list[str], definition: bool) -> list[StatementClaim]:
    """One clause read as claims: hypotheses and conclusion (several for an equivalence)."""
    if match := _SCOPE.match(clause):
        scope = terms_of(match.group(1), formulas)
        return [
            StatementClaim(scope.merged(inner.hypotheses), inner.conclusion, inner.equivalence, inner.directed)
            for inner in _claim(match.group(2), formulas, definition)
        ]
    if match := _IF_THEN.match(clause) or _IF_COMMA.match(clause):
        given = terms_of(match.group(1), formulas)
        inner = [c for c in _claim(match.group(2), formulas, False) if c.equivalence]  # "then A iff B"
        if inner:
            return [StatementClaim(given.merged(c.hypotheses), c.conclusion, True, c.directed) for c in inner]
        concluded = terms_of(match.group(2), formulas)
        both_ways = [StatementClaim(concluded, given, True)] if definition else []
        return [StatementClaim(given, concluded, definition), *both_ways]
    if len(parts := _IFF.split(clause)) > 1:
        return _equivalence(parts, formulas)
    if _THERE_IS.match(clause):
        return [StatementClaim(Terms((), ()), terms_of(clause, formulas), definition)]
    subject, predicate = _subject_split(clause)
    if definition and (parts := re.split(r"\bif\b", predicate, maxsplit=1)) and len(parts) == 2:
        return _equivalence([subject + " " + parts[0], parts[1]], formulas)
    conclusion = terms_of(predicate, formulas)
    if not conclusion.words and not conclusion.formulas:
        return []
    return [StatementClaim(terms_of(one, formulas), conclusion, definition) for one in _subjects(subject)]


def _subjects(subject: str) -> list[str]:
    """A subject that names two kinds of object of one thing, each on its own: "Quotients and localizations of
    Noetherian rings" (are Noetherian) is "Quotients of Noetherian rings" and "localizations of Noetherian
    rings"; any other subject as it stands."""
    match = _COORDINATED_SUBJECT.match(subject)
    if match is None:
        return [subject]
    first, second, of_what = match.groups()
    return [f"{first} {of_what}", f"{second} {of_what}"]


def _equivalence(parts: list[str], formulas: list[str]) -> list[StatementClaim]:
    """An equivalence, "A is B iff C iff D": each side implies each other, under the subject A. Asked "is
    every A B?", the claim C ⟹ B needs C, a hypothesis the question must state."""
    subject, first = _subject_split(parts[0])
    sides = [terms_of(side, formulas) for side in [first, *parts[1:]]]
    held = terms_of(subject, formulas)
    return [
        StatementClaim(held.merged(given), concluded, True, directed=True)
        for i, given in enumerate(sides)
        for j, concluded in enumerate(sides)
        if i != j
    ]


def _subject_split(clause: str) -> tuple[str, str]:
    """``"A bounded entire function is constant"`` → (``"A bounded entire function"``, ``"is constant"``);
    no verb: all of it is the conclusion."""
    match = _VERB.search(clause)
    return (clause[: match.start()], clause[match.start() :]) if match else ("", clause)
