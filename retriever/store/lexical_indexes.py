"""The two lexical indexes of an index directory, written together: BM25 over the statements' words
(``bm25/``) and BM25 over their normalized formula terms (``formula_bm25/``, with the formula counts in
``stats.json``). ``bm25.stale`` is present while the store is being changed and these not yet: found
after a crash, it makes the next search or ingest rebuild both from the store."""

from __future__ import annotations

import json
import logging
import shutil
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict
from pathlib import Path

from tqdm import tqdm

from ingestion.records import StatementRecord
from retriever.storage.atomic_files import write_text_atomically
from retriever.storage.bm25_index import DATABASE as BM25_DATABASE
from retriever.storage.bm25_index import BM25Index
from retriever.storage.bm25_segment import BM25SegmentError
from retriever.text.formula_terms import FORMULA_B, FORMULA_K1, FormulaIndexStats, formula_documents
from retriever.text.math_tokenizer import tokenize

logger = logging.getLogger(__name__)

WORDS = "bm25"
FORMULA_LEXICAL = "formula_bm25"
FORMULA_STATS = "stats.json"
LEXICAL_STALE = "bm25.stale"
# Statements read from the store per batch when the lexical indexes are rebuilt.
REBUILD_BATCH = 20_000
NO_FORMULAS = FormulaIndexStats(0, 0, 0)


class LexicalIndexes:
    """BM25 over words and over formula terms, opened once each (they follow writes from other processes)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._words: BM25Index | None = None
        self._formulas: BM25Index | None = None

    def words(self) -> BM25Index:
        """BM25 over the statements' words."""
        if self._words is None:
            self._words = BM25Index(self.directory / WORDS)
        return self._words

    def formulas(self) -> BM25Index:
        """BM25 over the statements' normalized formula terms (the lexical formula channel)."""
        if self._formulas is None:
            self._formulas = BM25Index(self.directory / FORMULA_LEXICAL, k1=FORMULA_K1, b=FORMULA_B)
        return self._formulas

    @property
    def stale(self) -> bool:
        """Whether they may not hold the store's statements (a write in progress or killed, an old index)."""
        return (
            (self.directory / LEXICAL_STALE).exists()
            or not (self.directory / WORDS / BM25_DATABASE).exists()  # absent too in an older index (bm25s)
            or not (self.directory / FORMULA_LEXICAL / BM25_DATABASE).exists()
            or not (self.directory / FORMULA_LEXICAL / FORMULA_STATS).exists()
        )

    def mark_stale(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        (self.directory / LEXICAL_STALE).touch()

    def mark_in_step(self) -> None:
        (self.directory / LEXICAL_STALE).unlink(missing_ok=True)

    def in_step(self, store_count: Callable[[], int]) -> bool:
        """Whether they hold exactly the store's statements, so that a write can update them in place.
        ``store_count`` is asked only when they are marked stale (Chroma's count scans the collection)."""
        if not self.stale:
            return True
        if store_count() == 0:  # a new index: empty lexical indexes are in step
            self.words().clear()
            self.formulas().clear()
            self.write_formula_stats(NO_FORMULAS)
            return True
        return False

    def add(self, records: Sequence[StatementRecord]) -> FormulaIndexStats:
        """Index the records' words and formula terms; returns the formula counts they add."""
        if not records:
            return NO_FORMULAS
        self.words().add([r.id for r in records], [tokenize(r.search_text()) for r in records])
        ids, documents, stats = formula_documents(records)
        self.formulas().add(ids, documents)
        return stats

    def add_words(self, records: Sequence[StatementRecord]) -> None:
        self.words().add([r.id for r in records], [tokenize(r.search_text()) for r in records])

    def add_formulas(self, records: Sequence[StatementRecord]) -> None:
        """Index the records' formula terms, with the formula counts kept up to date."""
        ids, documents, stats = formula_documents(records)
        self.formulas().add(ids, documents)
        self.write_formula_stats(self.formula_stats_or_zero() + stats)

    def remove_words(self, ids: Sequence[str]) -> None:
        self.words().delete(ids)

    def remove_formulas(self, ids: Sequence[str], removed: Sequence[StatementRecord]) -> None:
        """Forget the statements' formula terms; ``removed``, their stored records, leave the counts."""
        self.formulas().delete(ids)
        self.write_formula_stats(self.formula_stats_or_zero() - formula_documents(removed)[2])

    def rebuild(self, records: Iterable[StatementRecord], total: int, show_progress: bool = False) -> None:
        """Both indexes rebuilt from ``records`` (every statement of the store)."""
        self.mark_stale()
        self._emptied()
        stats = NO_FORMULAS
        batch: list[StatementRecord] = []
        with tqdm(total=total, unit="stmt", desc="BM25 + formula index", disable=not show_progress) as bar:
            for record in records:
                batch.append(record)
                if len(batch) >= REBUILD_BATCH:
                    stats += self.add(batch)
                    bar.update(len(batch))
                    batch = []
            stats += self.add(batch)
            bar.update(len(batch))
        self.write_formula_stats(stats)

    def _emptied(self) -> None:
        """Both emptied for a rebuild. One whose files are damaged (its catalogue malformed, a segment
        truncated) cannot be cleared in place: its directory is removed and a fresh one made, for Chroma
        holds everything it is rebuilt from."""
        for name, opener in ((WORDS, self.words), (FORMULA_LEXICAL, self.formulas)):
            try:
                opener().clear()
            except BM25SegmentError as error:
                logger.warning("%s; removing %s and rebuilding it", error, self.directory / name)
                self._close(name)
                shutil.rmtree(self.directory / name)
                opener().clear()

    def _close(self, name: str) -> None:
        index = self._words if name == WORDS else self._formulas
        if index is not None:
            index.close()
        if name == WORDS:
            self._words = None
        else:
            self._formulas = None

    def formula_stats(self) -> FormulaIndexStats | None:
        """Formulas indexed and how many were malformed (fell back to raw tokens)."""
        path = self.directory / FORMULA_LEXICAL / FORMULA_STATS
        return FormulaIndexStats(**json.loads(path.read_text())) if path.exists() else None

    def formula_stats_or_zero(self) -> FormulaIndexStats:
        return self.formula_stats() or NO_FORMULAS

    def write_formula_stats(self, stats: FormulaIndexStats) -> None:
        path = self.directory / FORMULA_LEXICAL / FORMULA_STATS
        path.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomically(path, json.dumps(asdict(stats)))
