"""`rag-app eval`: retrievers scored side by side on query sets."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Optional

import typer

# Exit codes (README, "Exit codes"): scripts tell these apart.
from rag_app.cli.common import (
    ConfigOption,
    IndexOption,
    JsonOption,
    _err,
    _settings,
    app,
    text_files,
)
from rag_app.evaluation import EvalRequest, Protocol, QuerySetError, TrecFormatError, run_evaluation
from rag_app.evaluation.dev_sets import write_dev_sets
from rag_app.evaluation.retrievers import DEFAULT_RETRIEVERS
from rag_app.search.search_stack import UnknownRunNameError


@app.command("eval")
def eval_command(
    sets: Annotated[
        Optional[list[Path]], typer.Argument(help="query set files (eval/sets/*.jsonl)", callback=text_files)
    ] = None,
    dev: Annotated[
        bool, typer.Option("--dev", help="build the development sets from ../shared and evaluate them all")
    ] = False,
    retriever: Annotated[
        Optional[list[str]],
        typer.Option("--retriever", "-r", help="retriever by name (bm25, dense, hybrid, ...) or run:PATH; repeatable"),
    ] = None,
    qrels: Annotated[
        Optional[Path], typer.Option("--qrels", help="TREC qrels file (ARQMath judgments)", callback=text_files)
    ] = None,
    topics: Annotated[
        Optional[Path], typer.Option("--topics", help="ARQMath topic XML giving the query texts", callback=text_files)
    ] = None,
    run: Annotated[
        Optional[list[Path]], typer.Option("--run", help="TREC run file to score; repeatable", callback=text_files)
    ] = None,
    protocol: Annotated[
        Optional[Protocol], typer.Option("--protocol", help="measures for --qrels (default arqmath)")
    ] = None,
    seen_papers: Annotated[
        Optional[Path],
        typer.Option("--seen-papers", help="papers seen in training, one id per line", callback=text_files),
    ] = None,
    split: Annotated[
        Optional[Path],
        typer.Option(
            "--split",
            help="split.json of a fine-tuned embedding: trained / seen / unseen groups",
            callback=text_files,
        ),
    ] = None,
    embedder: Annotated[
        Optional[list[str]],
        typer.Option("--embedder", "-e", help="embedder spec to compare (one index each); repeatable"),
    ] = None,
    query_adapter: Annotated[
        Optional[list[str]],
        typer.Option("--query-adapter", help="query adapter to compare (`none`: the base vectors); repeatable"),
    ] = None,
    k: Annotated[Optional[int], typer.Option("--k", "-k", min=1, max=1000, help="results per query")] = None,
    limit: Annotated[Optional[int], typer.Option("--limit", min=1, help="only the first N queries of each set")] = None,
    out: Annotated[Optional[Path], typer.Option("--out", help="report directory (default from settings)")] = None,
    ingest_corpus: Annotated[
        Optional[bool],
        typer.Option(
            "--ingest-corpus/--no-ingest-corpus", help="ingest the sets' corpus first (default: only without --index)"
        ),
    ] = None,
    index: IndexOption = None,
    as_json: JsonOption = False,
    config: ConfigOption = None,
) -> None:
    """Score retrievers side by side on query sets; write JSON, markdown, a PNG chart and TREC runs."""
    settings = _settings(config)
    specs = list(retriever or ([] if run else DEFAULT_RETRIEVERS)) + [f"run:{path}" for path in run or []]
    if dev:
        try:
            sets = [*(sets or []), *write_dev_sets(settings.evaluation.shared_dir, settings.evaluation.sets_dir)]
        except FileNotFoundError as error:
            _err(f"error: {error}")
            raise typer.Exit(2) from error
    request = EvalRequest(
        sets=list(sets or []),
        retrievers=specs,
        qrels=qrels,
        topics=topics,
        protocol=protocol,
        seen_papers=seen_papers,
        split=split,
        embedders=list(embedder or []),
        query_adapters=list(query_adapter or []),
        k=k,
        limit=limit,
        ingest_corpus=ingest_corpus,
    )
    try:
        report = run_evaluation(request, settings, index.expanduser() if index else None, show_progress=not as_json)
    except (QuerySetError, TrecFormatError, UnknownRunNameError, FileNotFoundError, ValueError) as error:
        _err(f"error: {error}")
        raise typer.Exit(2) from error
    paths = report.write(out or settings.evaluation.out_dir)
    if as_json:
        typer.echo(json.dumps(report.to_dict(), ensure_ascii=False))
    else:
        report.print()
        typer.echo(f"report: {paths['markdown']}  ({paths['json'].name}, {paths['png'].name}, runs/)")
