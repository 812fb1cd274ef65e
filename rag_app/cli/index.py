"""Commands that look after an index: status, repair, reindex, build-fusion, build-dense2, duplicates."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from typing import Annotated

import typer

# Exit codes (README, "Exit codes"): scripts tell these apart.
from rag_app.cli.common import (
    EXIT_BUSY,
    EXIT_DAMAGED,
    EXIT_REFUSED,
    ConfigOption,
    IndexOption,
    JsonOption,
    _err,
    _searched_settings,
    app,
)
from rag_app.pipeline import MathRAG
from rag_app.settings import Settings
from retriever import IndexMismatchError
from retriever.storage.index_lock import exclusive
from retriever.store.companion_index import COMPANION_DIR
from retriever.store.index_health import IndexHealth, StoreState
from retriever.store.statement_index import PAPERS
from retriever.types import record_to_dict


@app.command()
def status(index: IndexOption = None, as_json: JsonOption = False, config: ConfigOption = None) -> None:
    """What is indexed, whether every store derived from Chroma is in step with it, and where answers come from."""
    rag = MathRAG(_searched_settings(config, index))
    stores = IndexHealth(rag.index).check()
    if as_json:
        summary = {"index": str(rag.settings.resolved_index_dir), "stores": [state.to_dict() for state in stores],
                   "in_step": all(state.in_step for state in stores), "llm": rag.llm.health().to_dict()}  # fmt: skip
        typer.echo(json.dumps(summary, ensure_ascii=False))
    else:
        _print_status(rag, stores)
    if any(state.problem and not state.busy for state in stores):
        raise typer.Exit(EXIT_DAMAGED)  # a file is damaged (named above)
    if any(state.busy for state in stores):
        raise typer.Exit(EXIT_BUSY)  # a writer holds a file (named above): nothing is wrong with it
    if not all(state.in_step for state in stores):
        raise typer.Exit(EXIT_REFUSED)  # a store is behind: `repair` catches it up


def _print_status(rag: MathRAG, stores: list[StoreState]) -> None:
    manifest = rag.index.manifest()
    typer.echo(f"index:      {rag.settings.resolved_index_dir}")
    typer.echo(f"statements: {stores[0].statements if stores[0].statements is not None else 'unreadable'}")
    for state in stores:
        typer.echo(f"  {'ok    ' if state.in_step else 'BEHIND'} {state.describe()}")
    if not all(state.in_step for state in stores):
        typer.echo("  run `rag-app repair` to rebuild what is behind from Chroma (no re-embedding)")
    typer.echo(f"embedder:   {manifest.get('embedder', rag.settings.embedding.model)}")
    typer.echo(f"updated:    {manifest.get('updated', 'never')}")
    if (rag.index.directory / PAPERS).exists():
        papers = rag.index.papers()
        counts = ", ".join(f"{papers.count(state)} {state}" for state in ("ok", "skipped", "failed"))
        papers.close()
        typer.echo(f"papers:     {counts} (from `ingest arxiv`)")
    typer.echo(f"llm:        {rag.llm.status()}")


@app.command()
def repair(index: IndexOption = None, as_json: JsonOption = False, config: ConfigOption = None) -> None:
    """Rebuild every store derived from Chroma that is behind or damaged (BM25, the formula index, the duplicate
    groups, the second model's vectors, the manifest), from Chroma, without re-embedding the statements; damaged
    vector index files (Chroma keeps no other copy of the vectors) are moved aside and the statements embedded
    again from their stored text. A second repair waits for the first."""
    settings = _searched_settings(config, index)

    def wait() -> None:
        _err("another `rag-app repair` is working on this index; waiting for it to finish ...")

    with exclusive(settings.resolved_index_dir, on_wait=wait):
        before = IndexHealth(MathRAG(settings).index).repair(show_progress=not as_json)
        after = IndexHealth(MathRAG(settings).index).check()  # opened again: a re-embedding changes its collection
    if as_json:
        typer.echo(json.dumps({"before": [s.to_dict() for s in before], "after": [s.to_dict() for s in after]}))
    else:
        found = {state.name: state for state in before}
        for new in after:
            old = found.get(new.name, before[0])  # a store not reached before (Chroma unreadable) was not in step
            change = "repaired" if not old.in_step and new.in_step else "ok" if new.in_step else "STILL BEHIND"
            typer.echo(f"{change:>12}  {new.describe()}")
    if not all(state.in_step or state.busy for state in after):
        raise typer.Exit(EXIT_DAMAGED)
    if any(state.busy for state in after):
        raise typer.Exit(EXIT_BUSY)  # left alone while another process holds it: repair again when it is done


def reembed_if_the_default_changed(settings: Settings) -> None:
    """The quick start keeps working when a new release ships another default embedder."""
    from rag_app.search.embedder_factory import make_embedder
    from retriever.store.reindex import reindex as reindex_statements

    try:
        MathRAG(settings).index  # noqa: B018 (opening checks the embedder)
    except IndexMismatchError:
        embedder = make_embedder(settings)
        typer.echo(f"The index was built with another embedder: re-embedding it with {embedder.identity} ...")
        reindex_statements(
            settings.resolved_index_dir, embedder, show_progress=True, connection=settings.store.connection()
        )


def catch_up_second_embedding(rag: MathRAG) -> None:
    """The quick start's index gets the second model's vectors it lacks (built before the model was on)."""
    second = rag.indexes.companion_index()
    statements = int(rag.index.manifest().get("statements", 0) or 0)
    if second is None or statements == 0:
        return
    if second.built_by_configured_model() and second.statements() >= statements:
        return
    typer.echo(f"Embedding the index with the second model ({second.embedder.identity}) ...")
    rag.build_companion(show_progress=True)


@app.command()
def reindex(
    index: IndexOption = None,
    force: Annotated[bool, typer.Option("--force", help="re-embed even if the embedder is unchanged")] = False,
    as_json: JsonOption = False,
    config: ConfigOption = None,
) -> None:
    """Re-embed every statement of an index with the configured embedder (resumable; BM25 unchanged)."""
    from rag_app.search.embedder_factory import make_embedder
    from retriever.store.reindex import reindex as reindex_statements

    settings = _searched_settings(config, index)
    try:
        result = reindex_statements(
            settings.resolved_index_dir,
            make_embedder(settings),
            force=force,
            show_progress=not as_json,
            connection=settings.store.connection(),
        )
    except FileNotFoundError as error:
        _err(f"error: {error}")
        raise typer.Exit(2) from error
    data = {"previous": result.previous, "embedder": result.current, "embedded": result.embedded,
            "statements": result.statements}  # fmt: skip
    if as_json:
        typer.echo(json.dumps(data))
    elif result.previous == result.current and not force:
        typer.echo(f"already embedded with {result.current}; nothing to do (--force re-embeds)")
    else:
        typer.echo(
            f"re-embedded {result.embedded} of {result.statements} statements: {result.previous} -> {result.current}"
        )


@app.command("build-fusion")
def build_fusion(
    index: IndexOption = None,
    rebuild: Annotated[bool, typer.Option("--rebuild", help="drop the fusion vectors and embed everything")] = False,
    as_json: JsonOption = False,
    config: ConfigOption = None,
) -> None:
    """Build or update the formula-fusion vectors of an index (modes fusion, fusion-maxsim; formula search).

    Only statements without fusion vectors are embedded, so a rerun after a crash or an ingest resumes.
    The models are `formula.models` (`packaged`, or a directory from `rag-app train formula`).
    """
    with MathRAG(_searched_settings(config, index)) as rag:
        update = rag.build_marf(rebuild=rebuild, show_progress=not as_json)
        data = {**update.to_dict(), "models": rag.index.marf_encoder().identity,
                "bytes": rag.index.marf_index().bytes_on_disk()}  # fmt: skip
    if as_json:
        typer.echo(json.dumps(data))
    else:
        typer.echo(f"fusion vectors: {update.describe()}")


@app.command("build-dense2")
def build_dense2(
    index: IndexOption = None,
    rebuild: Annotated[bool, typer.Option("--rebuild", help="drop the second model's vectors and embed all")] = False,
    background: Annotated[
        bool, typer.Option("--background", help="run detached and niced; progress goes to INDEX/dense2/build.log")
    ] = False,
    as_json: JsonOption = False,
    config: ConfigOption = None,
) -> None:
    """Build or update the second embedding model's vectors of an index (the `dense2` channel of ask and chat).

    Ingestion keeps them in step once built (unless `second_embedding.at_ingest` is off: then this
    embeds what ingest left, `--background` while search reads the vectors built so far); it also catches
    up an index ingested before the model was configured (only statements without vectors are embedded:
    a rerun resumes; `rag-app status` shows how many lack them). The model is `second_embedding.model`
    (off by default; `packaged:all-mpnet-base-v2` and `packaged:nomic-embed-text-v1.5` ship).
    """
    settings = _searched_settings(config, index)
    directory = settings.resolved_index_dir / COMPANION_DIR
    if background:
        directory.mkdir(parents=True, exist_ok=True)
        log_path = directory / "build.log"
        # The same command in the foreground, named from its options (not sys.argv: a caller in-process,
        # a test's CliRunner, has other arguments); the settings' environment goes with it.
        argv = ["build-dense2", "--index", str(settings.resolved_index_dir)]
        argv += ["--rebuild"] * rebuild + (["--config", str(config)] if config else [])
        with log_path.open("a") as log_file:
            process = subprocess.Popen(
                ["nice", "-n", "10", sys.executable, "-m", "rag_app.cli", *argv], stdout=log_file,
                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
            )  # fmt: skip
        if as_json:
            typer.echo(json.dumps({"background": True, "pid": process.pid, "log": str(log_path)}))
        else:
            typer.echo(f"building in the background (pid {process.pid}); progress: {log_path}; `rag-app status` counts")
        return
    directory.mkdir(parents=True, exist_ok=True)

    def already_building() -> None:  # no wait with no end: the running build embeds the same statements
        _err(f"another build-dense2 is running on {settings.resolved_index_dir} (progress: {directory / 'build.log'})")
        raise typer.Exit(EXIT_BUSY)

    with exclusive(directory, on_wait=already_building, lock_file="build.lock"), MathRAG(settings) as rag:
        try:
            update = rag.build_companion(rebuild=rebuild, show_progress=not as_json)
        except ValueError as error:
            _err(f"error: {error}")
            raise typer.Exit(2) from error
        second = rag.indexes.companion_index()
        model = second.embedder.identity if second is not None else ""
    data = {**update.to_dict(), "model": model}
    if as_json:
        typer.echo(json.dumps(data))
    else:
        typer.echo(f"second-model vectors ({model}): {update.describe()}")


@app.command("duplicates")
def duplicates(
    index: IndexOption = None,
    rebuild: Annotated[
        bool, typer.Option("--rebuild", help="recompute every group from the stored statements")
    ] = False,
    show: Annotated[int, typer.Option("--show", help="print this many groups")] = 0,
    as_json: JsonOption = False,
    config: ConfigOption = None,
) -> None:
    """Duplicate groups: one statement in several papers or posts (found at ingest; searches show it once).

    --rebuild recomputes them for an index ingested before groups existed, or after a change of
    `duplicates.threshold`.
    """
    with MathRAG(_searched_settings(config, index)) as rag:
        started = time.perf_counter()
        joined = rag.rebuild_duplicates(show_progress=not as_json) if rebuild else None
        groups = rag.indexes.duplicate_groups()
        found = list(groups.groups())
        data: dict[str, object] = {
            "statements": groups.count(),
            "groups": len(found),
            "statements_in_groups": sum(len(group) for group in found),
            "largest_group": max((len(group) for group in found), default=0),
        }
        if joined is not None:
            data["seconds"] = round(time.perf_counter() - started, 1)
        shown = [[record_to_dict(r) for r in rag.index.store.get(group)] for group in found[:show]]
    if as_json:
        typer.echo(json.dumps({**data, "shown": shown}, ensure_ascii=False))
        return
    typer.echo(
        f"{data['groups']} duplicate groups holding {data['statements_in_groups']} of {data['statements']} statements"
        f" (largest: {data['largest_group']})"
    )
    for group in shown:
        typer.echo("---")
        for record in group:
            text = " ".join(str(record["text"]).split())
            typer.echo(f"  [{record['paper_id']}] {record['display_name']}: {text[:160]}")
