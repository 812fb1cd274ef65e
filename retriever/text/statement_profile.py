"""What the learned ranker reads off a statement alone, the same for every query: its statement profile.

Made once per statement, at ingest (``retriever.store.ranking_profiles`` keeps them beside the index), and
read by every search that ranks the statement (``retriever.models.ranking_features``). It lives here, with
the text's other readings, so that the store that keeps profiles imports nothing that searches.
"""

from __future__ import annotations

import math
import re
import sys
from dataclasses import dataclass

from ingestion import Source, StatementKind, StatementRecord
from retriever.text.formula_share import formula_share, formula_tokens
from retriever.text.math_tokenizer import tokenize

KINDS = tuple(StatementKind)
SOURCES = tuple(Source)
FIELDS = ("name", "section", "title", "defined_terms", "label", "text")
# Changes with the rules below (what a profile holds and how its terms are read): kept profiles of another
# version are made again.
PROFILE_RULES_VERSION = 1

_LABEL_SPLIT = re.compile(r"[-_:./\s]+")


@dataclass(frozen=True, slots=True)
class StatementProfile:
    """What is read off a statement alone, the same for every query: its columns of the row, its
    fields' terms and its formula tokens (the larger part of a row's cost: tokenizing its text)."""

    columns: tuple[float, ...]  # kind, source, log length, formula share, has name
    field_terms: tuple[frozenset[str], ...]  # in the order of FIELDS
    formula_tokens: frozenset[str]

    @classmethod
    def of(cls, record: StatementRecord) -> StatementProfile:
        text = record.text
        columns = (
            float(KINDS.index(record.kind)),
            float(SOURCES.index(record.source)),
            math.log1p(len(text)),
            formula_share(text[:4_000]),  # the opening is enough to tell prose from a formula-heavy statement
            float(bool(record.name)),
        )
        terms = _field_terms(record)
        tokens = {token for formula in record.formulas for token in formula_tokens(formula)}
        return cls(columns, tuple(_interned(terms[field]) for field in FIELDS), _interned(tokens))


def _interned(terms: set[str]) -> frozenset[str]:
    """Terms shared by many statements kept once in memory."""
    return frozenset(sys.intern(term) for term in terms)


def _field_terms(record: StatementRecord) -> dict[str, set[str]]:
    label = " ".join(_LABEL_SPLIT.split(record.label)) if record.label else ""
    defined = str(record.metadata.get("defined_terms", "") or "")
    return {
        "name": set(tokenize(record.name)),
        "section": set(tokenize(f"{record.section} {record.metadata.get('subsection', '') or ''}")),
        "title": set(tokenize(record.title)),
        "defined_terms": set(tokenize(defined)),
        "label": set(tokenize(label)),
        "text": set(tokenize(record.text[:4_000])),
    }
