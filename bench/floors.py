"""Floors measured in the same run as a benchmark's figures, so that each figure can also be read as a ratio.

A slower or busier machine moves every millisecond a benchmark reports; it moves the floor beside it
too. So each timing benchmark measures, in the same process and just before or after its own figures:

- the query embedding alone (:func:`query_embedding_floor`): what one search cannot go below;
- the model's prompt reading rate (:func:`model_floor`): what the model's part of an answer is made of;
- the embedder's own statements per second (:func:`embedder_floor`): what an ingest cannot go above.

and reports e.g. "search p50 = 2.0x the query embedding's p50" beside the milliseconds (issue 75).
"""

from __future__ import annotations

import statistics
import time
import uuid
from collections.abc import Sequence
from typing import Any

import numpy as np


def percentile(values: Sequence[float], q: float) -> float:
    return round(float(np.percentile(values, q)), 2) if len(values) else float("nan")


def query_embedding_floor(embedder: Any, queries: Sequence[str], repeats: int = 1) -> dict[str, float]:
    """Each query embedded alone, as a search embeds it (``embed_query``): p50 and p95 in ms."""
    embedder.embed_query("warm up")
    times = []
    for _ in range(repeats):
        for query in queries:
            started = time.perf_counter()
            embedder.embed_query(query)
            times.append((time.perf_counter() - started) * 1000)
    return {"p50_ms": percentile(times, 50), "p95_ms": percentile(times, 95), "queries": len(times)}


# About 300 tokens of mathematical prose, read by the model as a prompt (a fresh one each time: a server's
# prompt cache would otherwise find all of it).
_PROSE = (
    "Let R be a commutative ring with identity and let M be a finitely generated R-module. If I is an ideal "
    "of R contained in the Jacobson radical and IM = M, then M = 0. More generally, if N is a submodule of M "
    "with M = N + IM, then M = N. A local ring has a unique maximal ideal; over a local ring, a minimal set of "
    "generators of M is given by any lift of a basis of M/mM over the residue field. A module is flat when "
    "tensoring with it preserves injections; a finitely presented flat module over a local ring is free. "
    "Every principal ideal domain is a unique factorization domain, and every Euclidean domain is a principal "
    "ideal domain. A Noetherian ring is one whose ideals are finitely generated; by Hilbert's basis theorem, "
    "the polynomial ring over a Noetherian ring is Noetherian. "
)


def model_floor(client: Any, repeats: int = 3) -> dict[str, float]:
    """The served model's prompt reading rate: a ~300-token prompt it has not seen, one token answered,
    ``repeats`` times; tokens per second (median) and ms per prompt token."""
    rates = []
    for _ in range(repeats):
        prompt = f"[{uuid.uuid4().hex}] {_PROSE} Reply with one word."
        tokens = client.count_tokens(prompt) or len(prompt) / 4
        started = time.perf_counter()
        client.chat([{"role": "user", "content": prompt}], max_tokens=1, temperature=0.0)
        rates.append(tokens / (time.perf_counter() - started))
    rate = statistics.median(rates)
    return {"prompt_tokens_per_s": round(rate, 1), "ms_per_prompt_token": round(1000 / rate, 2)}


def embedder_floor(embedder: Any, texts: Sequence[str], batch_size: int = 512) -> dict[str, float]:
    """The embedder's own rate on ``texts`` (statements), in batches as an ingest sends them
    (``ingestion.batch_statements``: the encoder sorts each batch by length, so the batch size matters)."""
    embedder.embed_documents(list(texts[:4]))
    started = time.perf_counter()
    for start in range(0, len(texts), batch_size):
        embedder.embed_documents(list(texts[start : start + batch_size]))
    seconds = time.perf_counter() - started
    return {"statements_per_s": round(len(texts) / seconds, 1), "statements": len(texts)}


def ratio(value: float | None, floor: float | None) -> float | None:
    """``value / floor`` rounded for a table (None where either is unknown)."""
    if value is None or not floor or value != value:
        return None
    return round(value / floor, 2)
