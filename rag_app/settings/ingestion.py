"""Settings of ingestion: parallelism, bounds, Dask, and arXiv downloads."""

from __future__ import annotations

from pydantic import BaseModel, Field

from ingestion.ingest_limits import IngestLimits


class DaskSettings(BaseModel):
    """``ingest arxiv --dask``: parse and embed on a Dask cluster; this process stays the only writer."""

    enabled: bool = Field(False, description="parse and embed e-prints on Dask workers (the --dask flag)")
    scheduler: str | None = Field(
        None, description="address of a running scheduler (tcp://HOST:8786); unset: a LocalCluster on this machine"
    )
    workers: int = Field(2, ge=1, description="worker processes of the LocalCluster (one thread each)")
    chunk_papers: int = Field(8, ge=1, description="e-prints per task (parsed, then embedded together)")


class IngestionSettings(BaseModel):
    """Parallelism and bounds for ingestion. ``limits`` holds the bounds (``ingestion.IngestLimits``):
    statement length, macro expansion, archive sizes and the per-paper time limit."""

    workers: int | None = Field(None, ge=1, description="parser processes; unset: one per CPU core")
    isolate_papers: bool = Field(
        True, description="parse each paper in a worker process under the time limit (off: in this process, no limit)"
    )
    batch_statements: int = Field(512, ge=1, description="statements embedded and committed together")
    writer_wait_s: float = Field(
        900.0,
        ge=0,
        description="how long an ingest waits for another ingest writing the same index before it gives up "
        "(exit 6); one writer at a time per index",
    )
    nice: int = Field(
        10,
        ge=0,
        le=19,
        description="CPU priority lowered by this much for `rag-app ingest` (0: unchanged), so that "
        "answers stay quick while a month ingests: see bench/results/ask_under_load.md",
    )
    limits: IngestLimits = Field(default_factory=IngestLimits)
    dask: DaskSettings = Field(default_factory=DaskSettings)


class ArxivSettings(BaseModel):
    """Where ``ingest arxiv --download`` fetches from, and how politely."""

    oai_url: str = "https://oaipmh.arxiv.org/oai"
    eprint_url: str = "https://arxiv.org/e-print/{id}"
    set_spec: str = Field("math", description="OAI-PMH set listed for a month")
    # arXiv asks automated clients for no more than one request every three seconds.
    request_interval_s: float = Field(3.0, ge=0)
    timeout_s: float = 60.0
    retries: int = 4
    user_agent: str = "rag-app (math question answering; arXiv ingestion)"
