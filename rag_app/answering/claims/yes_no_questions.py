"""Which questions ask yes or no, whether they negate, and how much of their topic a statement shares."""

from __future__ import annotations

import re

from rag_app.answering.claims.claim_terms import stem_of
from rag_app.answering.claims.vocabulary import FAILURE_WORDS, NEGATIONS, STOPWORDS, WORD

# Auxiliary verbs that open a yes/no question in English (after an optional "so," or "but").
_YES_NO_OPENING = re.compile(
    r"^\s*(?:(?:so|but|and|then)\s*,?\s+)?"
    r"(?:is|are|was|were|does|do|did|can|could|must|should|will|would|may|might|has|have|had|isn't|aren't|"
    r"doesn't|don't|can't)\b",
    re.IGNORECASE,
)

_AUXILIARY = r"(?:is|are|was|were|does|do|did|can|could|must|should|will|would|may|might|has|have|had)"

# "If p is prime and p does not divide a, is a^(p-1) = 1 mod p?": a yes/no question after its hypotheses.
_PREFACED_YES_NO = re.compile(
    rf"^\s*(?:if|for|in|on|over|when|whenever|given|with|under|let|suppose|assume)\b.*?,\s*{_AUXILIARY}\b.*\?\s*$",
    re.IGNORECASE | re.DOTALL,
)


def is_yes_no_question(question: str) -> bool:
    """Whether ``question`` asks yes or no ("Is every PID a UFD?", "Does sum 1/p converge", "If p is prime,
    is ...?")."""
    return bool(_YES_NO_OPENING.match(question) or _PREFACED_YES_NO.match(question))


# Words that carry no topic: the stopwords, negations, and the words asking about failure.
_NOT_TOPIC = STOPWORDS | NEGATIONS | FAILURE_WORDS


def topic_words(text: str) -> set[str]:
    """The stems of the words of ``text`` that carry its topic (three letters or more, scaffolding left out),
    stemmed as the claims are (:func:`rag_app.answering.claims.claim_terms.stem_of`)."""
    words = (word.lower().strip("'-") for word in WORD.findall(text))
    return {stem_of(word) for word in words if len(word) >= 3 and word not in _NOT_TOPIC}


def topic_overlap(question: str, statement: str) -> float:
    """The share of the question's topic words that the statement uses (1.0 when it has none)."""
    asked = topic_words(question)
    if not asked:
        return 1.0
    return len(asked & topic_words(statement)) / len(asked)
