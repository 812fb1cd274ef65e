"""The quoting answer's one-line lead-in for a yes/no question: "Yes, as [2] states:" above the quote.

A quote alone leaves a yes/no question for the reader to settle. The packaged model cannot be trusted to
restate a theorem, so the lead-in says one word and points at the quote, and it is given only where the
reader can check it against that quote:

- the question asks yes or no (it opens with "is", "does", "can", ...);
- the model, reading the quoted statement whole, judges the claim "the answer is yes" TRUE and the claim
  "the answer is no" FALSE (asked one verdict, it said YES to nearly everything);
- the question has no negation ("not", "non-", "fail", ...): negation is where the model's verdicts
  went wrong, so a negated question gets no lead-in;
- the statement is about what the question names: most of the question's content words appear in it
  (so a verdict on a statement about something else never reads as an answer).

Only "Yes" is ever said: the model never judged a "no" rightly (bench/choice_quality.py on
eval/questions/yes-no-questions.v1.jsonl). Anything else gives no lead-in, and the answer is the quote.
"""

from __future__ import annotations

import re
from enum import Enum

# Auxiliary verbs that open a yes/no question in English (after an optional "so," or "but").
_YES_NO_OPENING = re.compile(
    r"^\s*(?:(?:so|but|and|then)\s*,?\s+)?"
    r"(?:is|are|was|were|does|do|did|can|could|must|should|will|would|may|might|has|have|had|isn't|aren't|"
    r"doesn't|don't|can't)\b",
    re.IGNORECASE,
)
_WORD = re.compile(r"[A-Za-z][A-Za-z'-]+")
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
    """Whether ``question`` asks yes or no ("Is every PID a UFD?", "Does sum 1/p converge")."""
    return bool(_YES_NO_OPENING.match(question))


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


def content_words(text: str) -> set[str]:
    """The topic words of ``text``, each cut to its first few letters (a crude stem)."""
    words = (word.lower().strip("'-") for word in _WORD.findall(text))
    return {word[:_STEM] for word in words if len(word) >= 3 and word not in _NOT_CONTENT}


def topic_overlap(question: str, statement: str) -> float:
    """The share of the question's content words that the statement uses (1.0 when it has none)."""
    asked = content_words(question)
    if not asked:
        return 1.0
    return len(asked & content_words(statement)) / len(asked)


def checkable_lead_in(question: str, statement: str, verdict: Verdict, number: int, min_overlap: float) -> str | None:
    """The lead-in, where the verdict is YES, the question does not negate and the statement is about the
    question's topic; never for NO (see the module's note)."""
    if verdict is not Verdict.YES or negates(question) or topic_overlap(question, statement) < min_overlap:
        return None
    return f"Yes, as [{number}] states:"
