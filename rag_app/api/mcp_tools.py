"""The MCP server (the official ``mcp`` SDK): rag-app's search and answer as tools an LLM agent calls.

Served over stdio by `rag-app mcp` (a desktop agent starts it) and over streamable HTTP under ``/mcp``
by `rag-app serve`. The tools are thin adapters over :class:`ServingBackend`, the HTTP API's under
`serve`: the same search limit, queue for answers and deadlines (a tool past its deadline says so). The
descriptions are written for a model: what each tool returns, and how to cite what it found.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import date
from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field

from rag_app.api.errors import STATUS_OF, redacted
from rag_app.api.guards import QueueFullError
from rag_app.api.requests import FormulaRequest, SearchRequest
from rag_app.api.serving_backend import ServingBackend
from rag_app.pipeline import MathRAG
from rag_app.settings import Settings
from retriever import PaperHit, SearchHit

# What a tool reports to the model in words (a bad argument, an unknown statement, a damaged index, a
# time limit), as the HTTP API gives them a status; anything else is a crash, logged by the server.
KNOWN_ERRORS = (*(kind for kinds, _status in STATUS_OF for kind in kinds), QueueFullError, TimeoutError)

INSTRUCTIONS = """\
rag-app searches an index of mathematical statements (theorems, lemmas, definitions, propositions,
corollaries from LaTeX papers such as arXiv preprints and the Stacks project, and Math StackExchange
answers). Use search_statements to find the statements that answer a question, find_papers to find the
papers (or threads) that treat a topic, search_formula when you have a formula, get_statement to read one
statement whole with what it uses and what uses it, and ask for a short answer that quotes the statement
that answers. Cite a statement by its `cite_as` string (its kind and name, label, paper title and URL);
quote its `text` verbatim rather than paraphrasing it: hypotheses matter."""

CITE_HELP = "Each result has `cite_as` (kind, name, label, paper title, URL): cite it that way and quote `text` whole."


def compact_hit(hit: SearchHit) -> dict[str, Any]:
    """A search result as a model reads it: the statement and how to cite it, without the index's internals."""
    record = hit.record
    return {
        "rank": hit.rank,
        "score": round(hit.score, 4),
        "id": record.id,
        "kind": record.kind.value,
        "name": record.name,
        "label": record.label,
        "paper_id": record.paper_id,
        "source_title": record.source_title,
        "paper_title": record.source_title,  # its first name here, kept for clients that read it
        "section": record.section,
        "url": record.url,
        "text": record.text,
        "cite_as": cite_as(hit),
        "uses_count": hit.uses_count,
        "used_by_count": hit.used_by_count,
    }


def cite_as(hit: SearchHit) -> str:
    record = hit.record
    parts = [record.display_name]
    if record.label:
        parts.append(f"[{record.paper_id}#{record.label}]")
    parts.append(f"in {record.source_title}")
    if record.url:
        parts.append(record.url)
    return " ".join(parts)


def compact_paper(paper: PaperHit) -> dict[str, Any]:
    return {
        "rank": paper.rank,
        "score": round(paper.score, 4),
        "paper_id": paper.paper_id,
        "title": paper.title or (paper.hits[0].record.source_title if paper.hits else paper.paper_id),
        "authors": paper.authors,
        "url": paper.url,
        "statements": [compact_hit(hit) for hit in paper.hits],
    }


@contextmanager
def reported_to_the_model(settings: Settings) -> Iterator[None]:
    """A known failure as a tool error in words, without the server's paths (``<index>``, as HTTP says it)."""
    try:
        yield
    except KNOWN_ERRORS as error:
        raise ToolError(redacted(str(error), settings) or type(error).__name__) from error


