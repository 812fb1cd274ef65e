"""What a client sends to the HTTP API, checked before any work: each request a typed record whose
fields are the CLI's flags (``search --json``'s ``k``, ``mode``, ``--source``, ``--kind``, ...)."""

from __future__ import annotations

from datetime import date

from pydantic import BaseModel, ConfigDict, Field

from ingestion.unreadable_text import check_readable
from rag_app.api.errors import BadRequestError
from rag_app.settings import ApiSettings
from retriever import SearchFilter, SearchMode


class FilteredRequest(BaseModel):
    """The filters every search takes, as the CLI's ``--source``, ``--kind``, ``--category``, ``--from``, ``--to``
    (``/v1/formula`` and MCP's formula search take all five too)."""

    model_config = ConfigDict(extra="forbid")

    source: list[str] = Field(default_factory=list, description="only these sources: arxiv, mse, local")
    kind: list[str] = Field(default_factory=list, description="only these kinds: theorem, lemma, definition, ...")
    category: list[str] = Field(default_factory=list, description="only arXiv papers in these categories (math.AG)")
    date_from: date | None = Field(None, description="only papers from this date on (YYYY-MM-DD)")
    date_to: date | None = Field(None, description="only papers up to this date (YYYY-MM-DD)")

    def _filters_checked(self) -> dict[str, list[str]]:
        """The filter values as checked: surrogate pairs joined, a character no encoder reads refused."""
        return {
            name: [check_readable(value, f"{name}[{i}]") for i, value in enumerate(values)]
            for name, values in (("source", self.source), ("kind", self.kind), ("category", self.category))
        }

    def where(self) -> SearchFilter:
        return SearchFilter(
            sources=frozenset(self.source),
            kinds=frozenset(self.kind),
            categories=frozenset(self.category),
            date_from=self.date_from,
            date_to=self.date_to,
        )


class SearchRequest(FilteredRequest):
    """``GET /v1/search?query=...`` or the same fields as a JSON body to ``POST /v1/search``."""

    query: str = Field(description="the question, keywords or formula (LaTeX welcome)")
    k: int | None = Field(None, description="results wanted (default: retrieval.top_k; at most api.max_k)")
    mode: SearchMode | None = Field(None, description="retriever (default: retrieval.mode)")
    formula: bool = Field(False, description="the query is one formula: statements holding it or a similar one")

    def checked(self, limits: ApiSettings) -> SearchRequest:
        """This request as it is searched: its texts checked and read once, and searched as checked
        (surrogate pairs joined)."""
        check_k(self.k, limits)
        return self.model_copy(update={"query": check_text(self.query, "query", limits), **self._filters_checked()})


class FormulaRequest(FilteredRequest):
    """``GET /v1/formula?formula=...`` or ``POST /v1/formula``."""

    formula: str = Field(description=r"one formula, delimiters optional (\int \frac{dx}{(x^2+1)^n})")
    k: int | None = Field(None, description="results wanted (at most api.max_k)")

    def checked(self, limits: ApiSettings) -> FormulaRequest:
        check_k(self.k, limits)
        return self.model_copy(
            update={"formula": check_text(self.formula, "formula", limits), **self._filters_checked()}
        )


class AskRequest(BaseModel):
    """``POST /v1/ask`` and ``POST /v1/ask/stream``."""

    model_config = ConfigDict(extra="forbid")

    question: str = Field(description="a question, LaTeX welcome")
    k: int | None = Field(None, description="sources retrieved (default: retrieval.top_k; at most api.max_k)")

    def checked(self, limits: ApiSettings) -> AskRequest:
        check_k(self.k, limits)
        return self.model_copy(update={"question": check_text(self.question, "question", limits)})


def check_text(text: str, name: str, limits: ApiSettings) -> str:
    """``text`` as it is read from here on (surrogate pairs joined), or a 400 naming the field: a lone surrogate
    or NUL (UnreadableTextError), an empty text, one over ``api.max_query_chars``."""
    text = check_readable(text, name)
    if not text.strip():
        raise BadRequestError(f"{name} is empty")
    if len(text) > limits.max_query_chars:
        raise BadRequestError(
            f"{name} is {len(text):,} characters, over the limit of {limits.max_query_chars:,} (api.max_query_chars)"
        )
    return text


def check_id(id_or_label: str, limits: ApiSettings) -> None:
    """A statement's id or label, as ``/v1/statements/...`` and the MCP ``get_statement`` tool take it."""
    check_readable(id_or_label, "the id or label")
    if len(id_or_label) > limits.max_query_chars:
        raise BadRequestError(f"the id or label is over {limits.max_query_chars:,} characters (api.max_query_chars)")


def check_k(k: int | None, limits: ApiSettings) -> None:
    if k is not None and not 1 <= k <= limits.max_k:
        raise BadRequestError(f"k must be between 1 and {limits.max_k} (api.max_k); got {k}")
