"""Whether a statement refutes a yes/no claim as asked: a counterexample, a warning, the claim's negation.

Research text states its warnings as examples and remarks ("An open immersion is in general not
quasi-compact", "There exists a ring R and a finite flat R-module M which is not projective", "The converse
is not true"). Such a statement refutes the claim "Is every open immersion quasi-compact?" when:

- it uses every word of the question (the same objects; a sign in its formulas counts, as for "Yes");
- it is written as a failure: an existence ("There exists ... which is not ..."), a generality denied
  ("in general not", "need not", "not necessarily", "it is not true that"), or an example or remark that
  denies the question's predicate;
- the question asserts what the statement denies: a word the question asks positively is negated in the
  statement (for an existence, any negation of it: "cannot be written as", "does not contain"), and the
  question itself carries no negation (negated questions are left to the comparison of claims).

An existence refutes a universal claim even under more hypotheses than the question states: one
counterexample is enough. The form says which lead-in fits: "counterexample" (an existence or an example)
or "opposite" (the claim's negation, in general). Pure reading of text, as the rest of this package.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rag_app.answering.claims.asked_question import AskedQuestion
from rag_app.answering.claims.claim_terms import Terms, Word, is_generic, split_math, stem_of, terms_of
from rag_app.answering.claims.statement_claims import StatementClaim, statement_claims
from rag_app.answering.claims.term_matching import unmatched_terms
from rag_app.answering.claims.vocabulary import SETUP_SENTENCE

_EXISTENCE = re.compile(r"\bthere (?:exists?|is|are)\b|\bthere exist\b", re.IGNORECASE)
_GENERALITY_DENIED = re.compile(
    r"\b(?:in general|need(?:s)? not|not necessarily|not always|not true|does not hold|do not hold|is false|"
    r"counter ?examples?|not the case|cannot|can ?not|not even|fails?)\b",
    re.IGNORECASE,
)
_CLAIM_DENIED = re.compile(r"\bit is (?:not true|not the case|false) that\b", re.IGNORECASE)
_COUNTEREXAMPLE = re.compile(r"\bcounter ?examples?\b", re.IGNORECASE)
_CONVERSE_FAILS = re.compile(r"\bthe converse (?:is not true|is false|does not hold|fails)\b", re.IGNORECASE)
# Adverbs a warning words its denial with ("is automatically projective", "in general not"): no qualifier.
_HEDGES = frozenset(stem_of(word) for word in ("automatically", "general", "generally", "necessarily", "always"))
_NEGATED_CLAUSE = re.compile(r"\b(?:not|cannot|never)\b([^,;.]*)", re.IGNORECASE)
_LIST_ITEM = re.compile(r"\\item\b(?:\[[^\]]*\])?|\n\s*[*\u2022]\s+")
_MEANING_MODIFIERS = frozenset({"quasi", "pseudo", "semi", "weak", "pre", "sub", "super", "almost", "ind", "pro"})
# "-ly" words that only narrow the object they stand before ("finitely generated" is handled as a phrase)
_NARROWING_ADVERBS = frozenset({"only", "many", "countably", "finitely"})
_ARGUED_KINDS = frozenset({"example", "remark"})
# What a paper proves, and its examples and remarks; not an answer post (it answers its own thread's question,
# "No, HK need not be normal" under another claim) nor a conjecture or an exercise.
_READ_KINDS = frozenset(
    {"theorem", "lemma", "proposition", "corollary", "definition", "claim", "fact", "example", "remark"}
)


@dataclass(frozen=True, slots=True)
class Refutation:
    """How a statement refutes a claim: ``form`` "counterexample" or "opposite"; ``denied``: the question's
    words it denies, as the statement writes them."""

    form: str
    denied: tuple[str, ...]


def refutes(question: str | AskedQuestion, statement_latex: str, kind: str) -> Refutation | None:
    """The refutation of the yes/no ``question``'s claim by a statement of ``kind``, or None (see the module)."""
    question = AskedQuestion.read(question)
    if not question.yes_no or question.negated or kind not in _READ_KINDS:
        return None
    asked = question.claim
    if not asked.words:
        return None
    converse_fails = bool(_CONVERSE_FAILS.search(" ".join(statement_latex.split())))
    # A list of warnings ("Strange flat modules. * There exists ... * There exists a closed immersion which is
    # flat but not open.") is read item by item: each item is a warning of its own.
    head, *items = _LIST_ITEM.split(statement_latex)
    for part in (head, *items):
        # The warning is the part's first sentence ("An open immersion is in general not quasi-compact."), after
        # the sentences that set it up ("Let Y be an infinite set ... . Then Y is Kolmogorov but not
        # quasi-sober."); what follows it ("The standard example is ...", a proof sketch) neither refutes nor
        # qualifies.
        refutation = _refutes_by(asked, leading_claim(part), kind, converse_fails, statement_latex)
        if refutation is not None:
            return refutation
    return None


