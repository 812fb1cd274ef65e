"""`rag-app train ...`: the embedding, the reranker, the ranker, the query adapter, questions, formulas."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

# Exit codes (README, "Exit codes"): scripts tell these apart.
from rag_app.cli.common import (
    ConfigOption,
    IndexOption,
    JsonOption,
    _err,
    _overridden,
    _searched_settings,
    _settings,
    text_files,
    train_app,
)
from rag_app.evaluation import QuerySetError
from rag_app.pipeline import MathRAG
from rag_app.serving.llm_server import LLMServerError
from rag_app.serving.packaged_models import PackagedModelError
from rag_app.settings import Settings
from retriever.models.learned_ranker import LearnedRankerError
from retriever.models.query_adapter import QueryAdapterError


@train_app.command("embed")
def train_embed(
    index: IndexOption = None,
    name: Annotated[Optional[str], typer.Option("--name", help="registry name (a new version each run)")] = None,
    base: Annotated[Optional[str], typer.Option("--base", help="embedder spec to fine-tune")] = None,
    lora: Annotated[
        Optional[bool], typer.Option("--lora/--full", help="train a LoRA adapter or the whole model")
    ] = None,
    llm_questions: Annotated[
        Optional[bool], typer.Option("--llm-questions/--no-llm-questions", help="add LLM-generated questions")
    ] = None,
    questions_file: Annotated[
        Optional[Path],
        typer.Option(
            "--questions-file",
            help="train on the LLM questions this file holds (none generated)",
            callback=text_files,
        ),
    ] = None,
    hard_negatives: Annotated[Optional[bool], typer.Option("--hard-negatives/--no-hard-negatives")] = None,
    max_pairs: Annotated[Optional[int], typer.Option("--max-pairs", min=2, help="seeded sample of the pairs")] = None,
    max_pairs_per_kind: Annotated[
        Optional[int], typer.Option("--max-pairs-per-kind", min=1, help="seeded sample of each pair kind")
    ] = None,
    max_steps: Annotated[Optional[int], typer.Option("--max-steps", min=1, help="stop after N steps")] = None,
    epochs: Annotated[Optional[int], typer.Option("--epochs", min=1)] = None,
    learning_rate: Annotated[Optional[float], typer.Option("--learning-rate", min=0)] = None,
    device: Annotated[Optional[str], typer.Option("--device", help="cpu, cuda, ... (default from settings)")] = None,
    resume: Annotated[bool, typer.Option("--resume/--restart", help="continue from the last checkpoint")] = True,
    as_json: JsonOption = False,
    config: ConfigOption = None,
) -> None:
    """Fine-tune the embedding on an ingested index and register the result as a new version.

    Then compare it with the base: `rag-app eval --dev --embedder BASE --embedder registry:NAME --split
    DATA_DIR/models/embeddings/NAME/vN/split.json`, and use it with `embedding.model = "registry:NAME"`
    (`rag-app reindex` re-embeds an existing index).
    """
    from rag_app.training.train_embedding import TrainEmbedJob

    settings = _searched_settings(config, index)
    overrides = {
        "name": name, "base_model": base, "lora": lora, "llm_questions": llm_questions,
        "questions_file": questions_file, "hard_negatives": hard_negatives, "max_pairs": max_pairs,
        "max_pairs_per_kind": max_pairs_per_kind, "max_steps": max_steps, "epochs": epochs,
        "learning_rate": learning_rate, "device": device,
    }  # fmt: skip
    settings = _overridden(settings, {f"training.embed.{key}": value for key, value in overrides.items()})
    job = TrainEmbedJob(settings, settings.resolved_index_dir)
    try:
        report = job.run(resume=resume, show_progress=not as_json, log=_err)
    except (FileNotFoundError, ValueError) as error:
        _err(f"error: {error}")
        raise typer.Exit(2) from error
    model = report.model
    summary = {
        "model": f"registry:{model.name}@v{model.version}",
        "directory": str(model.directory),
        "base_model": model.base_model,
        "kind": model.kind,
        "pairs": report.pairs,
        "split": report.split,
        "questions": report.questions,
        "examples": report.run.examples,
        "steps": report.run.steps,
        "seconds": report.run.seconds,
        "resumed_from": report.run.resumed_from,
        "final_loss": report.run.final_loss,
    }
    if as_json:
        typer.echo(json.dumps(summary, ensure_ascii=False))
        return
    typer.echo(f"trained {summary['model']} ({model.kind} on {model.base_model}) in {report.run.seconds:.0f} s")
    typer.echo(f"  pairs {report.pairs}, {report.run.examples} examples, {report.run.steps} steps")
    typer.echo(f"  split {report.split}")
    typer.echo(f"  {model.directory}")


@train_app.command("rerank")
def train_rerank(
    index: IndexOption = None,
    name: Annotated[
        Optional[str], typer.Option("--name", help="directory name under DATA_DIR/models/rerankers")
    ] = None,
    out: Annotated[Optional[Path], typer.Option("--out", help="write the reranker here instead")] = None,
    max_queries: Annotated[Optional[int], typer.Option("--max-queries", min=2, help="training queries")] = None,
    max_steps: Annotated[Optional[int], typer.Option("--max-steps", min=1, help="stop after N steps")] = None,
    epochs: Annotated[Optional[int], typer.Option("--epochs", min=1)] = None,
    device: Annotated[Optional[str], typer.Option("--device", help="cpu, cuda, ... (default from settings)")] = None,
    publish: Annotated[
        bool, typer.Option("--publish", help="also ship it in the package (rerank.model = packaged)")
    ] = False,
    resume: Annotated[bool, typer.Option("--resume/--restart", help="continue from the last checkpoint")] = True,
    mine_only: Annotated[
        bool,
        typer.Option("--mine-only", help="stop after mining the examples (train them elsewhere, then rerun to resume)"),
    ] = False,
    as_json: JsonOption = False,
    config: ConfigOption = None,
) -> None:
    """Train the cross-encoder reranker on an ingested index (hard negatives from our own retriever).

    Use it with `rerank.model = "DIR"` (the directory printed), or --publish to make it the packaged one;
    compare with `rag-app eval --dev -r hybrid-formula -r hybrid-formula+rerank`.
    """
    from rag_app.training.train_rerank import TrainRerankJob, publish_reranker

    settings = _searched_settings(config, index)
    overrides = {"name": name, "max_queries": max_queries, "max_steps": max_steps, "epochs": epochs, "device": device}
    settings = _overridden(settings, {f"training.rerank.{key}": value for key, value in overrides.items()})
    job = TrainRerankJob(settings, settings.resolved_index_dir, out.expanduser() if out else None)
    try:
        report = job.run(resume=resume, show_progress=not as_json, log=_err, mine_only=mine_only)
    except (FileNotFoundError, ValueError) as error:
        _err(f"error: {error}")
        raise typer.Exit(2) from error
    if report is None:  # --mine-only
        summary_dir = {"work_dir": str(job.work_dir), "mined_only": True}
        typer.echo(json.dumps(summary_dir) if as_json else f"mined examples in {job.work_dir}")
        return
    published = str(publish_reranker(report.directory)) if publish else None
    summary = {
        "directory": str(report.directory),
        "published": published,
        "queries": report.pairs,
        "split": report.split,
        "steps": report.run.steps,
        "seconds": report.run.seconds,
        "resumed_from": report.run.resumed_from,
        "reused_examples": report.reused_examples,
        "final_loss": report.run.final_loss,
    }
    if as_json:
        typer.echo(json.dumps(summary, ensure_ascii=False))
        return
    typer.echo(f"trained reranker in {report.run.seconds:.0f} s: {report.run.steps} steps, queries {report.pairs}")
    typer.echo(f"  {report.directory}" + (f" (published to {published})" if published else ""))


@train_app.command("ranker")
def train_ranker(
    index: IndexOption = None,
    out: Annotated[Optional[Path], typer.Option("--out", help="write the ranker here instead")] = None,
    max_queries: Annotated[
        Optional[int], typer.Option("--max-queries", min=1, help="training queries of each kind at most")
    ] = None,
    publish: Annotated[
        bool, typer.Option("--publish", help="also ship it in the package (ranker.model = packaged or auto)")
    ] = False,
    reuse: Annotated[
        bool, typer.Option("--reuse/--recompute", help="reuse the features of the same corpus and settings")
    ] = True,
    as_json: JsonOption = False,
    config: ConfigOption = None,
) -> None:
    """Train the learned ranker (LightGBM LambdaMART) over the first stage's top candidates (minutes on a CPU).

    Use it with `ranker.model = "DIR"` (the directory printed), or --publish to make it the packaged one;
    compare with `rag-app eval SETS -r hybrid-formula -r hybrid-formula+ltr`.
    """
    from rag_app.training.train_ranker import TrainRankerJob, publish_ranker

    settings = _searched_settings(config, index)
    settings = _overridden(settings, {"training.ranker.max_queries_per_kind": max_queries})
    job = TrainRankerJob(settings, settings.resolved_index_dir, out.expanduser() if out else None)
    try:
        report = job.run(show_progress=not as_json, log=_err, reuse=reuse)
        published = str(publish_ranker(report.directory)) if publish else None
    except (FileNotFoundError, ValueError, LearnedRankerError) as error:
        _err(f"error: {error}")
        raise typer.Exit(2) from error
    card = report.ranker.card
    summary = {
        "directory": str(report.directory),
        "published": published,
        "embedder": report.ranker.embedder,
        "queries": report.queries,
        "seconds": report.seconds,
        "reused_features": report.reused_features,
        "cost": card.get("cost", {}),
        "held_out": card.get("metrics", {}).get("held_out", {}),
    }
    if as_json:
        typer.echo(json.dumps(summary, ensure_ascii=False))
        return
    held_out = summary["held_out"]
    typer.echo(f"trained learned ranker in {report.seconds:.0f} s ({card['cost']['trees']} trees) on queries "
               f"{report.queries}")  # fmt: skip
    if held_out.get("queries"):
        before, after = held_out["first_stage"], held_out["ranker"]
        mrr = f"MRR@10 {before['mrr@10']:.3f} -> {after['mrr@10']:.3f}"
        hit = f"Hit@10 {before['hit@10']:.3f} -> {after['hit@10']:.3f}"
        typer.echo(f"  held-out ({held_out['queries']} queries): {mrr}, {hit}")
    typer.echo(f"  {report.directory}" + (f" (published to {published})" if published else ""))


@train_app.command("query-adapter")
def train_query_adapter(
    index: IndexOption = None,
    out: Annotated[Optional[Path], typer.Option("--out", help="write the adapter here instead")] = None,
    epochs: Annotated[Optional[int], typer.Option("--epochs", min=1)] = None,
    publish: Annotated[
        bool, typer.Option("--publish", help="also ship it in the package (retrieval.query_adapter = packaged)")
    ] = False,
    second_embedding: Annotated[
        bool,
        typer.Option(
            "--second-embedding",
            help="train for the second embedding model's vectors (second_embedding.model; built by build-dense2)",
        ),
    ] = False,
    as_json: JsonOption = False,
    config: ConfigOption = None,
) -> None:
    """Train a query adapter: the dense channel's query vectors tuned to the index's statements (a minute on a CPU).

    Use it with `retrieval.query_adapter = "DIR"` (the directory printed), or --publish to make it the packaged one.
    With --second-embedding it is trained for the second model (`second_embedding.query_adapter = "DIR"`).
    """
    from rag_app.search.embedder_factory import make_embedder
    from rag_app.training.train_query_adapter import TrainQueryAdapterJob, publish_query_adapter
    from retriever.store.companion_index import CompanionIndexError

    settings = _searched_settings(config, index)
    settings = _overridden(settings, {"training.query_adapter.epochs": epochs})
    job = TrainQueryAdapterJob(settings, settings.resolved_index_dir, out.expanduser() if out else None)
    try:
        if second_embedding:
            second = MathRAG(settings).indexes.companion_index()
            if second is None:
                raise ValueError(
                    "the second embedding model is off: set second_embedding.model (e.g. packaged:all-mpnet-base-v2) "
                    "and build its vectors with `rag-app build-dense2`"
                )
            report = job.run(second.embedder, show_progress=not as_json, log=_err, second=second)
        else:
            report = job.run(make_embedder(settings), show_progress=not as_json, log=_err)
    except (FileNotFoundError, ValueError, CompanionIndexError, QueryAdapterError) as error:
        _err(f"error: {error}")
        raise typer.Exit(2) from error
    published = str(publish_query_adapter(report.directory)) if publish else None
    card = report.adapter.card
    summary = {
        "directory": str(report.directory),
        "published": published,
        "embedder": report.adapter.embedder,
        "pairs": report.pairs,
        "seconds": report.seconds,
        "losses": card.get("losses", []),
        "held_out": card.get("metrics", {}).get("held_out", {}),
    }
    if as_json:
        typer.echo(json.dumps(summary, ensure_ascii=False))
        return
    typer.echo(f"trained query adapter in {report.seconds:.0f} s on pairs {report.pairs}")
    for kind, hit in summary["held_out"].get("hit@10", {}).items():
        typer.echo(f"  held-out {kind}: Hit@10 {hit['base']:.3f} -> {hit['adapted']:.3f} ({hit['queries']} queries)")
    typer.echo(f"  {report.directory}" + (f" (published to {published})" if published else ""))


@train_app.command("questions")
def train_questions(
    index: IndexOption = None,
    out: Annotated[
        Optional[Path], typer.Option("--out", help="questions file (default DATA_DIR/training/questions.jsonl)")
    ] = None,
    limit: Annotated[Optional[int], typer.Option("--limit", min=1, help="at most N new questions this run")] = None,
    license_note: Annotated[
        Optional[str], typer.Option("--license", help="the corpus's license, recorded in the file's header")
    ] = None,
    background: Annotated[bool, typer.Option("--background", help="run detached; progress goes to OUT.log")] = False,
    exclude_set: Annotated[
        Optional[list[Path]],
        typer.Option(
            "--exclude-set",
            help="a query set whose judged statements get no question (repeatable)",
            callback=text_files,
        ),
    ] = None,
    as_json: JsonOption = False,
    config: ConfigOption = None,
) -> None:
    """Generate one LLM question per training statement into a versioned file that reruns extend.

    Uses the configured LLM (vLLM in production, the local llama.cpp server here). Statements the file
    already has are skipped, so a rerun, here or on another machine with a copy of the file, goes on.
    """
    from rag_app.training.train_questions import generate_questions

    settings = _searched_settings(config, index)
    path = (out.expanduser() if out else None) or _default_questions_path(settings)
    if background:
        log_path = path.with_suffix(".log")
        path.parent.mkdir(parents=True, exist_ok=True)
        argv = [a for a in sys.argv[1:] if a != "--background"]
        with log_path.open("a") as log_file:
            process = subprocess.Popen(
                [sys.executable, "-m", "rag_app.cli", *argv], stdout=log_file, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL, start_new_session=True,
            )  # fmt: skip
        typer.echo(f"generating in the background (pid {process.pid}); progress: {log_path}; file: {path}")
        return
    try:
        report = generate_questions(settings, settings.resolved_index_dir, path, limit, license_note,
                                    show_progress=not as_json, log=_err, exclude_sets=exclude_set or [])  # fmt: skip
    except (FileNotFoundError, ValueError, QuerySetError, LLMServerError, PackagedModelError) as error:
        _err(f"error: {error}")
        raise typer.Exit(2) from error
    summary = {"file": str(report.path), "existing": report.existing, "added": report.added,
               "failed": report.failed, "remaining": report.remaining, "seconds": round(report.seconds, 1)}  # fmt: skip
    typer.echo(json.dumps(summary) if as_json else
               f"{report.added} questions added ({report.existing} before, {report.failed} failed, "
               f"{report.remaining} statements to go) in {report.seconds:.0f} s: {report.path}")  # fmt: skip


def _default_questions_path(settings: Settings) -> Path:
    from rag_app.training.train_questions import default_questions_file

    return default_questions_file(settings)


@train_app.command("chooser")
def train_chooser(
    rows: Annotated[Path, typer.Option("--rows", help="rows of `python bench/answer_choice.py collect`")],
    out: Annotated[
        Optional[Path], typer.Option("--out", help="the chooser's JSON (default: the packaged one, replaced)")
    ] = None,
    c: Annotated[float, typer.Option("--c", help="inverse L2 regularization of the logistic regression")] = 1.0,
    as_json: JsonOption = False,
) -> None:
    """Fit the answer's learned chooser on the tuning halves; thresholds set by cross-validation."""
    from rag_app.answering.source_chooser import PACKAGED
    from rag_app.training.train_source_chooser import ChooserRowsError, train

    try:
        chooser, provenance = train(rows.expanduser(), (out or PACKAGED).expanduser(), c)
    except (ChooserRowsError, OSError) as error:
        _err(f"error: {error}")
        raise typer.Exit(2) from error
    if as_json:
        typer.echo(json.dumps(chooser.to_dict(), ensure_ascii=False))
        return
    typer.echo(f"chooser: {out or PACKAGED}")
    for key, value in provenance.items():
        typer.echo(f"  {key}: {json.dumps(value) if isinstance(value, dict) else value}")


