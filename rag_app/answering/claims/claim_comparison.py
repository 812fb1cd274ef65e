"""What a quoted statement says about a yes/no question: a verdict that compares claims, not topics.

A yes/no question makes a claim ("Is every bounded holomorphic function on the unit disc constant?"); the
statement quoted under it proves one ("A bounded entire function is constant."). The lead-in above the quote
may say "Yes" only where the statement proves what was asked, so the two are compared part by part, the
statement read into claims (:mod:`rag_app.answering.claims.statement_claims`):

- **Yes** where every word of the question is the statement's, every hypothesis of one of its claims is
  stated by the question (a relation such as ``p ∤ a`` by the same formula), the question asks that claim's
  conclusion (not its hypothesis: that is the converse), and nothing is asserted with the opposite polarity;
- **the opposite** where the same terms are asserted with opposite polarity (``converges`` against
  ``diverges``, ``constant`` against ``non-constant``, ``is planar`` against ``is not planar``);
- **only under a hypothesis** where the claim's conclusion is asked but one of its hypotheses is not stated;
- **nothing** otherwise: a word of the question the statement never uses (another object, another
  conclusion), the converse, a question not answerable yes or no.

Rules rather than the packaged model: asked "is the answer yes?", the model said yes to 10 of 16 false claims;
these rules read the quote in microseconds and say "Yes" only when they can show why
(bench/yes_no_verdict.py measures both on eval/questions/yes-no-claims.v1.jsonl). Pure reading of text: no
setting, no model.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum

from rag_app.answering.claims.asked_question import AskedQuestion
from rag_app.answering.claims.claim_terms import Terms, Word, is_generic
from rag_app.answering.claims.implied_conditions import StatedConditions
from rag_app.answering.claims.refutation import refutes
from rag_app.answering.claims.statement_claims import StatementClaim, statement_claims
from rag_app.answering.claims.term_matching import unmatched_terms, written_otherwise
from rag_app.answering.claims.yes_no_questions import is_yes_no_question

_ANSWER_OPENING = re.compile(r"^\s*(yes|no|never)\b", re.IGNORECASE)

# A hypothesis formula that states a condition (``p ∤ a``, ``gcd(a,n) = 1``, ``n ≥ 3``): the question must
# state it too. A formula that only names or types an object (``f : D^n → D^n``) need not be repeated.
_CONDITION = re.compile(r"[=<>≤≥≠≡∤⊆⊂≪]|\|")


_EXPRESSION = re.compile(r"[+\-*·]")

_RELATION_SIGN = re.compile(r"[=<>≤≥≠≡∤⊆⊂≪≅∼≃∈→↦|]")


# Why a statement does not settle the question as asked (the reader is told, above the quote).
CONVERSE = "the question asks the converse"

OTHER_CONCLUSION = "the statement concludes something else than the question asks"

EXPRESSION = "the statement concludes about an expression the question does not name"

PART_OF_PHRASE = "the question asks part of what the statement concludes"
OTHER_SUBJECT = "the statement proves it of another object than the question names"

UNPROVED = "a {kind}, not a proved statement"
EXISTENCE_DENIED = "the statement states that something exists which is not so"
# an existence and a negation in one sentence ("There exists a ring R and a module M which is not ...")
_EXISTENCE_DENIED = re.compile(
    r"\bthere (?:exists?|is|are)\b[^.]*?(?:\bnot\b|\bcannot\b|\bnever\b|n't\b)", re.IGNORECASE
)
REFUTED = "the statement refutes the claim: {form}"

# What a paper proves or defines: the statements a verdict may rest on.
PROVED_KINDS = frozenset({"theorem", "lemma", "proposition", "corollary", "definition", "claim", "fact"})

UNPROVED_KINDS = frozenset({"conjecture", "question", "problem", "exercise", "hypothesis", "assumption"})


class Verdict(Enum):
    """The rules' reading of a yes/no claim against one statement, a feature of the learned chooser: YES, NO (the
    statement refutes the claim: :mod:`rag_app.answering.claims.refutation`), OPPOSITE (the same terms with the other
    polarity, not a refutation), ONLY_IF (it needs a hypothesis the claim drops) or NONE (no reading; ``reason`` says
    why). What the answer says is the trained verdict's (:mod:`rag_app.answering.verdict`), not this."""

    YES = "yes"
    NO = "no"
    OPPOSITE = "opposite"
    ONLY_IF = "only-if"
    NONE = "none"


@dataclass(frozen=True, slots=True)
class ClaimComparison:
    """The verdict, with what decided it: the statement's hypotheses the question does not state
    (``missing``, as the statement words them), the question's terms the statement does not use
    (``unmatched``), and a short reason."""

    verdict: Verdict
    reason: str
    missing: tuple[str, ...] = ()
    unmatched: tuple[str, ...] = ()


