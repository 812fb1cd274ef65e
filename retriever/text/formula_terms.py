"""What the lexical formula channel indexes: each statement's formula terms and their counts.

The index side of :mod:`retriever.search.formula_lexical_searcher`, kept apart so that the stores
that write these terms (``retriever.store.statement_index``) import no searcher.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ingestion.records import StatementRecord
from retriever.text.formula_normalizer import normalize_formula


@dataclass(frozen=True, slots=True)
class FormulaIndexStats:
    statements: int
    formulas: int
    malformed: int  # formulas that fell back to raw tokens

    def __add__(self, other: FormulaIndexStats) -> FormulaIndexStats:
        return FormulaIndexStats(
            self.statements + other.statements, self.formulas + other.formulas, self.malformed + other.malformed
        )

    def __sub__(self, other: FormulaIndexStats) -> FormulaIndexStats:
        return FormulaIndexStats(
            self.statements - other.statements, self.formulas - other.formulas, self.malformed - other.malformed
        )


def formula_document_terms(formulas: Iterable[str]) -> tuple[list[str], int, int]:
    """The terms of a statement's formulas, with (formulas, malformed) counts."""
    terms: list[str] = []
    count = malformed = 0
    for formula in formulas:
        normalized = normalize_formula(formula)
        terms.extend(normalized.terms())
        count += 1
        malformed += normalized.malformed
    return terms, count, malformed


# Formula terms repeat far more than words (every x, every brace path); a lower k1 saturates sooner.
FORMULA_K1 = 0.9
FORMULA_B = 0.6


def formula_documents(records: Iterable[StatementRecord]) -> tuple[list[str], list[list[str]], FormulaIndexStats]:
    """Each statement's formula terms (ids, term lists) and the counts of the formulas read."""
    ids: list[str] = []
    documents: list[list[str]] = []
    formulas = malformed = 0
    for record in records:
        terms, count, bad = formula_document_terms(record.formulas)
        ids.append(record.id)
        documents.append(terms)
        formulas += count
        malformed += bad
    return ids, documents, FormulaIndexStats(len(ids), formulas, malformed)
