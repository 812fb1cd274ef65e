"""Parsing and embedding e-prints on a Dask cluster (``ingest arxiv --dask``).

The driver (the process running ``ingest arxiv``) lists each month's changed e-prints, sends them in
chunks to the cluster and writes what comes back. It stays the only writer of Chroma, BM25 and the
paper manifest, as in a local run, so resuming and deduplication work the same. Each worker parses
its e-prints under the per-paper time limit and embeds their statements with the configured embedder
(loaded once per worker process), so the driver only stores vectors. E-prints travel as bytes: the
workers need no shared disk, and the same code runs on ``LocalCluster`` here and on a cluster of GPU
machines (``--dask-scheduler tcp://HOST:8786``).
"""

from __future__ import annotations

import tempfile
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Generic, TypeVar

import numpy as np

from ingestion.contained_paths import contained_path
from ingestion.ingest_limits import IngestLimits
from ingestion.latex_ingestor import PaperStatements
from ingestion.paper_pool import parse_in_pool
from ingestion.paper_worker import parse_eprint
from retriever.models.embedder import Embedder

Item = TypeVar("Item")


class ClusterError(RuntimeError):
    """The Dask cluster could not be started or reached, or its workers use another embedder."""


@dataclass(frozen=True, slots=True)
class EmbedderRecipe:
    """How a worker builds the driver's embedder (the model itself is never shipped)."""

    model: str
    device: str  # as in the settings: "auto" picks the worker's own GPU when it has one
    batch_size: int
    max_seq_length: int | None
    registry_dir: str | None
    math_text: str = "unicode"

    @classmethod
    def of(cls, embedder: Embedder, device: str) -> EmbedderRecipe:
        registry = str(embedder.registry_dir) if embedder.registry_dir else None
        return cls(embedder.model_name, device, embedder.batch_size, embedder.max_seq_length, registry,
                   embedder.math_text)  # fmt: skip


@dataclass(frozen=True, slots=True)
class EprintPayload:
    name: str  # the file name, which parse_eprint reads the arXiv id and version from
    origin: str  # where the e-print came from (for messages)
    content: bytes


@dataclass(slots=True)
class WorkerOutcome:
    result: PaperStatements | None
    error: str
    vectors: np.ndarray | None  # one row per statement of ``result``
    embedder: str  # the identity of the embedder that made the vectors


@dataclass(slots=True)
class ClusterOutcome(Generic[Item]):
    item: Item
    result: PaperStatements | None
    error: str
    vectors: np.ndarray | None
    retry: bool = False  # the cluster failed (a lost worker, the scheduler), not the paper


@lru_cache(maxsize=2)
def _worker_embedder(recipe: EmbedderRecipe) -> Embedder:
    """One embedder per worker process and recipe, loaded on its first chunk."""
    from rag_app.search.embedder_factory import resolve_device

    registry = Path(recipe.registry_dir) if recipe.registry_dir else None
    device = resolve_device(recipe.device)
    return Embedder(recipe.model, device, recipe.batch_size, recipe.max_seq_length, registry_dir=registry,
                    math_text=recipe.math_text)  # fmt: skip


def parse_and_embed(payloads: list[EprintPayload], limits: IngestLimits, recipe: EmbedderRecipe) -> list[WorkerOutcome]:
    """Runs on a worker: parse each e-print (time-limited, in a child process), then embed all statements."""
    embedder = _worker_embedder(recipe)
    outcomes: list[WorkerOutcome] = []
    with tempfile.TemporaryDirectory(prefix="rag-app-worker-") as staging:
        paths = []
        for number, payload in enumerate(payloads):
            path = contained_path(Path(staging), str(number), payload.name)
            path.parent.mkdir()
            path.write_bytes(payload.content)
            paths.append((path, payload.origin))
        parsed = parse_in_pool(
            paths, lambda item: (parse_eprint, (str(item[0]), item[1], limits)), 1, limits.paper_timeout_s
        )
        for outcome in parsed:
            outcomes.append(WorkerOutcome(outcome.result, outcome.error, None, embedder.identity))
    texts = [record.search_text() for o in outcomes if o.result for record in o.result.records]
    if texts:
        vectors = embedder.embed_documents(texts)
        start = 0
        for outcome in outcomes:
            if outcome.result and outcome.result.records:
                outcome.vectors = vectors[start : start + len(outcome.result.records)]
                start += len(outcome.result.records)
    return outcomes