def _refutes_by(asked: Terms, sentence: str, kind: str, converse_fails: bool, whole: str) -> Refutation | None:
    """The refutation of the claim ``asked`` by one ``sentence`` of a statement (``whole``) of ``kind``."""
    claims = statement_claims(sentence, kind == "definition")
    if not claims:
        return None
    stems = frozenset().union(*(c.hypotheses.stems | c.conclusion.stems for c in claims))
    formulas = " ".join(f for c in claims for f in c.hypotheses.formulas + c.conclusion.formulas)
    formulas += " " + " ".join(n for c in claims for n in c.hypotheses.names + c.conclusion.names)
    # "over an arbitrary ring": a counterexample over one ring refutes it, whatever it names its ring
    generalized = Terms(tuple(w for w in asked.words if not (w.quantified and is_generic(w.stem))), asked.formulas)
    if unmatched_terms(generalized, stems, formulas):
        return None
    parts = [terms for c in claims for terms in (c.hypotheses, c.conclusion)]
    if _qualified_otherwise(asked.stems, parts) or _other_kind_of_object(asked.words, parts):
        return None
    plain = " ".join(sentence.split())
    # what the question asserts: its words, and the kind of object it asks about as its predicate ("a set")
    asked_positive = {w.stem for w in asked.words if not w.negative and not is_generic(w.stem)}
    asked_positive |= {asked.words[-1].stem} if not asked.words[-1].negative else set()
    denied = tuple(
        dict.fromkeys(w.surface for c in claims for w in c.conclusion.words if w.negative and w.stem in asked_positive)
    )
    if converse_fails and _asks_converse(asked.words, claims[0]):
        return Refutation("opposite", ("the converse",))
    if _CLAIM_DENIED.search(plain):  # "It is not true that a finite R-module which is R-flat is projective"
        form = "counterexample" if _COUNTEREXAMPLE.search(whole) else "opposite"
        return Refutation(form, denied)
    if not _phrases_kept(asked.words[:-1], parts):  # the objects of a counterexample are the question's
        return None
    if _EXISTENCE.search(plain):  # "There exists ... which is not ...": the question's word denied
        denied = denied or _denied_in_clause(plain, asked_positive)
        if denied:
            return Refutation("counterexample", denied)
    if denied and (kind in _ARGUED_KINDS or _GENERALITY_DENIED.search(plain)):
        return Refutation("counterexample" if kind == "example" else "opposite", denied)
    return None


def _denied_in_clause(plain: str, asked: set[str]) -> tuple[str, ...]:
    """The question's words that a negation denies to the end of its clause: "which cannot be written as a
    filtered colimit of finitely presented flat algebras" denies the colimit, however many words stand
    between ("cannot be written as a" is beyond the three words a negation covers in a comparison)."""
    denied: list[str] = []
    for match in _NEGATED_CLAUSE.finditer(split_math(plain)[0]):
        denied += [w.surface for w in terms_of(match.group(1), []).words if w.stem in asked]
    return tuple(dict.fromkeys(denied))


def leading_claim(latex: str) -> str:
    """The statement up to the end of its first sentence that is not a setup ("Let ...", "Suppose ...")."""
    rest, taken = latex, ""
    while rest.strip():
        sentence = first_sentence(rest)
        taken, rest = taken + sentence, rest[len(sentence) :]
        if not SETUP_SENTENCE.match(sentence):
            break
    return taken


