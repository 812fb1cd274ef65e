"""`rag-app search` and `rag-app ask`."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Optional

import typer

from rag_app.answering.answer import AnswerStatus, AnswerStream
from rag_app.answering.verdict import verdict_line
from rag_app.api.blocking_backend import BlockingBackend
from rag_app.api.errors import BadRequestError
from rag_app.api.serving_backend import DeadlineError

# Exit codes (README, "Exit codes"): scripts tell these apart.
from rag_app.cli.common import (
    EXIT_NO_LLM,
    EXIT_PAST_DEADLINE,
    EXIT_USAGE,
    ConfigOption,
    IndexOption,
    JsonOption,
    KOption,
    RerankOption,
    _err,
    _read_text_file,
    _searched_settings,
    app,
)
from rag_app.pipeline import MathRAG
from rag_app.search.result_list import first_words, grouped_by_place
from retriever import PaperHit, SearchFilter, SearchHit, SearchMode
from retriever.deadline import DeadlinePassedError


def _print_hits(hits: list[SearchHit]) -> None:
    if not hits:
        typer.echo("no statements found")
    for hit in hits:
        record = hit.record
        where = f"{record.paper_id}:{record.label}" if record.label else record.paper_id
        typer.echo(f"{hit.rank:>2}. {hit.score:.4f}  {record.display_name}  [{where}]")
        text = " ".join(record.text.split())
        typer.echo(f"    {text[:240]}{' …' if len(text) > 240 else ''}")


def _print_papers(papers: list[PaperHit]) -> None:
    if not papers:
        typer.echo("no papers found")
    for paper in papers:
        byline = f" — {paper.authors}" if paper.authors else ""
        title = paper.title or (paper.hits[0].record.source_title if paper.hits else paper.paper_id)
        typer.echo(f"{paper.rank:>2}. {paper.score:.4f}  {title}{byline}  [{paper.paper_id}]")
        if paper.url:
            typer.echo(f"    {paper.url}")
        for hit in paper.hits:
            text = " ".join(hit.record.text.split())
            typer.echo(f"    - {hit.record.display_name}: {text[:160]}{' …' if len(text) > 160 else ''}")


def _print_next_results(hits: list[SearchHit], shown: int) -> None:
    """The search's next results, one line each, grouped by paper and section (``ask --json`` has them all)."""
    if not hits or not shown:
        return
    more = f" of {len(hits)} (ask --json lists them all)" if len(hits) > shown else ""
    typer.echo(f"\nNext results ({min(shown, len(hits))}{more}):")
    for group in grouped_by_place(hits[:shown]):
        alone = len(group.hits) == 1
        if not alone:
            typer.echo(f"     {group.place}:")
        for hit in group.hits:
            where = f" — {group.place}" if alone else ""
            typer.echo(f"{hit.rank:>3}. {hit.record.display_name}{where}: {first_words(hit.record.text)}")


@app.command()
def search(
    query: Annotated[Optional[str], typer.Argument(help="the question or formula")] = None,
    k: KOption = None,
    mode: Annotated[Optional[SearchMode], typer.Option("--mode", help="retriever")] = None,
    formula: Annotated[
        bool, typer.Option("--formula", help="the query is a formula: find statements with equal or similar ones")
    ] = False,
    queries: Annotated[
        Optional[Path], typer.Option("--queries", help="file with one query per line ('-': stdin)")
    ] = None,
    rerank: RerankOption = None,
    papers: Annotated[
        bool, typer.Option("--papers", help="rank papers (MSE: threads) by their statements, each with its best ones")
    ] = False,
    sources: Annotated[
        Optional[list[str]], typer.Option("--source", help="only these sources: arxiv, mse, local (repeatable)")
    ] = None,
    kinds: Annotated[
        Optional[list[str]], typer.Option("--kind", help="only these kinds: theorem, lemma, ... (repeatable)")
    ] = None,
    index: IndexOption = None,
    as_json: JsonOption = False,
    config: ConfigOption = None,
) -> None:
    """Search the index. With --queries, run many queries in one process (JSON lines out).

    --rerank rescores the fused top N with the cross-encoder (default: the setting rerank.search).

    --papers answers "which paper proves this?": papers ranked by their best statement, each with
    `hits` (its best statements, in the shape of `search --json`). Works with --formula too.

    With --formula the query is one formula (`\\int \\frac{dx}{(x^2+1)^n}`, delimiters optional): statements
    holding it, an equivalent rewrite or a similar formula come first.
    """
    if (query is None) == (queries is None):
        raise typer.BadParameter("give either QUERY or --queries FILE")
    if formula and mode is not None:
        raise typer.BadParameter("--formula searches formulas only; leave out --mode")
    # The queries are read before any model loads: a wrong file is a usage error, not a traceback.
    lines = [] if queries is None else (
        sys.stdin.read() if str(queries) == "-" else _read_text_file(queries, "--queries")
    ).splitlines()  # fmt: skip
    with MathRAG(_searched_settings(config, index)) as rag, command_line_backend(rag) as backend:
        where = SearchFilter(sources=frozenset(sources or ()), kinds=frozenset(kinds or ()))

        def run(text: str) -> list[SearchHit] | list[PaperHit]:
            with refused_as_exit_codes():
                if papers:
                    return backend.papers(text, k, where, mode, formula=formula, rerank=rerank)
                if formula:
                    return backend.formula(text, k, where)
                return backend.search(text, k, mode, where, rerank=rerank)

        def show(results: list[SearchHit] | list[PaperHit]) -> None:
            if papers:
                _print_papers([r for r in results if isinstance(r, PaperHit)])
            else:
                _print_hits([r for r in results if isinstance(r, SearchHit)])

        if queries is None:
            results = run(query or "")
            if as_json:
                typer.echo(json.dumps([result.to_dict() for result in results], ensure_ascii=False))
            else:
                show(results)
            return
        for line in lines:
            if not line.strip():
                continue
            results = run(line.strip())
            if as_json:
                typer.echo(
                    json.dumps({"query": line.strip(), "results": [r.to_dict() for r in results]}, ensure_ascii=False)
                )
            else:
                typer.echo(f"# {line.strip()}")
                show(results)


