"""What the answer knows of each source it may quote, as numbers a learned model can weigh.

The statement that answers is among the four sources the answer reads far more often than it is the search's
first result, and neither the packaged model's pick nor the ranker's order alone finds it best. Each source is
described here by every signal the answer holds without a model call:

- **the ranker**: its rank, the learned ranker's score, how far it trails the first and leads the next, and how
  far the first leads the second (how sure the search is of its order);
- **the question's embedding**: the cosine the relevance gate reads, and how far it trails the best one;
- **the statement as the index knows it**: the share of the question's word families found in its text, and in
  what the index adds to the text (its name such as "Zariski's Main Theorem", its section title, the words of its
  label, the names of the definitions in its scope), how far that share trails the best source's, the question's
  phrases (adjacent word pairs: technical terms) and formulas it writes, its length, and the share found in the
  sentences of other statements that cite it (how others cite it);
- **the other sources**: how far each share trails the best source's, and whether another source is the one the
  claim reading says "Yes" or "No" of (a source is chosen against the others, not alone);
- **its kind**: a definition, a statement nothing proves (an example, a remark, a post), and whether the question
  asks for a definition;
- **the claim reading** (:mod:`rag_app.answering.claims`), for a yes/no question: whether the rules read the
  statement as proving the claim, refuting it, or proving it under a hypothesis the question drops.

The features are pure: the same sources give the same numbers in the answer, in training and in the benchmark
(:class:`rag_app.answering.source_chooser.SourceChooser` reads them; ``rag-app train chooser`` fits it).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields
from itertools import pairwise

import numpy as np

from ingestion.records import StatementRecord
from rag_app.answering.claims import ClaimComparison, Verdict, compare
from rag_app.answering.claims.asked_question import AskedQuestion
from rag_app.answering.claims.claim_terms import split_math, stem_of
from rag_app.answering.claims.vocabulary import STOPWORDS, WORD, formula_key
from rag_app.answering.claims.yes_no_questions import topic_words
from retriever.types import SearchHit


@dataclass(frozen=True, slots=True)
class SourceFeatureRow:
    """What the chooser reads of one source, by name (a trained chooser stores the names it was fitted on, and a
    weights file that lacks one of them is refused): the ranker's view, the question's cosine, how much of the
    question the statement speaks of, and the claim reading of a yes/no question."""

    first: float  # 1.0 for the search's first result
    rank: float  # from 0
    score: float  # the learned ranker's score (else the rank's reciprocal)
    behind_first: float
    lead_over_next: float
    first_lead: float  # the first result's lead over the second
    cosine: float
    cosine_behind_best: float
    text_cover: float  # the share of the question's topic words its text uses
    known_cover: float  # ... its text, name and the definitions in its scope
    name_cover: float
    unknown_words: float
    phrase_cover: float
    formula_cover: float
    text_cover_behind_best: float
    known_cover_behind_best: float
    name_cover_behind_best: float
    unknown_over_fewest: float
    yes_elsewhere: float  # the claim reading says "yes" of another source
    no_elsewhere: float
    length: float  # log(1 + characters)
    citing_cover: float  # the share of the question's topic words the sentences citing it use
    definition: float
    unproved: float  # an example, a remark, an answer post
    asks_definition: float
    definition_asked: float
    yes_no: float
    verdict_yes: float
    verdict_no: float
    verdict_only_if: float


# The columns of the feature matrix, in the order of :class:`SourceFeatureRow`.
FEATURE_NAMES = tuple(field.name for field in fields(SourceFeatureRow))

# Kinds that state a result or a notion; anything else (an example, a remark, an answer post) argues in prose.
_STATED_KINDS = frozenset({"theorem", "lemma", "proposition", "corollary", "definition", "claim", "fact"})
_ASKS_DEFINITION = re.compile(r"^\s*(?:what (?:is|are|does)|define|definition of|meaning of)\b", re.IGNORECASE)
_LABEL_WORDS = re.compile(r"[A-Za-z]+")
_INLINE_MATH = re.compile(r"\$[^$]*\$")

# (statement id) -> the names of the definitions in its scope (the statement graph), nearest first
DefinitionsInScope = Callable[[str], Sequence[StatementRecord]]
# (statement ids) -> the sentences of other statements that cite each (how others cite it), where any does
CitingSentences = Callable[[Sequence[str]], Mapping[str, Sequence[str]]]
# (question, statement) -> the claim reading of the statement on the question
ClaimReading = Callable[[str, StatementRecord], ClaimComparison]


@dataclass(frozen=True, slots=True)
class SourceFeatures:
    """One row of :data:`FEATURE_NAMES` per source, in the search's order, and the claim reading's verdicts
    (kept so that the answer need not read the statements again)."""

    matrix: np.ndarray  # (sources, len(FEATURE_NAMES)), float32
    verdicts: tuple[Verdict | None, ...]

    def __len__(self) -> int:
        return len(self.verdicts)

    @classmethod
    def of(
        cls,
        question: str | AskedQuestion,
        hits: Sequence[SearchHit],
        similarities: Sequence[float],
        learned_scores: bool,
        definitions: DefinitionsInScope | None = None,
        citing: CitingSentences | None = None,
        reading: ClaimReading | None = None,
    ) -> SourceFeatures:
        """The features of ``hits`` (in rank order) for ``question``; ``similarities``: the question's cosine with
        each; ``learned_scores``: the scores are the learned ranker's (comparable across questions; otherwise
        the score columns hold the rank's reciprocal, all the fused scores can say)."""
        count = len(hits)
        if count == 0:
            return cls(np.zeros((0, len(FEATURE_NAMES)), np.float32), ())
        scores = np.array([hit.score if learned_scores else 1.0 / (n + 1) for n, hit in enumerate(hits)], np.float64)
        cosines = np.asarray(similarities, np.float64)[:count]
        question = AskedQuestion.read(question)  # the answer's own, read once
        asked = set(question.topic)
        asked_phrases = _phrases(question.text)
        asked_formulas = _formulas(question.latex)
        yes_no = question.yes_no
        asks_definition = bool(_ASKS_DEFINITION.match(question.text))
        cited = citing([hit.record.id for hit in hits]) if citing is not None else {}
        rows = []
        words_of = []
        for hit in hits:
            record = hit.record
            text_words = topic_words(record.text)
            named = named_words(record)
            known = text_words | named | _scope_words(record, definitions)
            words_of.append((text_words, named, known))
        text_covers = [_cover(asked, text_words) for text_words, _, _ in words_of]
        known_covers = [_cover(asked, known) for _, _, known in words_of]
        name_covers = [_cover(asked, named) for _, named, _ in words_of]
        unknown = [len(asked - known) for _, _, known in words_of]
        claim_of = reading or read_claim  # each candidate is read once here
        verdicts = [claim_of(question, hit.record).verdict if yes_no else None for hit in hits]
        said_yes = [verdict is Verdict.YES for verdict in verdicts]
        said_no = [verdict in (Verdict.NO, Verdict.OPPOSITE) for verdict in verdicts]
        for n, hit in enumerate(hits):
            record = hit.record
            verdict = verdicts[n]
            definition = record.kind.value == "definition"
            heard = _phrases(f"{record.name} {record.section} {record.text}")
            row = SourceFeatureRow(
                first=float(n == 0),
                rank=float(n),
                score=scores[n],
                behind_first=scores[0] - scores[n],
                lead_over_next=scores[n] - scores[n + 1] if n + 1 < count else 0.0,
                first_lead=scores[0] - scores[1] if count > 1 else 0.0,
                cosine=cosines[n],
                cosine_behind_best=cosines.max() - cosines[n],
                text_cover=text_covers[n],
                known_cover=known_covers[n],
                name_cover=name_covers[n],
                unknown_words=float(unknown[n]),
                phrase_cover=_cover(asked_phrases, heard),
                formula_cover=_cover(asked_formulas, _formulas(record.text)) if asked_formulas else 1.0,
                text_cover_behind_best=max(text_covers) - text_covers[n],
                known_cover_behind_best=max(known_covers) - known_covers[n],
                name_cover_behind_best=max(name_covers) - name_covers[n],
                unknown_over_fewest=float(unknown[n] - min(unknown)),
                yes_elsewhere=float(any(said_yes) and not said_yes[n]),
                no_elsewhere=float(any(said_no) and not said_no[n]),
                length=float(np.log1p(len(record.text))),
                citing_cover=_cover(asked, topic_words(" ".join(cited.get(record.id, ())))) if asked else 0.0,
                definition=float(definition),
                unproved=float(record.kind.value not in _STATED_KINDS),
                asks_definition=float(asks_definition),
                definition_asked=float(asks_definition and definition),
                yes_no=float(yes_no),
                verdict_yes=float(verdict is Verdict.YES),
                verdict_no=float(verdict in (Verdict.NO, Verdict.OPPOSITE)),
                verdict_only_if=float(verdict is Verdict.ONLY_IF),
            )
            rows.append(tuple(getattr(row, name) for name in FEATURE_NAMES))
        return cls(np.asarray(rows, np.float32), tuple(verdicts))


