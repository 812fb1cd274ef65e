"""`rag-app show`: one statement with what it uses, what uses it and the definitions in its scope."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from rag_app.cli.common import ConfigOption, IndexOption, JsonOption, _searched_settings, app
from rag_app.pipeline import MathRAG
from rag_app.search.statement_links import StatementLink, StatementView


def _where(link: StatementLink) -> str:
    return f"{link.paper_id}#{link.label}" if link.label else link.paper_id


def _print_view(view: StatementView, proof: bool) -> None:
    record = view.record
    where = f"{record.paper_id}#{record.label}" if record.label else record.paper_id
    typer.echo(f"{record.display_name}  [{where}]  id {record.id}")
    typer.echo(record.source_title + (f" · {record.section}" if record.section else ""))
    if record.url:
        typer.echo(record.url)
    typer.echo("")
    typer.echo(record.text)
    if proof and record.proof:
        typer.echo(f"\nProof. {record.proof}")
    typer.echo(f"\nUses ({len(view.uses)}):")
    for use in view.uses:
        if use.statement is not None:
            link = use.statement
            typer.echo(f"  {link.display_name}  [{_where(link)}]  id {link.id}  ({use.where})")
        elif use.section:
            typer.echo(f"  section: {use.section}  [{use.label}]  ({use.where})")
        else:
            typer.echo(f"  not in the index: {use.label}  ({use.where})")
    typer.echo(f"\nUsed by ({len(view.used_by)}):")
    for link in view.used_by:
        typer.echo(f"  {link.display_name}  [{_where(link)}]  id {link.id}")
    if view.cited_as_count:
        typer.echo(f"\nHow it is cited ({view.cited_as_count} citing sentences):")
        for mention in view.cited_as:
            link = mention.statement
            typer.echo(f"  \u201c{mention.sentence}\u201d")
            typer.echo(f"    \u2014 {link.display_name}  [{_where(link)}]  id {link.id}  ({mention.where})")
        if view.cited_as_count > len(view.cited_as):
            typer.echo(f"  ... and {view.cited_as_count - len(view.cited_as)} more")
    typer.echo(f"\nDefinitions in scope ({len(view.definitions)}):")
    for link in view.definitions:
        typer.echo(f"  {link.display_name}  [{_where(link)}]  id {link.id}")
    arxiv = [citation for citation in view.cites if citation.arxiv_id]
    typer.echo(f"\nCites ({len(view.cites)}; of arXiv papers: {len(arxiv)}):")
    for citation in view.cites:
        paper = f"arXiv:{citation.arxiv_id}" if citation.arxiv_id else "not an arXiv paper (by its bibliography)"
        if citation.in_index:
            count = f"{citation.statements} statement" + ("" if citation.statements == 1 else "s")
            paper += f" — {citation.paper_title}, in the index ({count})"
        typer.echo(f"  [{citation.key}]  {paper}  ({citation.where})")
    if view.cited_by_count:
        typer.echo(f"\nIts paper is cited by ({view.cited_by_count} statements of other papers):")
        for link in view.cited_by:
            typer.echo(f"  {link.display_name}  [{_where(link)}]  id {link.id}")
        if view.cited_by_count > len(view.cited_by):
            typer.echo(f"  ... and {view.cited_by_count - len(view.cited_by)} more")


@app.command()
def show(
    id_or_label: Annotated[
        str, typer.Argument(help="a statement id, PAPER#LABEL, a Stacks label (algebra-lemma-NAK) or a unique label")
    ],
    depth: Annotated[int, typer.Option("--depth", min=0, help="how far to follow uses for definitions")] = 2,
    no_proof: Annotated[bool, typer.Option("--no-proof", help="leave the proof out")] = False,
    index: IndexOption = None,
    as_json: JsonOption = False,
    config: ConfigOption = None,
) -> None:
    """Show a statement: its text and proof, what it uses (statements and sections it references), what
    uses it, the definitions it depends on (directly, then through the statements it uses), the papers
    it cites (with their arXiv ids, and whether they are in the index), who cites its paper, and how it is
    cited: the sentences around the references to it."""
    view = MathRAG(_searched_settings(config, index)).statement(id_or_label, depth)
    if as_json:
        typer.echo(json.dumps(view.to_dict(), ensure_ascii=False))
    else:
        _print_view(view, proof=not no_proof)
