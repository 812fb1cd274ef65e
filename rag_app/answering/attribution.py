"""Post-hoc attribution: which source supports each sentence of an answer.

Small local models seldom write ``[n]`` themselves, so after generation every sentence is matched to
the sources it was written from: embedding similarity (the index's own embedder), the share of the
sentence's words found in the source, and, when the sentence has formulas, the share of its normalized
formula tokens found in the source's formulas. A sentence without a valid citation gets the best
supporting source's number attached; a sentence that no source supports is marked. The threshold is
calibrated on the development sets (``bench/experiments/calibrate_answer_checks.py``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field

import numpy as np

from ingestion.formula_spans import find_formula_spans
from rag_app.answering.citations import CITATION_PATTERN, citation_numbers
from retriever.text.formula_normalizer import normalize_formula
from retriever.text.math_tokenizer import tokenize

# Weights of the three signals; the formula signal only counts for sentences with formulas.
WEIGHT_EMBEDDING = 0.6
WEIGHT_TERMS = 0.4
WEIGHT_FORMULAS = 0.25
# Sentences shorter than this many words and without formulas are not claims ("See below.").
MIN_CLAIM_WORDS = 4

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z$\\(\[]|\d)|\n\s*\n|\n(?=\s*(?:[-*•]|\d+[.)])\s)")


@dataclass(frozen=True, slots=True)
class SentenceSupport:
    """One sentence of the answer and the source that supports it best."""

    text: str
    cited: list[int]  # valid citations the model wrote in this sentence
    attributed: list[int]  # citations added after generation
    best_source: int | None  # 1-based source number with the highest support
    support: float  # that source's support score
    claim: bool  # long enough (or with a formula) to need a source
    supported: bool
    # What the cited source states (rag_app.answering.statement_check): None when not checked; problems say why not.
    stated: bool | None = None
    problems: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


@dataclass(frozen=True, slots=True)
class Attribution:
    text: str  # the answer with attributed citations attached
    sentences: list[SentenceSupport]
    threshold: float

    @property
    def supported(self) -> bool:
        """At least one claim of the answer is supported by a source."""
        return any(s.supported for s in self.sentences if s.claim)

    @property
    def unsupported(self) -> list[SentenceSupport]:
        return [s for s in self.sentences if s.claim and not s.supported]


def split_sentences(text: str) -> list[str]:
    """Sentences of an answer; math spans are never split (``$a. B$`` stays whole)."""
    spans = find_formula_spans(text)
    masked = list(text)
    for span in spans:
        for position in range(span.start, span.end):
            if masked[position] in ".!?\n":
                masked[position] = "_"
    masked_text = "".join(masked)
    sentences, start = [], 0
    for match in _SENTENCE_END.finditer(masked_text):
        sentences.append(text[start : match.start()])
        start = match.end()
    sentences.append(text[start:])
    return [s.strip() for s in sentences if s.strip()]


def formula_terms(text: str) -> set[str]:
    return {token for span in find_formula_spans(text) for token in normalize_formula(span.latex).tokens}


@dataclass(frozen=True, slots=True)
class SupportFeatures:
    embedding: float
    terms: float
    formulas: float | None  # None when the sentence has no formula

    @property
    def score(self) -> float:
        if self.formulas is None:
            return WEIGHT_EMBEDDING * self.embedding + WEIGHT_TERMS * self.terms
        scale = 1.0 - WEIGHT_FORMULAS
        return scale * (WEIGHT_EMBEDDING * self.embedding + WEIGHT_TERMS * self.terms) + WEIGHT_FORMULAS * self.formulas


def support_features(
    sentence: str, sentence_vector: np.ndarray, source_text: str, source_vector: np.ndarray
) -> SupportFeatures:
    """How well one source supports one sentence (each signal in [0, 1], cosine may dip below 0)."""
    words = {t for t in tokenize(CITATION_PATTERN.sub(" ", sentence)) if not t.startswith("\\")}
    source_words = {t for t in tokenize(source_text) if not t.startswith("\\")}
    terms = len(words & source_words) / len(words) if words else 0.0
    sentence_formulas = formula_terms(sentence)
    formulas = None
    if sentence_formulas:
        formulas = len(sentence_formulas & formula_terms(source_text)) / len(sentence_formulas)
    return SupportFeatures(float(sentence_vector @ source_vector), terms, formulas)


class Attributor:
    """Attaches citations to an answer's sentences and marks the unsupported ones."""

    def __init__(self, embed: Callable[[Sequence[str]], np.ndarray], threshold: float) -> None:
        self.embed = embed  # texts -> unit vectors (the index's embedder)
        self.threshold = threshold

    def attribute(self, answer: str, source_texts: Sequence[str], source_vectors: np.ndarray) -> Attribution:
        sentences = split_sentences(answer)
        if not sentences or not source_texts:
            return Attribution(answer, [], self.threshold)
        vectors = self.embed([CITATION_PATTERN.sub(" ", s) for s in sentences])
        results: list[SentenceSupport] = []
        for sentence, vector in zip(sentences, vectors, strict=True):
            scores = [
                support_features(sentence, vector, text, source_vectors[i]).score for i, text in enumerate(source_texts)
            ]
            best = int(np.argmax(scores))
            cited = [n for n in citation_numbers(sentence) if 1 <= n <= len(source_texts)]
            claim = bool(find_formula_spans(sentence)) or len(sentence.split()) >= MIN_CLAIM_WORDS
            # A sentence is supported when a source it cites, or failing that its best source, clears the bar.
            cited_best = max((scores[n - 1] for n in cited), default=None)
            supported = claim and max(scores[best], cited_best or 0.0) >= self.threshold
            cited_supports = cited_best is not None and cited_best >= self.threshold
            attributed = [best + 1] if supported and not cited_supports and best + 1 not in cited else []
            results.append(
                SentenceSupport(sentence, cited, attributed, best + 1, round(scores[best], 4), claim, supported)
            )
        return Attribution(_rebuild(answer, results), results, self.threshold)


def _rebuild(answer: str, sentences: Sequence[SentenceSupport]) -> str:
    """The answer with each sentence's attributed citations attached, its layout kept."""
    parts, cursor = [], 0
    for sentence in sentences:
        start = answer.find(sentence.text, cursor)
        if start < 0:
            continue
        parts.append(answer[cursor:start])
        parts.append(attach_citations(sentence.text, sentence.attributed))
        cursor = start + len(sentence.text)
    parts.append(answer[cursor:])
    return "".join(parts)


def attach_citations(sentence: str, numbers: list[int]) -> str:
    """``sentence`` with ``[n]`` placed before its final punctuation."""
    if not numbers:
        return sentence
    marks = "".join(f"[{n}]" for n in numbers)
    match = re.search(r"([.!?:;]+)$", sentence)
    if match and not sentence.endswith("$"):
        return f"{sentence[: match.start()]} {marks}{match.group(1)}"
    return f"{sentence} {marks}"
