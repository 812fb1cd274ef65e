"""(query, statement) pairs for fine-tuning the embedding, made from an ingested corpus.

Pairs that need no LLM, each a kind of question a researcher types:

- ``name``: a statement's name (``Nakayama's lemma``) to the statement;
- ``defined-term``: a term a definition defines (``\\emph{flat}`` inside it) to the definition;
- ``section``: a section or subsection title to statements under it (a few per title);
- ``label``: the words of a label (``lemma-flat-base-change`` to ``flat base change``) to its statement,
  except the one in five reserved for evaluation (``reserved_for_evaluation``);
- ``mse``: a Math StackExchange question title to its accepted or well-scored answers;
- ``formula``: one of a statement's formulas (10 to 60 LaTeX tokens, as people paste them) to the
  statement, so that fine-tuning on words does not unlearn formula queries.

LLM-generated questions (``question``) come from :mod:`rag_app.training.question_generator`.
The positive is always the statement's ``search_text()``, the text the index embeds.
"""

from __future__ import annotations

import json
import random
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from ingestion import Source, StatementKind, StatementRecord
from rag_app.datasets.statement_names import label_words, plain_name, reserved_for_evaluation
from retriever.text.formula_share import formula_tokens

PAIR_KINDS = ("name", "defined-term", "section", "label", "mse", "formula", "question")


@dataclass(frozen=True, slots=True)
class TrainingPair:
    anchor: str  # the query
    statement_id: str  # the positive statement's record id
    kind: str  # one of PAIR_KINDS
    negative_id: str = ""  # a hard negative's record id, once mined

    def to_json(self) -> str:
        return json.dumps(asdict(self), ensure_ascii=False)

    @classmethod
    def from_json(cls, line: str) -> TrainingPair:
        return cls(**json.loads(line))


def pairs_without_llm(
    records: Sequence[StatementRecord],
    per_anchor: int = 3,
    mse_min_score: int = 1,
    seed: int = 2026,
) -> list[TrainingPair]:
    """Every no-LLM pair the records give, each anchor used for at most ``per_anchor`` statements."""
    rng = random.Random(seed)
    makers: list[tuple[str, Callable[[StatementRecord], Iterable[str]]]] = [
        ("name", _names),
        ("defined-term", _defined_terms),
        ("section", _section_titles),
        ("label", _label_words),
        ("mse", lambda record: _mse_question(record, mse_min_score)),
        ("formula", _formula_query),
    ]
    pairs: list[TrainingPair] = []
    for kind, anchors_of in makers:
        by_anchor: dict[str, list[str]] = defaultdict(list)
        for record in records:
            for anchor in anchors_of(record):
                if record.id not in by_anchor[anchor]:
                    by_anchor[anchor].append(record.id)
        for anchor in sorted(by_anchor):
            ids = by_anchor[anchor]
            chosen = ids if len(ids) <= per_anchor else rng.sample(ids, per_anchor)
            pairs.extend(TrainingPair(anchor, statement_id, kind) for statement_id in chosen)
    return pairs


def chosen_by_kind(
    pairs: Sequence[TrainingPair], kinds: Iterable[str], per_kind: int | Mapping[str, int] | None, seed: int = 2026
) -> list[TrainingPair]:
    """The pairs of ``kinds``, at most ``per_kind`` of each (a seeded sample), in their order.

    ``per_kind`` is one cap for every kind or a cap per kind named (a kind not named is kept whole).
    The generated questions are the scarce, user-shaped kind: caps on the plentiful kinds train on all of
    them beside a share of the others, where a sample of all pairs would leave one in ten.
    """
    wanted = set(kinds)
    caps = per_kind if isinstance(per_kind, Mapping) else dict.fromkeys(PAIR_KINDS, per_kind)
    unknown = (wanted | set(caps)) - set(PAIR_KINDS)
    if unknown:
        raise ValueError(f"unknown pair kinds {sorted(unknown)}; known: {', '.join(PAIR_KINDS)}")
    rng = random.Random(seed)
    positions: dict[str, list[int]] = defaultdict(list)
    for position, pair in enumerate(pairs):
        if pair.kind in wanted:
            positions[pair.kind].append(position)
    kept: list[int] = []
    for kind in PAIR_KINDS:
        of_kind, cap = positions.get(kind, []), caps.get(kind)
        kept.extend(of_kind if cap is None or len(of_kind) <= cap else rng.sample(of_kind, cap))
    return [pairs[position] for position in sorted(kept)]


def count_by_kind(pairs: Iterable[TrainingPair]) -> dict[str, int]:
    counts = Counter(pair.kind for pair in pairs)
    return {kind: counts[kind] for kind in PAIR_KINDS if counts[kind]}


def write_pairs(pairs: Iterable[TrainingPair], path: Path) -> None:
    with path.open("w", encoding="utf-8") as handle:
        for pair in pairs:
            handle.write(pair.to_json() + "\n")


def read_pairs(path: Path) -> Iterator[TrainingPair]:
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if line.strip():
                try:
                    yield TrainingPair.from_json(line)
                except (ValueError, TypeError) as error:
                    raise ValueError(f"{path}:{number}: not a training pair ({error})") from error


def _names(record: StatementRecord) -> Iterable[str]:
    if record.source is Source.MSE or not record.name:
        return []
    name = plain_name(record.name)
    return [name] if len(name) >= 3 else []


def _defined_terms(record: StatementRecord) -> Iterable[str]:
    if record.kind is not StatementKind.DEFINITION:
        return []
    terms = str(record.metadata.get("defined_terms", "")).split("; ")
    return [term for term in terms if len(term) >= 3]


def _section_titles(record: StatementRecord) -> Iterable[str]:
    if record.source is Source.MSE:
        return []
    titles = [record.section, str(record.metadata.get("subsection", ""))]
    return [plain_name(title) for title in titles if len(title) >= 4]


def _label_words(record: StatementRecord) -> Iterable[str]:
    """Label words, except those reserved for the stacks-label-words evaluation set (one in five)."""
    words = label_words(record.label) if record.label else ""
    return [words] if words and not reserved_for_evaluation(words) else []


def _formula_query(record: StatementRecord) -> Iterable[str]:
    """The statement's longest formula of 10-60 LaTeX tokens, as a formula query (``$...$``)."""
    fitting = [" ".join(f.split()) for f in record.formulas if 10 <= len(formula_tokens(f)) <= 60]
    return [f"${max(fitting, key=len)}$"] if fitting else []


def _mse_question(record: StatementRecord, min_score: int) -> Iterable[str]:
    if record.source is not Source.MSE or record.kind is not StatementKind.ANSWER or not record.title:
        return []
    accepted = bool(record.metadata.get("accepted"))
    score = int(record.metadata.get("score", 0) or 0)
    return [record.title] if accepted or score >= min_score else []