def first_sentence(latex: str) -> str:
    """The statement's first sentence: up to the first full stop outside a formula and outside braces."""
    depth, math = 0, False
    for i, char in enumerate(latex):
        if char == "$" and (i == 0 or latex[i - 1] != "\\"):
            math = not math
        elif char == "{":
            depth += 1
        elif char == "}":
            depth = max(0, depth - 1)
        elif char == "." and not math and depth == 0 and (i + 1 == len(latex) or latex[i + 1].isspace()):
            before = latex[max(0, i - 4) : i].lower()
            if not before.endswith(("i.e", "e.g", "resp", " cf", "etc")):
                return latex[: i + 1]
    return latex


def _phrases_kept(asked: tuple[Word, ...], parts: list[Terms]) -> bool:
    """Whether the question's objects stand in the sentence as the question names them: the words of each of
    its phrases ("quasi-compact quasi-separated scheme", "reduced irreducible group scheme") said together, in
    one clause of the sentence, and each word as the word it is, not another one of its stem: "a ring R ...
    not locally free" has the words of "Over a local ring, ... free?", not its local ring. The kind of object
    ("ring", "space") may stand apart: "Let Y be ... . Then Y is Kolmogorov" names a Kolmogorov space."""
    said = [terms.stems for terms in parts]
    phrases: dict[int, set[str]] = {}
    for word in asked:
        if not is_generic(word.stem):
            phrases.setdefault(word.phrase, set()).add(word.stem)
    if not all(any(stems <= clause for clause in said) for stems in phrases.values() if len(stems) > 1):
        return False
    adverbs = {(w.stem, w.surface.lower().endswith("ly")) for terms in parts for w in terms.words}
    return all((w.stem, w.surface.lower().endswith("ly")) in adverbs for w in asked if not is_generic(w.stem))


def _other_kind_of_object(asked: tuple[Word, ...], parts: list[Terms]) -> bool:
    """Whether the sentence names another kind of object than the question: "morphism of algebraic spaces"
    against "morphism of schemes" (each names a kind the other does not)."""
    asked_kinds = {w.stem for w in asked if is_generic(w.stem) and not w.quantified}
    said_kinds = {w.stem for terms in parts for w in terms.words if is_generic(w.stem)}
    return bool(asked_kinds - said_kinds) and bool(said_kinds - asked_kinds)


def _asks_converse(asked: tuple[Word, ...], claim: StatementClaim) -> bool:
    """Whether the question asks, as its predicate (its last word), what the claim assumes and does not
    conclude, compared as written ("finite" and "finitely" share a stem, not a meaning)."""
    asked_last = asked[-1].surface.lower()
    assumed = {w.surface.lower() for w in claim.hypotheses.words}
    concluded = {w.surface.lower() for w in claim.conclusion.words}
    return asked_last in assumed and asked_last not in concluded


def _qualified_otherwise(asked: frozenset[str], parts: list[Terms]) -> bool:
    """Whether the statement changes the meaning of a word of the question by a modifier the question does not
    use: "There exists a formally smooth ring map which is not flat" is about formally smooth maps, no
    counterexample to "Is a smooth ring map flat?" ("formally", "locally", "quasi", "weakly" before the
    question's word). A qualifier that only narrows the object is no such change: "a finite flat module which
    is not projective" is a flat module which is not projective, a counterexample to "Is every flat module
    projective?"."""
    for terms in parts:
        for before, word in zip(terms.words, terms.words[1:], strict=False):
            if before.phrase != word.phrase or word.stem not in asked or before.stem in asked | _HEDGES:
                continue
            if _modifies_meaning(before.surface):
                return True
    return False


def _modifies_meaning(surface: str) -> bool:
    """An adverb ("formally", "locally", "universally") or a prefix word ("quasi", "pseudo", "weakly") that makes
    the word after it name another notion; an adjective ("finite", "Noetherian") narrows it."""
    lowered = surface.lower()
    return lowered in _MEANING_MODIFIERS or (lowered.endswith("ly") and lowered not in _NARROWING_ADVERBS)
