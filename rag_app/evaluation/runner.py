"""The ``eval`` command's work: load sets, make sure the corpus is indexed, score, record provenance."""

from __future__ import annotations

import hashlib
import os
import platform
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ingestion.arqmath_topics import read_arqmath_topics
from rag_app.evaluation.evaluate import evaluate
from rag_app.evaluation.query_set import EvalQuery, Protocol, QuerySet
from rag_app.evaluation.report import EvaluationReport
from rag_app.evaluation.retrievers import DEFAULT_RETRIEVERS
from rag_app.evaluation.trec_files import read_qrels
from rag_app.ingest_report import IngestReport
from rag_app.pipeline import MathRAG
from rag_app.settings import Settings

REPO_ROOT = Path(__file__).resolve().parents[2]


@dataclass
class EvalRequest:
    """What to evaluate; the CLI fills it from its flags."""

    sets: list[Path] = field(default_factory=list)
    retrievers: Sequence[str] = DEFAULT_RETRIEVERS
    qrels: Path | None = None
    topics: Path | None = None
    protocol: Protocol | None = None
    seen_papers: Path | None = None
    k: int | None = None
    limit: int | None = None
    ingest_corpus: bool | None = None  # None: ingest the sets' corpus only into the default eval index


def arqmath_query_set(topics: Path | None, qrels_path: Path, protocol: Protocol = Protocol.ARQMATH) -> QuerySet:
    """ARQMath-style topics and judgments as a query set (topic texts from the XML when given)."""
    qrels = read_qrels(qrels_path)
    texts: dict[str, str] = {}
    formulas: dict[str, str] = {}
    if topics is not None:
        for topic in read_arqmath_topics(topics):
            texts[topic.number] = topic.text
            if topic.query_formula:
                formulas[topic.number] = topic.query_formula
    numbers = list(texts) if topics is not None else sorted(qrels)
    queries = tuple(
        EvalQuery(
            qid=number,
            text=texts.get(number, ""),
            relevant=qrels.get(number, {}),
            metadata={"query_formula": formulas[number]} if number in formulas else {},
        )
        for number in numbers
    )
    name = (topics or qrels_path).name.removesuffix(".xml").removesuffix(".txt").removeprefix("topics.")
    return QuerySet(
        name=name,
        version=1,
        protocol=protocol,
        queries=queries,
        description=f"Topics {topics.name if topics else '(none: scoring runs only)'} judged by {qrels_path.name}.",
        built_by="rag-app eval --qrels",
        tuning=False,
    )


def load_sets(request: EvalRequest) -> list[QuerySet]:
    sets = [QuerySet.load(path) for path in request.sets]
    if request.qrels is not None:
        sets.append(arqmath_query_set(request.topics, request.qrels, request.protocol or Protocol.ARQMATH))
    if request.limit is not None:
        sets = [_first(query_set, request.limit) for query_set in sets]
    if not sets:
        raise ValueError("nothing to evaluate: give query set files, or --qrels (with --topics or --run)")
    return sets


def corpus_paths(sets: Sequence[QuerySet], settings: Settings) -> list[Path]:
    """The sources the sets are judged against, resolved (``shared`` is ``settings.evaluation.shared_dir``)."""
    paths: list[Path] = []
    for query_set in sets:
        root = settings.evaluation.shared_dir if query_set.corpus_root == "shared" else Path(query_set.corpus_root)
        for relative in query_set.corpus:
            path = (root / relative).resolve()
            if not path.exists():
                raise FileNotFoundError(f"query set {query_set.name} needs {path}, which does not exist")
            if path not in paths:
                paths.append(path)
    return paths


def run_evaluation(
    request: EvalRequest,
    settings: Settings,
    index_dir: Path | None = None,
    show_progress: bool = False,
) -> EvaluationReport:
    """Evaluate every set in ``request`` with every retriever; ingest the sets' corpus first when asked.

    Without ``index_dir`` the development index (``settings.resolved_eval_index_dir``) is used and the
    sets' corpus is ingested into it (idempotent: an unchanged corpus adds nothing).
    """
    sets = load_sets(request)
    needs_index = any(not spec.startswith("run:") for spec in request.retrievers)
    directory = index_dir or settings.resolved_eval_index_dir
    ingest = request.ingest_corpus if request.ingest_corpus is not None else index_dir is None
    seen = _read_seen_papers(request.seen_papers) if request.seen_papers else None
    k = request.k or settings.evaluation.k
    provenance = _provenance(request, settings, sets, k)
    rag = MathRAG(settings.model_copy(update={"index_dir": directory})) if needs_index else None
    try:
        if rag is not None:
            if ingest:
                paths = corpus_paths(sets, settings)
                if paths:
                    report: IngestReport = rag.ingest(paths, show_progress=show_progress)
                    provenance["corpus"] = [str(p) for p in paths]
                    provenance["corpus_ingest"] = report.summary()
            provenance["index"] = str(directory)
            provenance["index_statements"] = rag.index.count()
            provenance["index_manifest"] = rag.index.manifest()
        evaluations = [
            evaluate(
                request.retrievers,
                query_set,
                index=rag.index if rag is not None else None,
                k=k,
                seen_papers=seen,
                resamples=settings.evaluation.resamples,
                show_progress=show_progress,
            )
            for query_set in sets
        ]
    finally:
        if rag is not None:
            rag.close()
    return EvaluationReport(evaluations, provenance)


def _first(query_set: QuerySet, limit: int) -> QuerySet:
    description = query_set.description + f" (first {limit} queries only)"
    return replace(query_set, queries=query_set.queries[:limit], description=description)


def _read_seen_papers(path: Path) -> set[str]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return {line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")}


def _provenance(request: EvalRequest, settings: Settings, sets: Sequence[QuerySet], k: int) -> dict[str, Any]:
    return {
        "command": " ".join(["rag-app", *sys.argv[1:]]) if Path(sys.argv[0]).name == "rag-app" else None,
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "git_commit": _git_commit(),
        "machine": f"{platform.platform()}, {os.cpu_count()} CPUs",
        "embedder": settings.embedding.model,
        "retrievers": list(request.retrievers),
        "k": k,
        "sets": {str(path): _sha256(path) for path in [*request.sets, *filter(None, [request.qrels, request.topics])]},
        "seen_papers": str(request.seen_papers) if request.seen_papers else None,
        "settings": settings.model_dump(mode="json", exclude={"llm"}),
        "query_sets": [{"name": s.name, "version": s.version, "size": s.size} for s in sets],
    }


def _git_commit() -> str | None:
    try:
        result = subprocess.run(
            ["git", "-C", str(REPO_ROOT), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5, check=False
        )
    except OSError:
        return None
    return result.stdout.strip() or None


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()