def named_words(record: StatementRecord) -> set[str]:
    """The word families of what the index calls the statement besides its text: its name ("Nakayama's lemma"),
    its section title and the words of its label (``lemma-quasi-finite-separated-pass-through-finite``)."""
    label = " ".join(_LABEL_WORDS.findall(record.label.replace("-", " ")))
    return topic_words(f"{record.name} {record.section} {label}")


def known_words(record: StatementRecord, definitions: DefinitionsInScope | None = None) -> set[str]:
    """Every word family the index knows the statement by: its text, its names and the definitions in its scope."""
    return topic_words(record.text) | named_words(record) | _scope_words(record, definitions)


def _scope_words(record: StatementRecord, definitions: DefinitionsInScope | None) -> set[str]:
    if definitions is None:
        return set()
    words: set[str] = set()
    for definition in definitions(record.id):
        words |= topic_words(definition.name) | named_words(definition)
    return words


def read_claim(question: str | AskedQuestion, record: StatementRecord) -> ClaimComparison:
    """The claim reading of ``record`` on the yes/no ``question``, the statement read as the index knows it: a
    question word its name, section or label holds is a word it speaks of."""
    return compare(question, record.text, record.kind.value, frozenset(named_words(record)))


def _phrases(text: str) -> set[str]:
    """Adjacent pairs of word families ("finitely presented", "main theorem"): technical terms are phrases."""
    words = [word.lower().strip("'-") for word in WORD.findall(_INLINE_MATH.sub(" ", text))]
    stems = [stem_of(word) for word in words if len(word) >= 3 and word not in STOPWORDS]
    return {f"{a} {b}" for a, b in pairwise(stems)}


def _formulas(latex: str) -> set[str]:
    """The formulas of ``latex`` as compared (rendered, spaces dropped); names of one letter left out. (A question
    is read as LaTeX first, its typed notation included: :func:`question_latex`, never run on a statement's text,
    whose long lines its typed-relation pattern was not written for.)"""
    _, formulas = split_math(latex)
    keys = {formula_key(formula) for formula in formulas}
    return {key for key in keys if len(key) > 2}


def _cover(asked: set[str], known: set[str]) -> float:
    """The share of the question's word families among ``known`` (1.0 for a question of formulas only)."""
    return len(asked & known) / len(asked) if asked else 1.0

