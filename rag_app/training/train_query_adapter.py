"""The ``train query-adapter`` job: an ingested index in, a query adapter (a linear map) out.

A query adapter tunes the embedding on the query side only (see :mod:`retriever.models.query_adapter`),
so it trains in a minute on a CPU and never re-embeds the index. The same pairs as ``train embed``
and ``train rerank`` (names, defined terms, label words, MSE titles, formulas, generated questions),
from the training statements of the thesis's split; the loss is the softmax over every training
statement's stored vector (the exact contrastive loss: a few thousand statements fit in one matrix
product), with a pull toward the identity so that queries unlike the training ones stay near where
the base model put them. Held-out statements are scored before and after on the card. The same job
trains an adapter for the second embedding model's vectors (``--second-embedding``).

I wrote the loop (twenty lines of torch) rather than take llama-index's embedding-adapter fine-tuning:
that lives in the separate ``llama-index-finetuning`` package, whose dependencies pull in hosted-LLM
clients, and it trains against sampled negatives rather than the whole corpus.
"""

from __future__ import annotations

import os
import platform
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ingestion import StatementRecord
from rag_app.datasets.paper_split import split_of
from rag_app.settings import QueryAdapterTrainingSettings, Settings
from rag_app.training.index_store import open_index_store
from rag_app.training.question_file import QuestionFile
from rag_app.training.train_questions import default_questions_file
from rag_app.training.training_pairs import TrainingPair, count_by_kind, pairs_without_llm
from retriever.models.embedder import Embedder
from retriever.models.query_adapter import KIND, QueryAdapter, packaged_directory
from retriever.store.companion_index import CHANNEL as SECOND_CHANNEL
from retriever.store.companion_index import CompanionIndex


@dataclass
class QueryAdapterReport:
    directory: Path
    adapter: QueryAdapter
    pairs: dict[str, int]
    seconds: float


class QueryAdapterTrainer:
    """Fits ``matrix`` and ``bias`` so that adapted query vectors pick their statement's vector."""

    def __init__(self, settings: QueryAdapterTrainingSettings) -> None:
        self.settings = settings

    def train(
        self, queries: np.ndarray, statements: np.ndarray, positives: np.ndarray, show_progress: bool = False
    ) -> tuple[np.ndarray, np.ndarray, list[float]]:
        """``queries`` (n x d, unit rows), ``statements`` (m x d, unit rows), ``positives[i]``: the row of
        query i's statement. Returns the matrix, the bias and the mean loss of each epoch."""
        import torch
        from tqdm import tqdm

        settings = self.settings
        generator = torch.Generator().manual_seed(settings.seed)
        query_tensor, statement_tensor = torch.from_numpy(queries), torch.from_numpy(statements)
        targets = torch.from_numpy(positives.astype(np.int64))
        dimension = queries.shape[1]
        identity = torch.eye(dimension)
        matrix = torch.nn.Parameter(identity.clone())
        bias = torch.nn.Parameter(torch.zeros(dimension))
        optimizer = torch.optim.Adam([matrix, bias], lr=settings.learning_rate)
        losses: list[float] = []
        for _epoch in tqdm(range(settings.epochs), desc="query adapter", unit="epoch", disable=not show_progress):
            order = torch.randperm(len(query_tensor), generator=generator)
            total, batches = 0.0, 0
            for start in range(0, len(order), settings.batch_size):
                rows = order[start : start + settings.batch_size]
                adapted = torch.nn.functional.normalize(query_tensor[rows] @ matrix.T + bias, dim=-1)
                logits = adapted @ statement_tensor.T / settings.temperature
                loss = torch.nn.functional.cross_entropy(logits, targets[rows])
                loss = loss + settings.identity_weight * ((matrix - identity) ** 2).sum()
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                total, batches = total + loss.item(), batches + 1
            losses.append(round(total / max(1, batches), 4))
        return matrix.detach().numpy(), bias.detach().numpy(), losses