@train_app.command("list")
def train_list(as_json: JsonOption = False, config: ConfigOption = None) -> None:
    """The registered embedding models (trained here, and shipped with the package)."""
    from retriever.models.embedding_registry import EmbeddingRegistry, packaged_registry

    settings = _settings(config)
    rows = []
    for registry in (packaged_registry(), EmbeddingRegistry(settings.resolved_registry_dir)):
        for model_name in registry.names():
            for model in registry.versions(model_name):
                rows.append(
                    {
                        "model": f"{registry.prefix}{model.name}@v{model.version}",
                        "kind": model.kind,
                        "base_model": model.base_model,
                        "created": model.card.get("created"),
                        "directory": str(model.directory),
                        "metrics": model.metrics,
                    }
                )
    if as_json:
        typer.echo(json.dumps(rows, ensure_ascii=False))
        return
    if not rows:
        typer.echo("no fine-tuned embeddings yet; train one with `rag-app train embed`")
    for row in rows:
        typer.echo(f"{row['model']}  {row['kind']} on {row['base_model']}  ({row['created']})  {row['directory']}")


@train_app.command("formula")
def train_formula(
    index: IndexOption = None,
    out: Annotated[
        Optional[Path], typer.Option("--out", help="model directory (default DATA_DIR/models/formula/TIME)")
    ] = None,
    device: Annotated[Optional[str], typer.Option("--device", help="cpu, cuda, ... (default from settings)")] = None,
    as_json: JsonOption = False,
    config: ConfigOption = None,
) -> None:
    """Train the formula encoder (sympy rewrites) and the MaRF fusion layer on an ingested index.

    Prints the held-out equivalence check (encoder vs BM25 over formula tokens). Use the result with
    `formula.models = "DIR"`, then `rag-app build-fusion`; `scripts/build_formula_models.sh` ships it.
    """
    from rag_app.training.train_formula import TrainFormulaJob

    settings = _searched_settings(config, index)
    settings = _overridden(settings, {"formula.device": device or None})
    try:
        report = TrainFormulaJob(settings, settings.resolved_index_dir, out).run(show_progress=not as_json, log=_err)
    except (FileNotFoundError, ValueError) as error:
        _err(f"error: {error}")
        raise typer.Exit(2) from error
    encoder = report.card["encoder"]
    data = {"directory": str(report.directory), "identity": report.card["identity"],
            "equivalence_check": encoder["equivalence_check"], "fusion": report.card["fusion"]}  # fmt: skip
    if as_json:
        typer.echo(json.dumps(data))
        return
    typer.echo(f"trained {report.card['identity']} into {report.directory}")
    for method, scores in encoder["equivalence_check"].items():
        if not method.startswith("_"):
            typer.echo(f"  held-out rewrites, {method}: Hit@1 {scores['Hit@1']:.3f}  MRR@10 {scores['MRR@10']:.3f}")
