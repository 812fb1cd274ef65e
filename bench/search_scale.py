"""Benchmark: search latency, memory and disk against index size, for each retriever mode.

The base index is the Stacks project (about 17k statements, ingested once and cached under
``--work``). Larger indexes repeat its statements with new ids and papers, each copy's vector moved by
a little noise (so that HNSW sees distinct points): the vocabulary, formula and length distributions
stay those of real statements. Each copy's text ends in two words of its own, so that copies are not
duplicates of each other (docs/retrieval-and-evaluation.md, "Duplicate statements"), except for 2% of
the statements, whose odd copies repeat the even copy before them: about the share of statements in
duplicate groups on the development corpus (1.7%). Duplicate detection and collapsing run as configured by default (on).
For each size the benchmark records

- build: writing the statements (Chroma, BM25, the formula index and the duplicate groups,
  statements/s); the full BM25 + formula rebuild from the store (needed only after a crash mid-write);
  and what a batch of 5,000 new statements costs at that size (added in place, then deleted), with
  duplicate detection on and off;
- search: p50/p95/p99 latency over the queries for each mode, measured in a fresh process so that
  its peak RSS is the searcher's own; hybrid-formula once more without collapsing duplicates;
- disk: bytes per statement, in total and per component (Chroma, BM25, formula index);
- the floor, in the same search process (bench/floors.py): the text queries' embedding alone, so that each
  search's p50 is also given in query embeddings.

    python bench/search_scale.py [--sizes 0 100000 1000000] [--work ~/.cache/rag-app-bench] [--out bench/results]
                                 [--keep bench/results/search_scale.json]

A size of 0 stands for the base index itself (``--work``/stacks-index: ``bench/ingest_stacks.py --keep-index``
leaves one there). ``--keep`` takes the rows of an earlier run for the sizes not measured now.
Results: ``search_scale.{json,md,png}``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import resource
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

import numpy as np
from floors import query_embedding_floor, ratio
from tqdm import tqdm

from ingestion.records import StatementRecord
from rag_app import MathRAG, Settings
from rag_app.result_files import save_png
from retriever import SearchMode
from retriever.storage.bm25_index import BM25Index
from retriever.store.chroma_store import ChromaStatementStore
from retriever.store.derived_stores import FormulaIndexStore, WordIndexStore
from retriever.store.duplicate_groups import DuplicateGroups
from retriever.text.formula_normalizer import normalize_formula
from retriever.text.query_formulas import query_formulas

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_STACKS = ROOT.parent / "shared" / "corpora" / "stacks-project"
MODES = [SearchMode.BM25, SearchMode.DENSE, SearchMode.HYBRID, SearchMode.HYBRID_FORMULA, SearchMode.FORMULA]
NOISE = 0.02  # norm of the perturbation of a copied unit vector (cosine to the original about 0.9998)
DUPLICATED_SHARE = 0.02  # statements whose copies come in pairs of duplicates
LEARNED_RUN = "hybrid-formula + learned ranker (top 100)"


def settings_for(index_dir: Path, work: Path, duplicates: bool = True, learned_ranker: bool = False) -> Settings:
    """The first stage alone unless ``learned_ranker`` (the packaged one, over the top 100)."""
    settings = Settings(data_dir=work / "data", index_dir=index_dir)
    settings.duplicates.detect = settings.duplicates.collapse = duplicates
    settings.ranker.model = "auto" if learned_ranker else "none"
    return settings


def copy_words(copy: int) -> str:
    """Two letter-only words of copy ``copy`` (digits are not words to the duplicate check): two, so
    that a copy differs from every other by more than the one word near-duplicates may differ in."""
    letters = ""
    while True:
        copy, rest = divmod(copy, 26)
        letters += chr(ord("a") + rest)
        if not copy:
            break
    return f"q{letters} z{letters}"


def copy_text(record: StatementRecord, row: int, copy: int) -> str:
    """The text of copy ``copy`` of base row ``row``: its own words, but an odd copy of a duplicated
    row says the same as the even copy before it (copy 1 repeats the base statement itself)."""
    if row % round(1 / DUPLICATED_SHARE) == 0:
        copy -= copy % 2
    return record.text if copy == 0 else f"{record.text} ({copy_words(copy)})"


def base_index(stacks: Path, work: Path) -> Path:
    directory = work / "stacks-index"
    if (directory / "manifest.json").exists() and not (directory / "bm25.stale").exists():
        return directory
    print(f"Ingesting the Stacks project into {directory} (once; reused by later runs) ...")
    report = MathRAG(settings_for(directory, work)).ingest([stacks], show_progress=True)
    print(report.summary())
    return directory


def build_scaled(base: Path, size: int, work: Path) -> tuple[Path, dict[str, Any]]:
    """An index of ``size`` statements: the base's repeated with new ids, vectors slightly moved.

    Each step is kept under ``work`` once done (``written.json``, ``lexical.json``), so a stopped run
    resumes; vectors already written are reused.
    """
    directory = work / f"index-{size}"
    written = directory / "written.json"
    if not written.exists():
        written_before = directory / "built.json"  # the name an earlier version of this script used
        if written_before.exists():
            written.write_text(written_before.read_text())
    if not written.exists():
        write = write_copies(base, directory, size)
        written.write_text(json.dumps(write))
    build = json.loads(written.read_text())
    lexical = directory / "lexical.json"
    if not lexical.exists():
        lexical.write_text(json.dumps(measure_rebuild(directory, work)))
    rebuild = {key: value for key, value in json.loads(lexical.read_text()).items() if key != "increment"}
    return directory, {**build, **rebuild}


def base_records(base: Path, work: Path) -> tuple[list[StatementRecord], np.ndarray]:
    source = MathRAG(settings_for(base, work)).index
    records = list(source.store.iter_records())
    vectors = source.store.vectors([r.id for r in records])
    return records, np.stack([vectors[r.id] for r in records])


def tagged(record: StatementRecord, row: int, copy: int) -> StatementRecord:
    """Copy ``copy`` of base row ``row``: ids and papers suffixed ``-cC``, the text of :func:`copy_text`."""
    return replace(
        record, id=f"{record.id}-c{copy}", paper_id=f"{record.paper_id}-c{copy}", text=copy_text(record, row, copy)
    )


def copies(
    records: list[StatementRecord], matrix: np.ndarray, rows: list[int], copy: int, rng: np.random.Generator
) -> tuple[list[StatementRecord], np.ndarray]:
    """Copy ``copy`` of base rows (a number beyond the index's copies), vectors moved a little."""
    chunk = [tagged(records[i], i, copy) for i in rows]
    moved = matrix[rows] + rng.normal(0, NOISE / np.sqrt(matrix.shape[1]), (len(rows), matrix.shape[1]))
    return chunk, (moved / np.linalg.norm(moved, axis=1, keepdims=True)).astype(np.float32)


def write_copies(base: Path, directory: Path, size: int) -> dict[str, Any]:
    """Write ``size`` statements (vectors, BM25 and the formula index, as an ingest does).

    The first copy is the base itself; copy ``c`` has ids and papers suffixed ``-cC``."""
    shutil.rmtree(directory, ignore_errors=True)
    records, matrix = base_records(base, directory.parent)
    target = MathRAG(settings_for(directory, directory.parent)).index
    rng = np.random.default_rng(0)
    batch = 5000
    started = time.perf_counter()
    with tqdm(total=size, unit="stmt", desc=f"writing {size:,}") as progress:
        for start in range(0, size, batch):
            rows = [i % len(records) for i in range(start, min(start + batch, size))]
            copy_of = [(start + j) // len(records) for j in range(len(rows))]
            chunk = [tagged(records[i], i, c) if c else records[i] for i, c in zip(rows, copy_of, strict=True)]
            moved = matrix[rows] + rng.normal(0, NOISE / np.sqrt(matrix.shape[1]), (len(rows), matrix.shape[1]))
            moved = np.where(np.array(copy_of)[:, None] == 0, matrix[rows], moved)
            moved /= np.linalg.norm(moved, axis=1, keepdims=True)
            target.add_embedded(chunk, moved.astype(np.float32))
            progress.update(len(chunk))
    seconds = time.perf_counter() - started
    return {
        "statements": target.count(),
        "write_s": round(seconds, 1),
        "write_statements_per_s": round(size / seconds, 1),
    }


def measure_rebuild(directory: Path, work: Path) -> dict[str, Any]:
    """The full BM25 + formula rebuild from the store (only ever needed after a crash mid-write)."""
    index = MathRAG(settings_for(directory, work)).index
    started = time.perf_counter()
    index.rebuild_lexical(show_progress=True)
    return {
        "lexical_rebuild_s": round(time.perf_counter() - started, 1),
        "lexical_segments": index.lexical_index().segment_count,
    }


def measure_increment(base: Path, directory: Path, work: Path, increment: int = 5000) -> dict[str, Any]:
    """What a batch of ``increment`` new statements costs at this size (vectors given, as a cluster
    worker sends them): written, then deleted again; with the time spent in Chroma, in BM25 + formula
    and in duplicate detection. Measured with detection on (``increment``) and off (``increment_plain``)."""
    records, matrix = base_records(base, work)
    increment = min(increment, len(records))  # a base smaller than a batch (a trial run on a few chapters)
    result = {}
    for name, detect, copy in [("increment", True, 10_000), ("increment_plain", False, 20_000)]:
        index = MathRAG(settings_for(directory, work, duplicates=detect)).index
        index.searchable_count()  # BM25 opened (and checked) as a running ingest has it
        chunk, vectors = copies(records, matrix, list(range(increment)), copy, np.random.default_rng(1))
        timer: dict[str, float] = {}
        restore = []
        for owner, method, step in [
            (WordIndexStore, "add", "add_lexical"),
            (FormulaIndexStore, "add", "add_lexical"),
            (BM25Index, "delete", "delete_lexical"),
            (ChromaStatementStore, "upsert", "add_chroma"),
            (ChromaStatementStore, "delete", "delete_chroma"),
            (DuplicateGroups, "add", "add_duplicates"),
            (DuplicateGroups, "remove", "delete_duplicates"),
        ]:
            original = getattr(owner, method)
            restore.append((owner, method, original))
            setattr(owner, method, _timed(original, step, timer))
        try:
            t0 = time.perf_counter()
            index.add_embedded(chunk, vectors)
            add_seconds = time.perf_counter() - t0
            t0 = time.perf_counter()
            index.remove_papers(sorted({r.paper_id for r in chunk}))
            delete_seconds = time.perf_counter() - t0
        finally:
            for owner, method, original in restore:
                setattr(owner, method, original)
        assert index.count() == len(index.lexical_index()), "the lexical index lost step with the store"
        result[name] = {
            "statements": increment,
            "add_s": round(add_seconds, 2),
            "add_statements_per_s": round(increment / add_seconds, 1),
            **{f"{step}_s": round(seconds, 2) for step, seconds in sorted(timer.items())},
            "delete_s": round(delete_seconds, 2),
        }
    return result


def _timed(function: Any, name: str, timer: dict[str, float]) -> Any:
    def timed(*args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            timer[name] = timer.get(name, 0.0) + time.perf_counter() - t0

    return timed


def queries(index_dir: Path, work: Path, count: int) -> dict[str, list[str]]:
    """Section titles (text questions) and formulas of random statements (formula queries)."""
    records = list(MathRAG(settings_for(index_dir, work)).index.store.iter_records())
    rng = random.Random(0)
    sections = sorted({r.section for r in records if r.section})
    formulas = sorted({f for r in records for f in r.formulas if 8 <= len(f) <= 80})
    return {"text": rng.sample(sections, min(count, len(sections))), "formula": rng.sample(formulas, count)}


def peak_rss_mb() -> float:
    """This process's own high-water mark. Not getrusage: a child started by fork + exec inherits the
    parent's ru_maxrss, while VmHWM starts afresh with the new program."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def measure(index_dir: Path, work: Path, query_sets: dict[str, list[str]], k: int) -> dict[str, Any]:
    """Runs in a fresh process (``--measure``): load, warm up, time every mode."""
    started = time.perf_counter()
    rag = MathRAG(settings_for(index_dir, work))
    rag.search("warm up", k, SearchMode.HYBRID_FORMULA)  # embedder, BM25 and the formula index loaded
    rag.search_formula("x^2", k)
    load_seconds = time.perf_counter() - started
    rss_loaded = peak_rss_mb()
    plain = MathRAG(settings_for(index_dir, work, duplicates=False))  # shares nothing with ``rag``: loaded once more
    plain.search("warm up", k, SearchMode.HYBRID_FORMULA)
    ranked = MathRAG(settings_for(index_dir, work, learned_ranker=True))  # the default search: ordered by LambdaMART
    ranked.search("warm up", k, SearchMode.HYBRID_FORMULA)
    runs: list[tuple[str, str, Callable[[str], object]]] = [
        (mode.value, "formula" if mode is SearchMode.FORMULA else "text", partial(rag.search, k=k, mode=mode))
        for mode in MODES
    ]
    runs += [
        ("hybrid-formula, not collapsed", "text", partial(plain.search, k=k, mode=SearchMode.HYBRID_FORMULA)),
        ("papers (hybrid-formula)", "text", partial(rag.search_papers, k=k)),
        (LEARNED_RUN, "text", partial(ranked.search, k=k, mode=SearchMode.HYBRID_FORMULA)),
    ]
    floor = query_embedding_floor(rag.index.embedder, query_sets["text"])
    latencies: dict[str, dict[str, float]] = {}
    for name, kind, search in runs:
        timings = []
        for query in query_sets[kind]:
            t0 = time.perf_counter()
            search(query)
            timings.append((time.perf_counter() - t0) * 1000)
        cuts = statistics.quantiles(timings, n=100, method="inclusive")
        latencies[name] = {
            "p50_ms": round(cuts[49], 2),
            "p95_ms": round(cuts[94], 2),
            "p99_ms": round(cuts[98], 2),
            "mean_ms": round(statistics.fmean(timings), 2),
            "p50_x_embedding": ratio(cuts[49], floor["p50_ms"]),
        }
    return {
        "floor_query_embedding": floor,
        "formula_cost": formula_cost(rag, query_sets["formula"]),
        "load_s": round(load_seconds, 1),
        "rss_loaded_mb": round(rss_loaded, 1),
        "peak_rss_mb": round(peak_rss_mb(), 1),
        "latency": latencies,
    }


def formula_cost(rag: MathRAG, formulas: list[str]) -> dict[str, float]:
    """What the formula channel's time goes into: the postings of the query's formula terms (an
    exhaustive search reads them all), and how closely its latency follows them (timed again here,
    per query, for the correlation)."""
    index = rag.index.formula_lexical_index()
    postings, times = [], []
    for formula in formulas:
        terms = [term for f in (query_formulas(formula) or [formula]) for term in normalize_formula(f).terms()]
        postings.append(index.postings_of(terms))
        t0 = time.perf_counter()
        rag.search(formula, 10, SearchMode.FORMULA)
        times.append((time.perf_counter() - t0) * 1000)
    cuts = statistics.quantiles(postings, n=100, method="inclusive")
    return {
        "postings_p50": round(cuts[49]),
        "postings_p95": round(cuts[94]),
        "latency_postings_correlation": round(float(np.corrcoef(postings, times)[0, 1]), 3),
        "ns_per_posting": round(statistics.fmean(t / max(p, 1) for t, p in zip(times, postings, strict=True)) * 1e6, 1),
    }


def disk(index_dir: Path) -> dict[str, int]:
    parts = {"chroma": index_dir / "chroma", "bm25": index_dir / "bm25", "formula_bm25": index_dir / "formula_bm25"}
    sizes = {name: sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) for name, path in parts.items()}
    sizes["total"] = sum(p.stat().st_size for p in index_dir.rglob("*") if p.is_file())
    return sizes


def plot(rows: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    sizes = [row["statements"] for row in rows]
    for mode in MODES:
        for axis, quantile in zip(axes, ("p50_ms", "p95_ms"), strict=True):
            axis.plot(
                sizes, [row["search"]["latency"][mode.value][quantile] for row in rows], marker="o", label=mode.value
            )
    for name in ("hybrid-formula, not collapsed", "papers (hybrid-formula)", LEARNED_RUN):
        for axis, quantile in zip(axes, ("p50_ms", "p95_ms"), strict=True):
            axis.plot(
                sizes,
                [row["search"]["latency"][name][quantile] for row in rows],
                marker="x",
                linestyle="--",
                label=name,
            )
    for axis, title in zip(axes, ("p50", "p95"), strict=True):
        axis.set_xscale("log")
        axis.set_yscale("log")
        axis.set_xlabel("statements in the index")
        axis.set_ylabel("search latency (ms)")
        axis.set_title(f"{title} search latency, top 10")
        axis.axhline(100, color="grey", linestyle=":", linewidth=1)
        axis.grid(True, which="both", alpha=0.3)
    axes[1].legend(fontsize=8)
    figure.tight_layout()
    save_png(figure, path, dpi=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stacks", type=Path, default=DEFAULT_STACKS)
    parser.add_argument("--sizes", type=int, nargs="+", default=[0, 100_000, 1_000_000])
    parser.add_argument("--work", type=Path, default=Path.home() / ".cache" / "rag-app-bench")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    parser.add_argument("--keep", type=Path, help="an earlier search_scale.json: its rows of other sizes are kept")
    parser.add_argument("--measure", type=Path, help=argparse.SUPPRESS)  # internal: the fresh search process
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)

    if args.measure:
        query_sets = json.loads((args.work / "queries.json").read_text())
        print(json.dumps(measure(args.measure, args.work, query_sets, args.k)))
        return

    base = base_index(args.stacks, args.work)
    query_file = args.work / "queries.json"
    if not query_file.exists():
        query_file.write_text(json.dumps(queries(base, args.work, args.queries)))
    rows = []
    for size in args.sizes:
        if size == 0:
            index_dir, build = base, {"statements": MathRAG(settings_for(base, args.work)).index.count()}
        else:
            index_dir, build = build_scaled(base, size, args.work)
        command = [sys.executable, __file__, "--measure", str(index_dir), "--work", str(args.work), "--k", str(args.k)]
        output = subprocess.run(command, check=True, capture_output=True, text=True).stdout
        search = json.loads(output.strip().splitlines()[-1])
        sizes = disk(index_dir)
        if size:  # after the searches, which should see the index as it was built
            build.update(measure_increment(base, index_dir, args.work))
        row = {
            "statements": build["statements"],
            "build": build,
            "search": search,
            "disk_bytes": sizes,
            "disk_bytes_per_statement": {name: round(v / build["statements"]) for name, v in sizes.items()},
        }
        print(json.dumps(row))
        rows.append(row)
    if args.keep and args.keep.exists():
        measured = {row["statements"] for row in rows}
        rows += [row for row in json.loads(args.keep.read_text())["runs"] if row["statements"] not in measured]
        rows.sort(key=lambda row: row["statements"])
    machine = {"platform": platform.platform(), "python": platform.python_version(), "cpus": os.cpu_count()}
    result = {"date": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "machine": machine, "k": args.k, "runs": rows}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "search_scale.json").write_text(json.dumps(result, indent=2) + "\n")
    plot(rows, args.out / "search_scale.png")
    (args.out / "search_scale.md").write_text(markdown(result) + "\n")
    print(markdown(result))


def markdown(result: dict[str, Any]) -> str:
    rows = result["runs"]
    lines = [
        f"# Search latency against index size ({result['date']}, {result['machine']['cpus']} CPUs, top {result['k']})",
        "",
        "p50 in query embeddings: against the text queries' embedding alone, in the same search process "
        "(— where the row comes from a run before the floor was measured).",
        "",
        "| statements | mode | p50 ms | p95 ms | p99 ms | p50 in query embeddings (floor ms) |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for row in rows:
        floor = row["search"].get("floor_query_embedding", {}).get("p50_ms")
        for mode, numbers in row["search"]["latency"].items():
            in_floors = f"{numbers['p50_x_embedding']}x ({floor})" if floor else "—"
            lines.append(
                f"| {row['statements']:,} | {mode} | {numbers['p50_ms']} | {numbers['p95_ms']} | {numbers['p99_ms']} "
                f"| {in_floors} |"
            )
    lines += [
        "",
        "| statements | load s | peak RSS MB (search process) | bytes/statement: total (Chroma, BM25, formula) "
        "| write stmt/s | BM25 + formula: full rebuild s "
        "| +5,000 statements: add s (Chroma s, lexical s, duplicates s) "
        "| the same without duplicate detection: add s | delete them: s (Chroma s, lexical s) |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for row in rows:
        per = row["disk_bytes_per_statement"]
        build = row["build"]
        plain = build.get("increment_plain", {})
        lines.append(
            f"| {row['statements']:,} | {row['search']['load_s']} | {row['search']['peak_rss_mb']} "
            f"| {per['total']:,} ({per['chroma']:,}, {per['bm25']:,}, {per['formula_bm25']:,}) "
            f"| {build.get('write_statements_per_s') or '—'} | {build.get('lexical_rebuild_s', '—')} "
            f"| {_increment(build, 'add')} | {plain.get('add_s', '—')} | {_increment(build, 'delete')} |"
        )
    lines += [
        "",
        "The formula channel's cost: postings of the query's formula terms (what an exhaustive search reads; "
        "MaxScore skips most of the commonest terms' postings), and how closely latency still follows them.",
        "",
        "| statements | postings p50 | p95 | correlation of latency with postings | ns per posting |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for row in rows:
        cost = row["search"].get("formula_cost")
        if cost:
            lines.append(
                f"| {row['statements']:,} | {cost['postings_p50']:,} | {cost['postings_p95']:,} "
                f"| {cost['latency_postings_correlation']} | {cost['ns_per_posting']} |"
            )
    lines += ["", "![latency against size](search_scale.png)"]
    return "\n".join(lines)


def _increment(build: dict[str, Any], step: str) -> str:
    increment = build.get("increment")
    if not increment:
        return "—"
    parts = [increment.get(f"{step}_{part}_s", "—") for part in ("chroma", "lexical", "duplicates")]
    if step == "delete":
        parts = parts[:2]
    return f"{increment[f'{step}_s']} ({', '.join(str(part) for part in parts)})"


if __name__ == "__main__":
    main()