class TrainQueryAdapterJob:
    def __init__(self, settings: Settings, index_dir: Path, out_dir: Path | None = None) -> None:
        self.settings = settings
        self.training = settings.training.query_adapter
        self.index_dir = index_dir
        self.out_dir = out_dir

    def default_directory(self, second: bool) -> Path:
        """DATA_DIR/models/query-adapters/NAME, or NAME-dense2 for the second embedding model's adapter."""
        name = f"{self.training.name}-{SECOND_CHANNEL}" if second else self.training.name
        return self.settings.data_dir / "models" / "query-adapters" / name

    def run(
        self,
        embedder: Embedder,
        show_progress: bool = False,
        log=print,
        second: CompanionIndex | None = None,
    ) -> QueryAdapterReport:
        """Train for ``embedder``'s vectors: the index's own, or with ``second`` the second embedding
        model's (``embedder`` is then that model's), whose stored vectors are the targets."""
        started = time.perf_counter()
        store, manifest = open_index_store(self.index_dir, self.settings.store.connection())
        if second is not None:
            if second.embedder.identity != embedder.identity:
                built_by = second.embedder.identity
                raise ValueError(f"the second model's vectors are {built_by!r}'s, not {embedder.identity!r}'s")
            second.check()  # built, and by this model
        elif manifest.get("embedder") != embedder.identity:
            built_with = manifest.get("embedder")
            raise ValueError(
                f"the index in {self.index_dir} was embedded with {built_with!r}, not {embedder.identity!r}; "
                "train the adapter with the index's embedder"
            )
        out_dir = self.out_dir or self.default_directory(second is not None)
        records = list(store.iter_records())
        if not records:
            raise ValueError(f"the index in {self.index_dir} holds no statements")
        split = split_of(records, self.settings.training.embed)  # the split `train embed` and `train rerank` use
        train_records = split.training_records(records)
        held_out = [record for record in records if not split.is_training(record)]
        kinds = self.training.second_pair_kinds if second is not None else self.training.pair_kinds
        pairs = self._pairs(train_records, kinds, include_questions=True)
        if len(pairs) < 2:
            raise ValueError(f"too few training pairs ({len(pairs)}) in {self.index_dir}; ingest more statements first")
        log(f"{len(records):,} statements; split: {split.summary()}; pairs: {count_by_kind(pairs)}")
        ids = [record.id for record in records]
        vectors = store.vectors(ids) if second is None else second.vectors(ids)
        if len(vectors) < len(ids):
            raise ValueError(
                f"{len(ids) - len(vectors)} of {len(ids)} statements in {self.index_dir} have no vector; "
                + ("catch up with `rag-app build-dense2`" if second is not None else "rebuild with `rag-app reindex`")
            )
        train_rows = {record.id: row for row, record in enumerate(train_records)}
        statements = np.stack([vectors[record.id] for record in train_records]).astype(np.float32)
        anchors = sorted({pair.anchor for pair in pairs})
        anchor_vectors = embedder.embed_queries(anchors, show_progress)
        anchor_row = {anchor: row for row, anchor in enumerate(anchors)}
        queries = np.stack([anchor_vectors[anchor_row[pair.anchor]] for pair in pairs])
        positives = np.array([train_rows[pair.statement_id] for pair in pairs])
        matrix, bias, losses = QueryAdapterTrainer(self.training).train(queries, statements, positives, show_progress)
        card: dict[str, Any] = {
            "kind": KIND,
            "identity": f"{self.training.name}-{time.strftime('%Y%m%d%H%M%S')}",
            "embedder": embedder.identity,
            "vectors": SECOND_CHANNEL if second is not None else "index",
            "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "machine": f"{platform.platform()}, {os.cpu_count()} CPUs",
            "training": self.training.model_dump(mode="json"),
            "data": {
                "statements": len(records),
                "train_statements": len(train_records),
                "pairs": len(pairs),
                "pairs_by_kind": count_by_kind(pairs),
            },
            "split": split.summary(),
            "losses": losses,
        }
        adapter = QueryAdapter(matrix, bias, card)
        held_out_check = self._held_out_check(adapter, embedder, held_out, kinds, records, vectors)
        card["metrics"] = {"held_out": held_out_check}
        adapter.save(out_dir)
        split.save(out_dir / "split.json")
        return QueryAdapterReport(out_dir, adapter, count_by_kind(pairs), round(time.perf_counter() - started, 1))

    def _pairs(self, records: list[StatementRecord], kinds: list[str], include_questions: bool) -> list[TrainingPair]:
        embed_training = self.settings.training.embed
        pairs = pairs_without_llm(records, embed_training.per_anchor, embed_training.mse_min_score, self.training.seed)
        if include_questions:
            questions = QuestionFile.load(default_questions_file(self.settings))
            pairs.extend(questions.pairs({record.id for record in records}))
        return [pair for pair in pairs if pair.kind in kinds]

    def _held_out_check(
        self,
        adapter: QueryAdapter,
        embedder: Embedder,
        held_out: list[StatementRecord],
        kinds: list[str],
        records: list[StatementRecord],
        vectors: dict[str, np.ndarray],
    ) -> dict[str, Any]:
        """Hit@10 over the whole index for pairs of statements never trained on, base and adapted, by kind."""
        pairs = self._pairs(held_out, kinds, include_questions=False)
        if not pairs:
            return {"queries": 0}
        matrix = np.stack([vectors[record.id] for record in records])
        row_of = {record.id: row for row, record in enumerate(records)}
        queries = embedder.embed_queries([pair.anchor for pair in pairs])
        adapted = np.stack([adapter.apply(vector) for vector in queries])
        found: dict[str, dict[str, list[bool]]] = defaultdict(lambda: {"base": [], "adapted": []})
        for name, query_matrix in (("base", queries), ("adapted", adapted)):
            top = np.argsort(-(query_matrix @ matrix.T), axis=1)[:, :10]
            for pair, rows in zip(pairs, top, strict=True):
                found[pair.kind][name].append(row_of[pair.statement_id] in rows)
        by_kind = {
            kind: {
                "queries": len(values["base"]),
                "base": round(float(np.mean(values["base"])), 3),
                "adapted": round(float(np.mean(values["adapted"])), 3),
            }
            for kind, values in sorted(found.items())
        }
        return {"queries": len(pairs), "hit@10": by_kind}


def publish_query_adapter(directory: Path) -> Path:
    """Ship a trained adapter inside the package, beside those of other embedders
    (``retrieval.query_adapter = "packaged"`` or ``"auto"`` with the embedder it was trained for)."""
    adapter = QueryAdapter.load(str(directory))
    return adapter.save(packaged_directory(adapter.embedder))
