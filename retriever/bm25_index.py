"""A persisted BM25 index over statement search texts (bm25s)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import bm25s
import numpy as np

from retriever.math_tokenizer import tokenize
from retriever.types import ScoredId

_IDS_FILE = "ids.json"
_EMPTY = "\x00empty"


class BM25Index:
    """BM25 (Lucene variant) over tokenized texts, with the document ids kept beside it."""

    def __init__(self, ids: list[str], model: bm25s.BM25 | None) -> None:
        self.ids = ids
        self._model = model

    @classmethod
    def build(cls, ids: Sequence[str], texts: Sequence[str], k1: float = 1.2, b: float = 0.75) -> BM25Index:
        """Index texts with the math-aware word tokenizer."""
        return cls.build_from_tokens(ids, [tokenize(text) for text in texts], k1, b)

    @classmethod
    def build_from_tokens(
        cls, ids: Sequence[str], documents: Sequence[list[str]], k1: float = 1.2, b: float = 0.75
    ) -> BM25Index:
        """Index documents already cut into terms (the formula channel brings its own analysis)."""
        if not ids:
            return cls([], None)
        model = bm25s.BM25(k1=k1, b=b)
        # bm25s cannot index an empty document; a placeholder term keeps ids and rows aligned
        model.index([terms or [_EMPTY] for terms in documents], show_progress=False)
        return cls(list(ids), model)

    def __len__(self) -> int:
        return len(self.ids)

    def save(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        if self._model is not None:
            self._model.save(str(directory))
        (directory / _IDS_FILE).write_text(json.dumps(self.ids))

    @classmethod
    def load(cls, directory: Path) -> BM25Index:
        ids_file = directory / _IDS_FILE
        if not ids_file.exists():
            return cls([], None)
        ids = json.loads(ids_file.read_text())
        model = bm25s.BM25.load(str(directory), mmap=True) if ids else None
        return cls(ids, model)

    def search(self, query: str, k: int) -> list[ScoredId]:
        return self.search_terms(tokenize(query), k)

    def search_terms(self, terms: Sequence[str], k: int) -> list[ScoredId]:
        if self._model is None or k <= 0:
            return []
        known = [term for term in terms if term in self._model.vocab_dict and term != _EMPTY]
        if not known:
            return []
        documents, scores = self._model.retrieve([known], k=min(k, len(self.ids)), show_progress=False, n_threads=1)
        return [
            ScoredId(self.ids[int(doc)], float(score))
            for doc, score in zip(np.asarray(documents)[0], np.asarray(scores)[0], strict=True)
            if score > 0
        ]