def compare(
    question: str | AskedQuestion, statement_latex: str, kind: str = "theorem", named: frozenset[str] = frozenset()
) -> ClaimComparison:
    """The verdict of ``statement_latex``, a statement of ``kind`` (a ``StatementKind`` value), on the yes/no
    ``question`` (see the module's note). ``named``: the word families the index knows the statement by besides
    its text (its name, section title and label: "Zariski's Main Theorem", "Associated primes"); a question word
    among them is a word the statement speaks of. Only what a paper proves or defines is read for a
    verdict: a conjecture, a question or an exercise settles nothing (the reader is told), and an answer post, a remark
    or an example argues in prose whose hypotheses the rules cannot read."""
    question = AskedQuestion.read(question)  # read once: an answer passes the one it read
    if not question.yes_no:
        return ClaimComparison(Verdict.NONE, "not a yes/no question")
    if kind in UNPROVED_KINDS:
        return ClaimComparison(Verdict.NONE, UNPROVED.format(kind=kind))
    if kind not in PROVED_KINDS:  # an example or a remark: read only for a counterexample or a warning
        refutation = refutes(question, statement_latex, kind)
        if refutation is not None:
            return ClaimComparison(Verdict.NO, REFUTED.format(form=refutation.form), refutation.denied)
        return ClaimComparison(Verdict.NONE, f"a {kind} is not read for a verdict")
    definition = kind == "definition"
    if _ANSWER_OPENING.match(statement_latex):
        # An answer post ("Yes. By the structure theorem ...") answers its own thread's question, not
        # necessarily this one; its first word is no verdict on a claim it does not state.
        return ClaimComparison(Verdict.NONE, "an answer to another question")
    asked = question.claim
    claims = statement_claims(statement_latex, definition)
    if not asked.words or not claims:
        return ClaimComparison(Verdict.NONE, "nothing to compare")
    all_stems = frozenset().union(*(c.hypotheses.stems | c.conclusion.stems for c in claims))
    all_formulas = " ".join(f for c in claims for f in c.hypotheses.formulas + c.conclusion.formulas)
    all_formulas += " " + " ".join(n for c in claims for n in c.hypotheses.names + c.conclusion.names)
    unmatched = unmatched_terms(asked, all_stems | named, all_formulas)
    if unmatched:
        return ClaimComparison(Verdict.NONE, "the question says what the statement does not", unmatched=unmatched)
    refutation = refutes(question, statement_latex, kind)
    if refutation is not None:  # "There exists ... which is not ...": never a "Yes", whatever a clause says
        return ClaimComparison(Verdict.NO, REFUTED.format(form=refutation.form), refutation.denied)
    results = [_compare_claim(asked, claim, question.stated) for claim in claims]
    found = {result.verdict for result in results if result is not None}
    if Verdict.YES in found and Verdict.OPPOSITE not in found:
        if _EXISTENCE_DENIED.search(" ".join(statement_latex.split())):
            # "There exists ... which cannot be written as ...": a counterexample to something, never a proof
            return ClaimComparison(Verdict.NONE, EXISTENCE_DENIED)
        return next(r for r in results if r is not None and r.verdict is Verdict.YES)
    if Verdict.OPPOSITE in found and Verdict.YES not in found:
        return next(r for r in results if r is not None and r.verdict is Verdict.OPPOSITE)
    if Verdict.YES in found:
        return ClaimComparison(Verdict.NONE, "the statement's claims disagree about the question")
    if Verdict.ONLY_IF in found:
        return next(r for r in results if r is not None and r.verdict is Verdict.ONLY_IF)
    reasons = [r.reason for r in results if r is not None]
    return ClaimComparison(Verdict.NONE, reasons[0] if reasons else OTHER_CONCLUSION)