@app.command()
def ask(
    question: Annotated[str, typer.Argument(help="a question, LaTeX welcome")],
    k: KOption = None,
    rerank: RerankOption = None,
    index: IndexOption = None,
    as_json: JsonOption = False,
    config: ConfigOption = None,
) -> None:
    """Answer from the indexed statements, citing them by number (sources reranked: the setting rerank.answer)."""
    with MathRAG(_searched_settings(config, index)) as rag, command_line_backend(rag) as backend:
        with refused_as_exit_codes(), backend.answer(question, k, rerank=rerank) as stream:
            if as_json:
                answer = stream.result()
                typer.echo(json.dumps(backend.record(answer), ensure_ascii=False))
            else:
                _print_answer(stream, rag)
                answer = stream.result()
        if answer.llm_error:
            raise typer.Exit(EXIT_NO_LLM)  # the sources are printed; the answer needed the model


def command_line_backend(rag: MathRAG) -> BlockingBackend:
    """The serving backend the chat, HTTP and MCP use, for one command: the same deadlines
    (``api.search_timeout_s``, ``api.ask_timeout_s``) and turn at the LLM. The size limits are the API's
    guard against remote clients, not a local user's: the command line sets no ``k`` or length limit."""
    unlimited = rag.settings.api.model_copy(update={"max_k": 1_000_000, "max_query_chars": 10_000_000})
    return BlockingBackend(rag, unlimited)


@contextmanager
def refused_as_exit_codes() -> Iterator[None]:
    """What the backend refuses, as the HTTP API's 400 and 504: exit 2 (the reason named) and exit 7."""
    try:
        yield
    except BadRequestError as error:  # a reranker that is not there: rag_app/known_errors.py, exit 2 too
        _err(f"error: {error}")
        raise typer.Exit(EXIT_USAGE) from None
    except (DeadlineError, DeadlinePassedError) as error:
        _err(f"error: {error}")
        raise typer.Exit(EXIT_PAST_DEADLINE) from None


def _print_answer(stream: AnswerStream, rag: MathRAG) -> None:
    """The answer as it is written, then its checks, sources and next results (``ask`` without ``--json``)."""
    for chunk in stream:
        typer.echo(chunk, nl=False)
    answer = stream.result()
    if answer.llm_error:
        typer.echo(answer.text)
    else:
        typer.echo("")
    if answer.text != answer.raw_text.strip() and answer.answered_by_llm and answer.style != "quote":
        typer.echo(f"\nChecked answer:\n{answer.text}")
    if answer.verdict is not None:
        typer.echo(f"\n{verdict_line(answer.verdict, answer.confidence)}")
    if answer.invalid_citations:
        _err(f"removed citations to sources that were not given: {answer.invalid_citations}")
    for sentence in answer.sentences:
        if sentence.claim and not sentence.supported:
            why = f" ({'; '.join(sentence.problems[:3])})" if sentence.problems else ""
            _err(f"not stated by the sources it cites{why}: {sentence.text}")
    if answer.repeated_sentences or answer.truncated:
        cut = "; its last sentence was cut off and removed" if answer.truncated else ""
        _err(f"repaired: {answer.repeated_sentences} repeated sentences dropped{cut}")
    if answer.status is AnswerStatus.UNSUPPORTED:
        _err("no sentence of this answer is supported by the sources: read it with care")
    typer.echo("\nSources:")
    for number, hit in enumerate(answer.sources, start=1):
        record = hit.record
        cited = "*" if number in answer.cited else " "
        link = f"  {record.url}" if record.url else ""
        typer.echo(f"{cited}[{number}] {record.display_name} — {record.source_title}{link}")
    _print_next_results(answer.next_results, rag.settings.ui.next_results_shown)
    _err(f"{answer.timings_ms.get('total', 0) / 1000:.1f} s · {answer.model_calls_text}")