def build_mcp_server(backend: ServingBackend | MathRAG | Callable[[], ServingBackend]) -> MCPServer:
    """The MCP server over a backend: the HTTP app's (``serve`` passes how to find the one its lifespan
    made), or one of its own over a :class:`MathRAG` (`rag-app mcp`, over stdio)."""
    if isinstance(backend, MathRAG):
        backend = ServingBackend(backend)
    own = backend
    current: Callable[[], ServingBackend] = (lambda: own) if isinstance(own, ServingBackend) else own
    server = MCPServer("rag-app", instructions=INSTRUCTIONS)

    @server.tool(
        description="Search the indexed statements (theorems, lemmas, definitions, ...) that answer a question or "
        "match keywords or LaTeX. Returns {'results': [...]}, best first, each with its text. " + CITE_HELP
    )
    async def search_statements(
        query: Annotated[str, Field(description="the question, keywords or LaTeX, as a mathematician would type it")],
        k: Annotated[int, Field(description="how many results (1-100)")] = 10,
        kind: Annotated[list[str] | None, Field(description="only these kinds: theorem, lemma, ...")] = None,
        source: Annotated[list[str] | None, Field(description="only these sources: arxiv, mse, local")] = None,
        category: Annotated[list[str] | None, Field(description="only arXiv papers in these categories")] = None,
        date_from: Annotated[date | None, Field(description="only papers from this date on (YYYY-MM-DD)")] = None,
        date_to: Annotated[date | None, Field(description="only papers up to this date (YYYY-MM-DD)")] = None,
    ) -> dict[str, Any]:
        with reported_to_the_model(current().rag.settings):
            filters = _filters(kind, source, category, date_from, date_to)
            hits = await current().search(SearchRequest(query=query, k=k, **filters))
            return {"results": [compact_hit(hit) for hit in hits]}

    @server.tool(
        description="Find the papers (Math StackExchange: threads) whose statements best match a topic. Returns "
        "{'papers': [...]}, each with its title, URL and best statements. " + CITE_HELP
    )
    async def find_papers(
        query: Annotated[str, Field(description="the topic or question")],
        k: Annotated[int, Field(description="how many papers (1-100)")] = 5,
    ) -> dict[str, Any]:
        with reported_to_the_model(current().rag.settings):
            papers = await current().papers(SearchRequest(query=query, k=k))
            return {"papers": [compact_paper(paper) for paper in papers]}

    @server.tool(
        description="Find statements that hold a formula, an equivalent rewrite of it or a similar one. Give one "
        r"formula in LaTeX, delimiters optional (\int_0^1 x^n dx). Returns {'results': [...]}. " + CITE_HELP
    )
    async def search_formula(
        formula: Annotated[str, Field(description="one formula in LaTeX")],
        k: Annotated[int, Field(description="how many results (1-100)")] = 10,
        kind: Annotated[list[str] | None, Field(description="only these kinds: theorem, lemma, ...")] = None,
        source: Annotated[list[str] | None, Field(description="only these sources: arxiv, mse, local")] = None,
        category: Annotated[list[str] | None, Field(description="only arXiv papers in these categories")] = None,
        date_from: Annotated[date | None, Field(description="only papers from this date on (YYYY-MM-DD)")] = None,
        date_to: Annotated[date | None, Field(description="only papers up to this date (YYYY-MM-DD)")] = None,
    ) -> dict[str, Any]:
        with reported_to_the_model(current().rag.settings):
            filters = _filters(kind, source, category, date_from, date_to)
            hits = await current().formula(FormulaRequest(formula=formula, k=k, **filters))
            return {"results": [compact_hit(hit) for hit in hits]}

    @server.tool(
        description="Read one statement whole by its id (from a search result) or label (PAPER#LABEL, or a Stacks "
        "project label such as algebra-lemma-NAK): its text and proof, the statements it uses, those that use "
        "it, and the definitions it relies on. Returns the statement record with 'uses', 'used_by', "
        "'definitions' and 'cite_as'."
    )
    async def get_statement(
        id_or_label: Annotated[str, Field(description="a result's id, or PAPER#LABEL")],
    ) -> dict[str, Any]:
        with reported_to_the_model(current().rag.settings):
            view = await current().statement(id_or_label)  # its id checked as `/v1/statements/...` checks it
            payload = view.to_dict()
            payload["cite_as"] = cite_as(SearchHit(view.record, 0.0, 0))
            return payload

    @server.tool(
        description="Answer a question from the index: the statements that answer it are chosen and quoted "
        "verbatim, numbered [n]. Returns the record of `rag-app ask --json`: {'answer', 'status', 'lead_in', "
        "'verdict' (yes, no, only_under, answers, unsure or not_found: what the first quote settles), 'confidence' "
        "(the calibrated probability that it settles the question), "
        "'sources': [...], 'cited': [n, ...], 'next_results': [...], ...}; status 'answered', 'not_found' (nothing "
        "relevant indexed) or another reason; cite the sources as their 'cite_as' says; 'next_results' are the "
        "same search's next statements, best first, not numbered. "
        "Slow on a CPU (tens of seconds): prefer search_statements when you can read."
    )
    async def ask(question: Annotated[str, Field(description="the question, LaTeX welcome")]) -> dict[str, Any]:
        with reported_to_the_model(current().rag.settings):
            serving = current()
            try:
                answer = await serving.ask(question)
            except QueueFullError:
                asks = serving.asks
                raise ToolError(f"busy: {asks.running} answers are being written and {asks.waiting} wait") from None
            # The answer record every front end gets, its statements as a model reads them: shorter, nothing renamed.
            record: dict[str, Any] = dict(await serving.record(answer))
            shown = serving.rag.settings.ui.next_results_shown
            record["sources"] = [compact_hit(hit) for hit in answer.sources]
            # the list the chat shows under the answer: the search's results after the sources
            record["next_results"] = [compact_hit(hit) for hit in answer.next_results[:shown]]
            return record

    return server


def _filters(
    kind: list[str] | None,
    source: list[str] | None,
    category: list[str] | None,
    date_from: date | None,
    date_to: date | None,
) -> dict[str, Any]:
    """A search tool's filters as the request takes them: the same for statements and formulas."""
    return {"kind": kind or [], "source": source or [], "category": category or [], "date_from": date_from,
            "date_to": date_to}  # fmt: skip