class DaskEprintParser:
    """Sends e-prints to a Dask cluster in chunks and yields the outcomes in submission order.

    Without a scheduler address it starts a ``LocalCluster`` of ``workers`` processes on this machine
    (one thread each: the parser and the encoder use whole cores). Use it as a context manager.
    """

    def __init__(
        self,
        embedder: Embedder,
        limits: IngestLimits,
        scheduler: str | None = None,
        workers: int = 2,
        chunk_papers: int = 8,
        device: str = "cpu",
        connect_timeout_s: float = 30.0,
    ) -> None:
        self.recipe = EmbedderRecipe.of(embedder, device)
        self.identity = embedder.identity
        self.limits = limits
        self.scheduler = scheduler
        self.workers = workers
        self.chunk_papers = chunk_papers
        self.connect_timeout_s = connect_timeout_s
        self._client: Any = None
        self._cluster: Any = None

    def __enter__(self) -> DaskEprintParser:
        import dask
        from distributed import Client, LocalCluster

        # Workers start a child process per chunk to enforce the per-paper time limit; Dask's
        # worker processes are daemonic by default, and daemonic processes may not have children.
        dask.config.set({"distributed.worker.daemon": False})
        try:
            if self.scheduler:
                self._client = Client(self.scheduler, timeout=f"{self.connect_timeout_s}s")
            else:
                self._cluster = LocalCluster(
                    n_workers=self.workers, threads_per_worker=1, processes=True, dashboard_address=None
                )
                self._client = Client(self._cluster)
        except (OSError, TimeoutError) as error:
            self.__exit__(None, None, None)
            where = self.scheduler or "a local cluster"
            raise ClusterError(f"could not start or reach the Dask scheduler at {where}: {error}") from error
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._client is not None:
            self._client.close()
        if self._cluster is not None:
            self._cluster.close()
        self._client = self._cluster = None

    @property
    def dashboard(self) -> str:
        return str(self._client.dashboard_link) if self._client is not None else ""

    def parse(self, items: Iterable[tuple[Item, Path, str]]) -> Iterator[ClusterOutcome[Item]]:
        """``items``: (what the caller wants back, the e-print's path, its origin)."""
        if self._client is None:
            raise RuntimeError("DaskEprintParser is used as a context manager")
        in_flight: deque[tuple[list[Item], Any]] = deque()
        chunk: list[tuple[Item, EprintPayload]] = []
        limit = 2 * max(self.workers, len(self._client.scheduler_info().get("workers", {})) or 1)
        for item, path, origin in items:
            chunk.append((item, EprintPayload(path.name, origin, path.read_bytes())))
            if len(chunk) >= self.chunk_papers:
                in_flight.append(self._submit(chunk))
                chunk = []
                while len(in_flight) >= limit:
                    yield from self._collect(*in_flight.popleft())
        if chunk:
            in_flight.append(self._submit(chunk))
        while in_flight:
            yield from self._collect(*in_flight.popleft())

    def _submit(self, chunk: list[tuple[Item, EprintPayload]]) -> tuple[list[Item], Any]:
        future = self._client.submit(
            parse_and_embed, [payload for _, payload in chunk], self.limits, self.recipe, pure=False
        )
        return [item for item, _ in chunk], future

    def _collect(self, items: list[Item], future: Any) -> Iterator[ClusterOutcome[Item]]:
        try:
            outcomes: list[WorkerOutcome] = future.result()
        except Exception as error:  # a lost worker fails its chunk, not the run; a rerun tries them again
            message = f"cluster task failed (retried on the next run): {type(error).__name__}: {error}"
            yield from (ClusterOutcome(item, None, message, None, retry=True) for item in items)
            return
        for item, outcome in zip(items, outcomes, strict=True):
            if outcome.vectors is not None and outcome.embedder != self.identity:
                raise ClusterError(
                    f"a Dask worker embedded with {outcome.embedder!r}, but the index uses {self.identity!r}; "
                    "the workers must see the same model (embedding.model, registry_dir)"
                )
            yield ClusterOutcome(item, outcome.result, outcome.error, outcome.vectors)
