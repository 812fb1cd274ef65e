"""Benchmark: what duplicate groups cost at ingest and at search.

1. Ingest (storage side): the same 5,000 statements and vectors of the development index written into a
   fresh index with duplicate detection off and on (``add_embedded``: Chroma, BM25, formula index, and
   the groups). Parsing and embedding, which dominate a real ingest, are the same either way and left out.
2. Search: ``MathRAG.search`` (hybrid-formula, top 10) on the development index with collapsing off and
   on, over the stacks-slogans-dev queries: p50/p95, also in query embeddings (the queries' embedding alone,
   measured in the same run: bench/floors.py).
3. The groups table at 1M statements (synthetic rows, 1% in groups of two): the lookups one collapsed
   search makes (group and other places of 20 results), and recording 1,000 new statements without the
   vector query (which is one batched HNSW query, the same kind a dense search makes).

    .venv/bin/python bench/duplicate_groups.py [--index DIR] [--out bench/results]

Needs the development index (`rag-app eval --dev` builds it). Results: ``duplicate_groups.{json,md}``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

import numpy as np
from floors import query_embedding_floor, ratio

from ingestion.records import Source, StatementKind, StatementRecord
from rag_app.datasets.query_set import QuerySet
from rag_app.evaluation.runner import eval_index_dir
from rag_app.pipeline import MathRAG
from rag_app.settings import Settings
from retriever.store.duplicate_groups import DuplicateGroups
from retriever.types import ScoredId


def percentiles(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {"p50_ms": round(statistics.median(ordered), 2), "p95_ms": round(ordered[int(0.95 * (len(ordered) - 1))], 2)}


def ingest_cost(settings: Settings, dev: MathRAG, statements: int) -> dict[str, object]:
    ids = sorted(dev.index.store.all_ids())[:statements]
    records = dev.index.store.get(ids)
    stored = dev.index.store.vectors(ids)
    vectors = np.stack([stored[r.id] for r in records])
    result: dict[str, object] = {"statements": len(records)}
    for detect in (False, True, False, True):  # the second of each is reported (the first warms caches)
        with tempfile.TemporaryDirectory() as work:
            rag = MathRAG(
                settings.model_copy(update={"index_dir": Path(work) / "index", "data_dir": Path(work)}, deep=True)
            )
            rag.settings.duplicates.detect = detect
            started = time.perf_counter()
            for start in range(0, len(records), 512):  # the batches MathRAG.ingest writes
                rag.index.add_embedded(records[start : start + 512], vectors[start : start + 512])
            seconds = time.perf_counter() - started
            result["on" if detect else "off"] = {"seconds": round(seconds, 2), "per_s": round(len(records) / seconds)}
            if detect:
                result["groups_found"] = len(list(rag.indexes.duplicate_groups().groups()))
            rag.close()
    return result


def search_cost(dev: MathRAG, queries: list[str]) -> dict[str, object]:
    result: dict[str, object] = {"queries": len(queries)}
    for collapse in (False, True, False, True):  # twice each, the second run is the one reported (warm)
        dev.settings.duplicates.collapse = collapse
        times = []
        for query in queries:
            started = time.perf_counter()
            dev.search(query, 10, "hybrid-formula")
            times.append(1000 * (time.perf_counter() - started))
        result["on" if collapse else "off"] = percentiles(times)
    # the floor, in the same run (bench/floors.py): the queries' embedding alone
    floor = query_embedding_floor(dev.index.embedder, queries)
    result["floor_query_embedding"] = floor
    for side in ("off", "on"):
        result[side]["p50_x_embedding"] = ratio(result[side]["p50_ms"], floor["p50_ms"])  # type: ignore[index]
    return result


def _letters(number: int) -> str:
    """A distinct word per number (numbers outside formulas do not count in the text key)."""
    return "".join(chr(97 + (number // 26**place) % 26) for place in range(4))


class NoNeighbours:
    def query_many(self, embeddings: np.ndarray, k: int) -> list[list[ScoredId]]:
        return [[] for _ in range(len(embeddings))]


def table_at_a_million(rows: int = 1_000_000) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as work:
        groups = DuplicateGroups(Path(work))
        started = time.perf_counter()
        with groups._connect() as db:  # bulk rows: as `duplicates --rebuild` would leave them
            db.executemany(
                "INSERT INTO statement VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    (f"s{i}", f"s{i - i % 2}" if i < rows // 100 else f"s{i}", f"p{i}", f"t{i - i % 2}", "f", "w",
                     f"p{i}", f"Paper {i}", f"https://arxiv.org/abs/{i}")
                    for i in range(rows)
                ),
            )  # fmt: skip
        filled = time.perf_counter() - started
        rng = np.random.default_rng(0)
        lookups = []
        for _ in range(200):
            ids = [f"s{i}" for i in rng.integers(0, rows, 18)] + ["s0", "s1"]
            started = time.perf_counter()
            groups.groups_of(ids)
            groups.places(ids)
            lookups.append(1000 * (time.perf_counter() - started))
        new = [
            StatementRecord(id=f"n{i}", source=Source.ARXIV, kind=StatementKind.LEMMA, paper_id=f"new{i}",
                            text=f"A new statement about the object {_letters(i)} holds.")
            for i in range(1000)
        ]  # fmt: skip
        started = time.perf_counter()
        groups.add(new, np.zeros((1000, 4), dtype=np.float32), NoNeighbours())
        add_seconds = time.perf_counter() - started
        size = (Path(work) / "duplicates.sqlite").stat().st_size
        return {"rows": rows, "fill_s": round(filled, 1), "collapse_lookups": percentiles(lookups),
                "add_1000_s": round(add_seconds, 3), "bytes": size}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--index", type=Path, default=None, help="development index (default: the eval index)")
    parser.add_argument("--statements", type=int, default=5000)
    parser.add_argument("--out", type=Path, default=Path("bench/results"))
    args = parser.parse_args()
    settings = Settings.load()
    dev = MathRAG(settings.model_copy(update={"index_dir": args.index or eval_index_dir(settings)}, deep=True))
    if dev.indexes.duplicate_groups().count() != dev.index.count():
        dev.rebuild_duplicates(show_progress=True)
    slogans = QuerySet.load(settings.evaluation.sets_dir / "stacks-slogans-dev.v2.jsonl")
    results = {
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs",
        "index_statements": dev.index.count(),
        "groups": len(list(dev.indexes.duplicate_groups().groups())),
        "ingest": ingest_cost(settings, dev, args.statements),
        "search": search_cost(dev, [q.text for q in slogans.queries]),
        "million": table_at_a_million(),
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "duplicate_groups.json").write_text(json.dumps(results, indent=1) + "\n")
    ingest, search, million = results["ingest"], results["search"], results["million"]
    off, on = search["off"], search["on"]
    lookups = million["collapse_lookups"]
    lines = [
        f"# Duplicate groups: cost at ingest and search ({results['machine']})",
        "",
        f"Development index: {results['index_statements']:,} statements, {results['groups']} duplicate groups.",
        "",
        "| what | off | on |",
        "| --- | ---: | ---: |",
        f"| write {ingest['statements']:,} embedded statements: statements/s | {ingest['off']['per_s']} "
        f"| {ingest['on']['per_s']} |",
        f"| search hybrid-formula top 10, {search['queries']} slogans: p50 ms | {off['p50_ms']} | {on['p50_ms']} |",
        f"| same: p95 ms | {off['p95_ms']} | {on['p95_ms']} |",
        f"| same: p50 in query embeddings (floor p50 {search['floor_query_embedding']['p50_ms']} ms, same run) "
        f"| {off['p50_x_embedding']}x | {on['p50_x_embedding']}x |",
        "",
        f"Groups table at {million['rows']:,} statements ({million['bytes'] / 1e6:.0f} MB): the lookups of one "
        f"collapsed search (20 results) p50 {lookups['p50_ms']} ms, p95 {lookups['p95_ms']} ms; recording 1,000 new "
        f"statements (without the vector query) {million['add_1000_s']} s.",
        "",
    ]
    (args.out / "duplicate_groups.md").write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
