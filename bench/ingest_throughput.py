"""Benchmark: ingestion throughput against the raw encoder, on the same texts in the same run.

Three measurements on the Stacks project (or its first N chapters):

1. parse only: LaTeX to statement records, no embedding (one process, then every core);
2. raw encoder: the embedding model's own ``SentenceTransformer.encode`` on the records' texts
   (batched; sentence-transformers sorts by length), nothing else;
3. full ingest: ``MathRAG.ingest`` into a fresh index (parse, embed, store in Chroma, BM25 and the
   formula index), with the time of each stage.

The pipeline's own overhead is ``1 - full / raw`` (in statements per second); the goal is within 10%.

    python bench/ingest_throughput.py [--chapters 30] [--device cpu|cuda] [--out bench/results]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

import torch

from ingestion.ingest_limits import IngestLimits
from ingestion.latex_ingestor import LatexIngestor
from ingestion.latex_sources import LatexPaper, PaperFinder
from ingestion.records import StatementRecord
from rag_app import MathRAG, Settings
from rag_app.search.embedder_factory import make_embedder
from retriever import StatementIndex
from retriever.models.embedder import Embedder
from retriever.store.chroma_store import ChromaStatementStore
from retriever.store.derived_stores import FormulaIndexStore, WordIndexStore

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_STACKS = ROOT.parent / "shared" / "corpora" / "stacks-project"


def machine(device: str) -> dict[str, Any]:
    info: dict[str, Any] = {
        "platform": platform.platform(),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "device": device,
    }
    if device.startswith("cuda") and torch.cuda.is_available():
        info["gpu"] = torch.cuda.get_device_name(0)
    return info


def subset(stacks: Path, chapters: int | None, workdir: Path) -> Path:
    """The Stacks tree, or a copy of it with only its first ``chapters`` chapters (ingestion skips symlinks)."""
    if not chapters:
        return stacks
    tree = workdir / "stacks-subset"
    tree.mkdir()
    tex = sorted(p for p in stacks.iterdir() if p.suffix == ".tex")
    keep = {p.name for p in tex[:chapters]} | {"preamble.tex"}
    for path in stacks.iterdir():
        if (path.suffix != ".tex" or path.name in keep) and path.is_file():
            shutil.copy2(path, tree / path.name)
    return tree


def parse_only(tree: Path, workdir: Path) -> tuple[list[StatementRecord], float]:
    workdir.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    ingestor = LatexIngestor(IngestLimits())
    records: list[StatementRecord] = []
    for paper in PaperFinder(workdir).find(tree):
        if isinstance(paper, LatexPaper):
            records.extend(ingestor.ingest_paper(paper).records)
    return records, time.perf_counter() - started


def raw_encoder(embedder: Embedder, texts: list[str]) -> float:
    model = embedder.model  # loaded before the clock starts, as in the pipeline
    model.encode(texts[:32], batch_size=embedder.batch_size)  # warm-up
    started = time.perf_counter()
    model.encode(texts, batch_size=embedder.batch_size, normalize_embeddings=True, convert_to_numpy=True)
    return time.perf_counter() - started


class StageClock:
    """Wall time spent inside chosen methods during the full ingest (wrapped, then restored)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self._restore: list[Callable[[], None]] = []

    def wrap(self, owner: type, method: str, stage: str) -> None:
        original = getattr(owner, method)

        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                self.seconds[stage] += time.perf_counter() - started

        setattr(owner, method, timed)
        self._restore.append(lambda: setattr(owner, method, original))

    @contextmanager
    def installed(self) -> Iterator[StageClock]:
        try:
            yield self
        finally:
            for restore in reversed(self._restore):
                restore()


