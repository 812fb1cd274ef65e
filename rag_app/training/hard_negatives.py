"""Hard negatives as in the reference thesis: BM25 by the query, within the gold statement's
category bucket, never from the gold paper, reranked by the current model's cosine.

Only training statements are candidates, so held-out statements stay unseen by the trainer.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Mapping, Sequence

import numpy as np
from tqdm import tqdm

from ingestion import Source, StatementRecord
from rag_app.training.training_pairs import TrainingPair
from retriever.models.embedder import Embedder
from retriever.storage.bm25_index import BM25Index


def category_bucket(record: StatementRecord) -> str:
    """The arXiv primary category (``math.AG``), else the first listed one, else the source."""
    primary = str(record.metadata.get("primary_category", "")).strip()
    if primary:
        return primary.lower()
    listed = [c for c in re.split(r"[\s;,]+", str(record.metadata.get("categories", ""))) if c]
    if listed:
        return listed[0].lower()
    return "mse" if record.source is Source.MSE else "uncategorized"


class HardNegativeMiner:
    """Mines one hard negative per pair from ``records`` (the training statements)."""

    def __init__(
        self,
        records: Sequence[StatementRecord],
        embedder: Embedder,
        candidates: int = 30,
        vectors: Mapping[str, np.ndarray] | None = None,
    ) -> None:
        self.records = {record.id: record for record in records}
        self.buckets = {record.id: category_bucket(record) for record in records}
        self.embedder = embedder
        self.candidates = candidates
        self.bm25 = BM25Index.build(list(self.records), [r.search_text() for r in self.records.values()])
        self._vectors: dict[str, np.ndarray] = dict(vectors or {})

    def mine(self, pairs: Sequence[TrainingPair], show_progress: bool = False) -> list[TrainingPair]:
        """The pairs with ``negative_id`` set where a candidate was found (else left empty)."""
        golds: dict[str, set[str]] = defaultdict(set)  # an anchor's other positives are never its negatives
        for pair in pairs:
            golds[pair.anchor].add(pair.statement_id)
        anchors = sorted(golds)
        anchor_vectors = dict(zip(anchors, self.embedder.embed_documents(anchors, show_progress), strict=True))
        mined = []
        for pair in tqdm(pairs, desc="hard negatives", unit="pair", disable=not show_progress):
            gold = self.records.get(pair.statement_id)
            if gold is None:
                mined.append(pair)
                continue
            bucket = self.buckets[gold.id]
            candidates = [
                hit.id
                for hit in self.bm25.search(pair.anchor, self.candidates * 3)
                if hit.id not in golds[pair.anchor]
                and self.records[hit.id].paper_id != gold.paper_id
                and self.buckets[hit.id] == bucket
            ][: self.candidates]
            if not candidates:
                mined.append(pair)
                continue
            vectors = self._candidate_vectors(candidates)
            best = int(np.argmax(vectors @ anchor_vectors[pair.anchor]))
            mined.append(TrainingPair(pair.anchor, pair.statement_id, pair.kind, candidates[best]))
        return mined

    def _candidate_vectors(self, ids: list[str]) -> np.ndarray:
        missing = [i for i in ids if i not in self._vectors]
        if missing:
            texts = [self.records[i].search_text() for i in missing]
            self._vectors.update(zip(missing, self.embedder.embed_documents(texts), strict=True))
        return np.stack([self._vectors[i] for i in ids])
