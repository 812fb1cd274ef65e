"""The quoting answer's one-line lead-in for a yes/no question, above the quote: a verdict a reader can check.

Three ways of deciding it (``answers.quote.yes_no_method``), measured side by side by
``bench/yes_no_verdict.py`` on ``eval/questions/yes-no-claims.v1.jsonl``:

- **rules** (the default): the question's claim compared with the quoted statement's hypotheses and
  conclusion (:mod:`rag_app.answering.claim_verdict`). It says "Yes, as [n] states:" only where the statement
  proves what was asked, "[n] states the opposite:" where it asserts the opposite, "Only under a hypothesis the
  question does not state (...); [n]:" where it needs a hypothesis the question drops, and, where the
  statement does not use the question's words or concludes something else, a notice that the quote does not
  settle the question as asked. No model call.
- **model**: the packaged model reads the statement whole and judges the claims "the answer is yes" and "the
  answer is no" TRUE or FALSE; "Yes" where it judges yes TRUE and no FALSE, the question does not negate and the
  statement shares most of its content words. It said "Yes" to 10 of 16 false claims that drop a hypothesis
  (issue 74): kept to be measured against, not the default.
- **rules+model**: "Yes" only where both say yes; the other lead-ins as the rules give them.
"""

from __future__ import annotations

import re
from enum import Enum

from rag_app.answering import claim_verdict
from rag_app.answering.claim_verdict import (
    CONVERSE,
    EXPRESSION,
    OTHER_CONCLUSION,
    PART_OF_PHRASE,
    ClaimComparison,
    ClaimVerdict,
)
from rag_app.answering.content_words import content_words

# Words that carry no topic: question scaffolding, quantifiers, connectives.
_SCAFFOLDING = """
    is are was were does do did can could must should will would may might has have had be been being
    isn't aren't doesn't don't can't not no true false always every each any all some there it its
    this that these those the a an of in on at to for from by with as and or if then than into over
    under about what which when where who whom whose why how one ones such also still necessarily
    possible possibly exist exists existing
"""
_NOT_CONTENT = frozenset(_SCAFFOLDING.split())
_STEM = 5  # characters compared: "compact"/"compactness", "integral"/"integrals" match


# A question that negates (or asks about failure) is where the model's verdicts went wrong.
_NEGATION = re.compile(
    r"\b(?:not|no|never|none|nothing|cannot|can't|isn't|aren't|doesn't|don't|fails?|false|without|"
    r"counterexamples?|non[-\w]*)\b",
    re.IGNORECASE,
)


class Verdict(Enum):
    YES = "yes"
    NO = "no"
    UNCLEAR = "unclear"


def is_yes_no_question(question: str) -> bool:
    """Whether ``question`` asks yes or no ("Is every PID a UFD?", "If p is prime, is ...?")."""
    return claim_verdict.is_yes_no_question(question)


_NOT_SETTLED = {
    CONVERSE: "the question asks the converse of [{n}]",
    OTHER_CONCLUSION: "[{n}] concludes something else than the question asks",
    EXPRESSION: "[{n}] concludes about an expression the question does not name",
    PART_OF_PHRASE: "what [{n}] concludes differs from what the question asks",
}


def rules_lead_in(comparison: ClaimComparison, number: int) -> str | None:
    """The lead-in for the rules' verdict on source ``number``: each form names what the reader checks in
    the quote beneath it."""
    if comparison.verdict is ClaimVerdict.YES:
        return f"Yes, as [{number}] states:"
    if comparison.verdict is ClaimVerdict.OPPOSITE:
        return f"[{number}] states the opposite:"
    if comparison.verdict is ClaimVerdict.ONLY_IF:
        return f"Only under a hypothesis the question does not state ({', '.join(comparison.missing)}); [{number}]:"
    if comparison.unmatched:
        words = ", ".join(comparison.unmatched[:6])
        return f"Check against the question: [{number}] does not speak of {words}. Quoted as it stands:"
    if comparison.reason.endswith(", not a proved statement"):
        return f"Check against the question: [{number}] is {comparison.reason}. Quoted as it stands:"
    notice = _NOT_SETTLED.get(comparison.reason)
    if notice:
        detail = f" ({', '.join(comparison.missing)})" if comparison.missing else ""
        return f"Check against the question: {notice.format(n=number)}{detail}. Quoted as it stands:"
    return None


def negates(question: str) -> bool:
    """Whether the question carries a negation ("not", "non-", "fails", "without", ...)."""
    return bool(_NEGATION.search(question))


def parse_claim(reply: str) -> bool | None:
    """The model's TRUE or FALSE on one claim; None for anything else."""
    words = re.findall(r"[A-Za-z]+", reply.upper())
    first = words[0] if words else ""
    return True if first == "TRUE" else False if first == "FALSE" else None


def verdict_of_claims(yes_claim: bool | None, no_claim: bool | None) -> Verdict:
    """YES only when "the answer is yes" was judged TRUE and "the answer is no" FALSE (NO the other way
    round); anything else, both TRUE included, is UNCLEAR."""
    if yes_claim is True and no_claim is False:
        return Verdict.YES
    if yes_claim is False and no_claim is True:
        return Verdict.NO
    return Verdict.UNCLEAR


def topic_overlap(question: str, statement: str) -> float:
    """The share of the question's content words that the statement uses (1.0 when it has none)."""
    asked = content_words(question, _NOT_CONTENT, stem_length=_STEM)
    if not asked:
        return 1.0
    return len(asked & content_words(statement, _NOT_CONTENT, stem_length=_STEM)) / len(asked)


def checkable_lead_in(question: str, statement: str, verdict: Verdict, number: int, min_overlap: float) -> str | None:
    """The lead-in, where the verdict is YES, the question does not negate and the statement is about the
    question's topic; never for NO (see the module's note)."""
    if verdict is not Verdict.YES or negates(question) or topic_overlap(question, statement) < min_overlap:
        return None
    return f"Yes, as [{number}] states:"