def _compare_claim(asked: Terms, claim: StatementClaim, stated: StatedConditions) -> ClaimComparison | None:
    """This claim's verdict, or None where the question does not ask its conclusion."""
    asked_stems = asked.stems
    asked_formulas = " ".join(asked.formulas)
    conclusion_stems = {w.stem for w in claim.conclusion.words if not is_generic(w.stem)}
    concluded = bool(conclusion_stems & asked_stems) or any(f in asked_formulas for f in claim.conclusion.formulas)
    if not concluded:
        return None
    concluded_formulas = " ".join(claim.conclusion.formulas)
    predicate = [w for w in _predicate(asked.words) if w.stem not in claim.conclusion.stems]
    predicate = [w for w in predicate if not written_otherwise(w, concluded_formulas) or w.quantified]
    if predicate:
        if all(w.stem in claim.hypotheses.stems for w in predicate):
            return ClaimComparison(Verdict.NONE, CONVERSE)
        return ClaimComparison(Verdict.NONE, OTHER_CONCLUSION)
    if (not claim.equivalence or claim.directed) and _hypotheses_last(asked.words, claim):
        return ClaimComparison(Verdict.NONE, CONVERSE)
    unasked = [f for f in claim.conclusion.formulas if _EXPRESSION.search(f) and not _RELATION_SIGN.search(f)]
    unasked = [f for f in unasked if f not in asked_formulas]
    if unasked:  # "f and f + g have the same number of zeros": asked of f and g, another claim
        return ClaimComparison(Verdict.NONE, EXPRESSION, tuple(unasked))
    uncovered = _uncovered_phrase(asked_stems, claim.conclusion.words)
    if uncovered:
        return ClaimComparison(Verdict.NONE, PART_OF_PHRASE, uncovered)
    # the word the question asks about does not also state a hypothesis ("Is every localization of a
    # Noetherian ring catenary?" against "A localization of a catenary ring is catenary": catenary is missing)
    hypothesized = Terms(asked.words[: len(asked.words) - len(_predicate(asked.words))], asked.formulas)
    missing = [
        w.surface
        for w in claim.hypotheses.words
        if not is_generic(w.stem) and not w.binds and not _stated(w, hypothesized)
    ]
    missing += [f for f in claim.hypotheses.formulas if _CONDITION.search(f) and f not in asked_formulas]
    missing = [m for m in missing if not stated.states(m)]  # "greater than one" states n > 1
    # what the question assumes, this claim must speak of: "The ring Z is a Jacobson ring" proves nothing of "a
    # domain with finitely many maximal ideals", though the statement's next sentence uses those words
    claim_formulas = " ".join(claim.hypotheses.formulas + claim.conclusion.formulas + claim.hypotheses.names)
    elsewhere = [
        w.surface
        for w in hypothesized.words
        if not is_generic(w.stem)
        and w.stem not in claim.hypotheses.stems | claim.conclusion.stems
        and not written_otherwise(w, claim_formulas)
    ]
    if elsewhere:
        return ClaimComparison(Verdict.NONE, OTHER_SUBJECT, tuple(elsewhere))
    if _opposed(asked.words, claim.conclusion.words):
        if missing:
            return ClaimComparison(Verdict.NONE, "the opposite, under a hypothesis not stated", tuple(missing))
        return ClaimComparison(Verdict.OPPOSITE, "the statement asserts the opposite")
    if missing:
        return ClaimComparison(Verdict.ONLY_IF, "a hypothesis the question does not state", tuple(missing))
    return ClaimComparison(Verdict.YES, "the statement proves the claim")


def _hypotheses_last(asked: tuple[Word, ...], claim: StatementClaim) -> bool:
    """Whether the question names the claim's hypotheses after its conclusion ("Is every unique
    factorization domain a principal ideal domain?" against "A principal ideal domain is a unique
    factorization domain."): the converse, in the order questions are asked ("Is every X Y?")."""
    only_hypotheses = claim.hypotheses.stems - claim.conclusion.stems
    only_conclusion = claim.conclusion.stems - claim.hypotheses.stems
    at_h = [i for i, w in enumerate(asked) if w.stem in only_hypotheses and not is_generic(w.stem)]
    at_c = [i for i, w in enumerate(asked) if w.stem in only_conclusion and not is_generic(w.stem)]
    return bool(at_h and at_c) and max(at_h) > max(at_c)


def _predicate(words: tuple[Word, ...]) -> list[Word]:
    """What the question asks of its subject: its last word, with the words "of" ties to it ("does G have
    a subgroup of order d": subgroup, order)."""
    predicate = [words[-1]]
    while predicate[0].of_link and len(predicate) < len(words):
        predicate.insert(0, words[len(words) - len(predicate) - 1])
    return predicate


def _uncovered_phrase(asked: frozenset[str], concluded: tuple[Word, ...]) -> tuple[str, ...]:
    """The words of a concluded phrase the question uses only in part: asked "does every bounded sequence
    converge?", "has a convergent subsequence" concludes something else ("subsequence" is not asked)."""
    phrases: dict[int, list[Word]] = {}
    for word in concluded:
        phrases.setdefault(word.phrase, []).append(word)
    left: list[str] = []
    for words in phrases.values():
        if any(w.stem in asked for w in words):
            left += [w.surface for w in words if w.stem not in asked and not is_generic(w.stem)]
    return tuple(left)


def _stated(hypothesis: Word, asked: Terms) -> bool:
    """Whether the question states this hypothesis, with the same polarity."""
    return any(w.stem == hypothesis.stem and w.negative == hypothesis.negative for w in asked.words)


def _opposed(asked: tuple[Word, ...], concluded: tuple[Word, ...]) -> bool:
    """Whether a term the question asserts is concluded with the opposite polarity (and only so)."""
    for stem in {w.stem for w in asked} & {w.stem for w in concluded}:
        asked_signs = {w.negative for w in asked if w.stem == stem}
        concluded_signs = {w.negative for w in concluded if w.stem == stem}
        if len(asked_signs) == 1 and len(concluded_signs) == 1 and asked_signs != concluded_signs:
            return True
    return False


__all__ = [
    "ClaimComparison",
    "StatementClaim",
    "Verdict",
    "compare",
    "is_yes_no_question",
    "statement_claims",
]
