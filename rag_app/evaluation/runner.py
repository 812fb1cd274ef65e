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
from rag_app.datasets.paper_split import PaperSplit
from rag_app.datasets.query_set import EvalQuery, Protocol, QuerySet
from rag_app.evaluation.evaluate import evaluate
from rag_app.evaluation.report import EvaluationReport
from rag_app.evaluation.retrievers import (
    DEFAULT_RETRIEVERS,
    FUSION_RETRIEVERS,
    Retriever,
    build_retriever,
)
from rag_app.evaluation.trec_files import read_qrels
from rag_app.indexing.ingest_report import IngestReport
from rag_app.pipeline import MathRAG
from rag_app.search.embedder_factory import make_embedder
from rag_app.search.search_stack import SECOND_EMBEDDING_SUFFIX
from rag_app.settings import EmbeddingSettings, Settings
from retriever import StatementIndex
from retriever.models.embedder import identity_directory_name
from retriever.store.lexical_indexes import FORMULA_LEXICAL
from retriever.text.unicode_math_text import UnicodeMathText

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
    split: Path | None = None  # split.json of a fine-tuned embedding: trained / seen / unseen groups
    embedders: Sequence[str] = ()  # embedder specs side by side (one index each); empty: the configured one
    # Query adapters side by side on each index ("none": the base vectors); empty: retrieval.query_adapter.
    query_adapters: Sequence[str] = ()
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

    Without ``index_dir`` each embedder gets its development index (see :func:`eval_index_dir`) and the
    sets' corpus is ingested into it (idempotent: an unchanged corpus adds nothing). With several
    ``request.embedders`` every index retriever runs once per embedder, named ``dense [EMBEDDER]``.
    """
    sets = load_sets(request)
    embedders = list(request.embedders) or [settings.embedding.model]
    if index_dir is not None and len(embedders) > 1:
        raise ValueError("--index names one index, built by one embedder; leave it out to compare embedders")
    index_specs = [spec for spec in request.retrievers if not spec.startswith("run:")]
    run_specs = [spec for spec in request.retrievers if spec.startswith("run:")]
    ingest = request.ingest_corpus if request.ingest_corpus is not None else index_dir is None
    seen = _read_seen_papers(request.seen_papers) if request.seen_papers else None
    split = PaperSplit.load(request.split) if request.split else None
    k = request.k or settings.evaluation.k
    provenance = _provenance(request, settings, sets, k)
    provenance["indexes"] = {}
    opened: list[MathRAG] = []
    retrievers: list[Retriever] = []
    try:
        uses_second = any(SECOND_EMBEDDING_SUFFIX in name for name in index_specs)
        for spec in embedders if index_specs else []:
            embedder_settings = settings.model_copy(update={"embedding": embedding_for(spec, settings.embedding)})
            if not uses_second:
                # no +dense2 retriever: building a new development index need not embed with it too
                off = settings.second_embedding.model_copy(update={"model": None})
                embedder_settings = embedder_settings.model_copy(update={"second_embedding": off})
            directory = index_dir or eval_index_dir(embedder_settings)
            rag = MathRAG(embedder_settings.model_copy(update={"index_dir": directory}))
            opened.append(rag)
            info: dict[str, Any] = {"index": str(directory)}
            if ingest:
                paths = corpus_paths(sets, settings)
                if paths:
                    report: IngestReport = rag.ingest(paths, show_progress=show_progress)
                    info["corpus"] = [str(p) for p in paths]
                    info["corpus_ingest"] = report.summary()
            if FUSION_RETRIEVERS & set(index_specs):  # (`formula` uses the fusion index only where it exists)
                update = rag.index.build_marf(show_progress=show_progress)
                info["fusion_update"] = update.to_dict()
            if uses_second:  # (a ValueError names the setting when the second model is off)
                info["second_embedding_update"] = rag.build_companion(show_progress=show_progress).to_dict()
                second = rag.indexes.companion_index()
                adapter = second.query_adapter if second is not None else None
                info["second_embedding_query_adapter"] = adapter.identity if adapter is not None else None
            info["index_statements"] = rag.index.count()
            info["index_bytes"] = index_bytes(rag.index)
            info["index_manifest"] = rag.index.manifest()
            provenance["indexes"][rag.index.embedder.identity] = info
            if len(opened) == 1:  # the first embedder's index under the original keys
                provenance.update({key: info[key] for key in ("index", "index_statements", "index_manifest")})
                for key in ("corpus", "corpus_ingest"):
                    if key in info:
                        provenance[key] = info[key]
            for adapter in request.query_adapters or [None]:
                stack = rag.search_stack if adapter is None else rag.search_stack.with_query_adapter(adapter)
                for name in index_specs:
                    retriever = build_retriever(name, stack)
                    tags = [_short(rag.index.embedder.identity)] if len(embedders) > 1 else []
                    if len(request.query_adapters) > 1:
                        tags.append("no adapter" if adapter == "none" else f"adapter {Path(adapter).name}")
                    if tags:
                        retriever.name = f"{name} [{', '.join(tags)}]"
                    retrievers.append(retriever)
        retrievers.extend(build_retriever(spec, None) for spec in run_specs)
        evaluations = [
            evaluate(
                retrievers,
                query_set,
                k=k,
                seen_papers=seen,
                resamples=settings.evaluation.resamples,
                show_progress=show_progress,
                split=split,
                papers=settings.papers,
            )
            for query_set in sets
        ]
    finally:
        for rag in opened:
            rag.close()
    return EvaluationReport(evaluations, provenance)


# `--embedder MODEL+latex` compares the text form an embedder reads (embedding.math_text) as a variant.
_TEXT_FORMS = {"+latex": "latex", f"+{UnicodeMathText.form}": "unicode"}


def embedding_for(spec: str, embedding: EmbeddingSettings) -> EmbeddingSettings:
    """The embedding settings for an ``--embedder`` spec: a model, optionally with the text form it
    reads (``packaged:all-MiniLM-L6-v2+latex``, as an index records it), else the configured form."""
    for suffix, form in _TEXT_FORMS.items():
        if spec.endswith(suffix):
            return embedding.model_copy(update={"model": spec.removesuffix(suffix), "math_text": form})
    return embedding.model_copy(update={"model": spec})


def eval_index_dir(settings: Settings) -> Path:
    """The development index of the configured embedder.

    ``evaluation.index_dir`` when set; else one directory per embedder under ``DATA_DIR/eval/index``,
    so comparing embedders never re-embeds an index another embedder built.
    """
    if settings.evaluation.index_dir is not None:
        return settings.evaluation.index_dir
    identity = make_embedder(settings).identity
    return settings.data_dir / "eval" / "index" / identity_directory_name(identity)


def index_bytes(index: StatementIndex) -> dict[str, int]:
    """Bytes on disk per part of an index, for the per-variant size in the report."""

    def size(path: Path) -> int:
        return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.exists() else 0

    chroma = size(index.directory / "chroma")
    fusion = index.marf_index().bytes_on_disk() if index.marf_index().exists() else {"pooled": 0, "maxsim_tokens": 0}
    return {
        "statements": index.count(),
        "chroma_records_and_dense": chroma - fusion["pooled"],
        "bm25": size(index.directory / "bm25"),
        "formula_bm25": size(index.directory / FORMULA_LEXICAL),
        "fusion_pooled": fusion["pooled"],
        "fusion_maxsim_tokens": fusion["maxsim_tokens"],
    }


def _short(identity: str) -> str:
    return identity.removeprefix("packaged:").removeprefix("registry:")


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
        "split": str(request.split) if request.split else None,
        "embedders": list(request.embedders) or [settings.embedding.model],
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
