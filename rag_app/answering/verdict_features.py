"""What the verdict reader reads of a question and one statement: named features, never positions.

Two blocks. The **text features** (:data:`TEXT_FEATURES`) are a handful of readings of the two texts that no
embedding carries well: how much of the question's topic the statement holds and the other way round, whether
each negates, whether the question asks yes or no or asks an open question, whether the statement is a definition,
how much of the question's LaTeX the statement holds. The **embedding block** is the interaction of the two texts'
vectors from the index's embedder (their cosine, their product and their absolute difference, as sentence-pair
classifiers over frozen encoders read them). The reader's weights name every feature they were fitted on; a
weights file that lacks one of these names is refused (:class:`rag_app.answering.verdict_reader.VerdictReader`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from rag_app.answering.claims.lexicon import NEGATIONS, WORD
from rag_app.answering.claims.yes_no_questions import is_yes_no_question, topic_words

TEXT_FEATURES: tuple[str, ...] = (
    "cosine",
    "question_topic_in_statement",
    "statement_topic_in_question",
    "question_negates",
    "statement_negates",
    "negation_differs",
    "question_is_yes_no",
    "question_is_open",
    "statement_is_definition",
    "question_latex_in_statement",
    "question_words_log",
    "statement_words_log",
)
EMBEDDING_BLOCKS: tuple[str, ...] = ("product", "difference")  # each as wide as the embedder's vectors

_OPEN_QUESTION = re.compile(r"^\s*(?:what|which|when|how|why|where|who|under which|for which|in which)\b", re.I)
_LATEX_TOKEN = re.compile(r"\\[A-Za-z]+|[A-Za-z0-9]")
_MATH = re.compile(r"\$[^$]+\$|\\\(.+?\\\)|\\\[.+?\\\]", re.S)


@dataclass(frozen=True, slots=True)
class VerdictFeatures:
    """One question against one statement: the text features by name and the embedding block."""

    text: dict[str, float]
    product: np.ndarray
    difference: np.ndarray

    def vector(self, names: Sequence[str]) -> np.ndarray:
        """The features in the order ``names`` gives (a weights file's), then the two embedding blocks."""
        missing = [name for name in names if name not in self.text]
        if missing:
            raise KeyError(f"the verdict reader computes no feature named {missing[0]!r}")
        return np.concatenate([[self.text[name] for name in names], self.product, self.difference])


def text_features(question: str, statement: str, kind: str, cosine: float) -> dict[str, float]:
    """The named text features of ``question`` against ``statement`` (of kind ``kind``)."""
    asked, stated = topic_words(question), topic_words(statement)
    question_negates = _negates(question)
    statement_negates = _negates(statement)
    asked_latex = _latex_tokens(question)
    return {
        "cosine": cosine,
        "question_topic_in_statement": len(asked & stated) / len(asked) if asked else 0.0,
        "statement_topic_in_question": len(asked & stated) / len(stated) if stated else 0.0,
        "question_negates": float(question_negates),
        "statement_negates": float(statement_negates),
        "negation_differs": float(question_negates != statement_negates),
        "question_is_yes_no": float(is_yes_no_question(question)),
        "question_is_open": float(bool(_OPEN_QUESTION.match(question))),
        "statement_is_definition": float(kind == "definition"),
        "question_latex_in_statement": (
            len(asked_latex & _latex_tokens(statement)) / len(asked_latex) if asked_latex else 0.0
        ),
        "question_words_log": float(np.log1p(len(WORD.findall(question)))),
        "statement_words_log": float(np.log1p(len(WORD.findall(statement)))),
    }


def pair_features(
    question: str, question_vector: np.ndarray, statement: str, kind: str, statement_vector: np.ndarray
) -> VerdictFeatures:
    """Every feature of one pair, from the two texts and their (unit) vectors."""
    u = _unit(question_vector)
    v = _unit(statement_vector)
    return VerdictFeatures(text_features(question, statement, kind, float(u @ v)), u * v, np.abs(u - v))


def _negates(text: str) -> bool:
    return any(word.lower() in NEGATIONS for word in WORD.findall(_MATH.sub(" ", text)))


def _latex_tokens(text: str) -> set[str]:
    return {token for span in _MATH.findall(text) for token in _LATEX_TOKEN.findall(span)}


def _unit(vector: np.ndarray) -> np.ndarray:
    vector = np.asarray(vector, dtype=np.float64).ravel()
    norm = float(np.linalg.norm(vector))
    return vector / norm if norm else vector