def full_ingest(tree: Path, workdir: Path, device: str, batch_size: int) -> tuple[int, float, dict[str, float]]:
    settings = Settings(data_dir=workdir / "data", index_dir=workdir / "index")
    settings.embedding.device = device
    settings.embedding.batch_size = batch_size
    rag = MathRAG(settings)
    rag.index.embedder.model  # noqa: B018 (loaded before the clock starts, as for the raw encoder)
    clock = StageClock()
    clock.wrap(Embedder, "embed_documents", "embed")
    clock.wrap(ChromaStatementStore, "upsert", "store")
    clock.wrap(ChromaStatementStore, "existing_ids", "store")
    clock.wrap(WordIndexStore, "add", "lexical")
    clock.wrap(FormulaIndexStore, "add", "lexical")  # BM25 + formula index, updated in place
    clock.wrap(StatementIndex, "rebuild_lexical", "lexical")  # only after an interrupted write
    with clock.installed():
        started = time.perf_counter()
        report = rag.ingest([tree], show_progress=True)
        seconds = time.perf_counter() - started
    stages = dict(clock.seconds)
    stages["parse and other"] = seconds - sum(stages.values())
    return report.statements, seconds, stages


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stacks", type=Path, default=DEFAULT_STACKS)
    parser.add_argument("--chapters", type=int, default=30, help="first N chapters; 0: all of them")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="bench-ingest-") as tmp:
        workdir = Path(tmp)
        tree = subset(args.stacks, args.chapters, workdir)
        records, parse_seconds = parse_only(tree, workdir / "parse")
        texts = [record.search_text() for record in records]
        print(f"parse only: {len(records)} statements in {parse_seconds:.1f} s")
        settings = Settings(data_dir=workdir / "data")
        settings.embedding.device, settings.embedding.batch_size = args.device, args.batch_size
        embedder = make_embedder(settings)  # the same model, sequence length and batch as the pipeline
        encode_seconds = raw_encoder(embedder, texts)
        print(f"raw encoder: {len(texts) / encode_seconds:.1f} statements/s")
        statements, ingest_seconds, stages = full_ingest(tree, workdir / "full", args.device, args.batch_size)
        print(f"full ingest: {statements / ingest_seconds:.1f} statements/s")
    raw_rate = len(texts) / encode_seconds
    full_rate = statements / ingest_seconds
    result = {
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "machine": machine(args.device),
        "embedder": embedder.identity,
        "batch_size": args.batch_size,
        "chapters": args.chapters or "all",
        "statements": len(records),
        "parse_only": {"seconds": round(parse_seconds, 2), "statements_per_s": round(len(records) / parse_seconds, 1)},
        "raw_encoder": {"seconds": round(encode_seconds, 2), "statements_per_s": round(raw_rate, 1)},
        "full_ingest": {
            "seconds": round(ingest_seconds, 2),
            "statements_per_s": round(full_rate, 1),
            "stages_s": {stage: round(value, 2) for stage, value in stages.items()},
        },
        "full_over_raw": round(full_rate / raw_rate, 3),
        "pipeline_overhead": round(1 - full_rate / raw_rate, 3),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "ingest_throughput.json").write_text(json.dumps(result, indent=2) + "\n")
    stage_text = ", ".join(f"{name} {value:.1f} s" for name, value in result["full_ingest"]["stages_s"].items())
    lines = [
        f"# Ingestion throughput ({result['date']}, {result['machine']['cpus']} CPUs, {args.device})",
        "",
        f"{len(records):,} Stacks statements ({result['chapters']} chapters), {embedder.identity}, "
        f"batch {args.batch_size}.",
        "",
        "| measurement | seconds | statements/s |",
        "| --- | --- | --- |",
        f"| parse only (1 process) | {result['parse_only']['seconds']} | {result['parse_only']['statements_per_s']} |",
        f"| raw encoder | {result['raw_encoder']['seconds']} | {result['raw_encoder']['statements_per_s']} |",
        f"| full ingest | {result['full_ingest']['seconds']} | {result['full_ingest']['statements_per_s']} |",
        "",
        f"Full ingest runs at **{result['full_over_raw']:.0%}** of the raw encoder's rate "
        f"(pipeline overhead {result['pipeline_overhead']:.0%}; goal: within 10%). Stages: {stage_text}.",
    ]
    (args.out / "ingest_throughput.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
