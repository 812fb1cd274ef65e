"""Search with the query's ASCII-typed mathematics read as LaTeX first (``mu_p`` -> ``$\\mu_p$``).

Composed outermost, so every stage below it (each channel, the learned ranker's query features, the
reranker) reads the same query: the one a paper's notation would match. See
:mod:`retriever.text.query_notation` for what is rewritten and what is left alone.
"""

from __future__ import annotations

from retriever.search_filter import SearchFilter
from retriever.text.query_notation import read_typed_notation
from retriever.types import Query, ResultSearcher, SearchResult, StatementSearcher, run_search


class TypedNotationSearcher(ResultSearcher):
    """``search`` as the inner searcher, on the query with its typed notation written as LaTeX."""

    def __init__(self, statements: StatementSearcher) -> None:
        self.statements = statements

    def run(self, query: str, k: int, mode: str, where: SearchFilter | None = None) -> SearchResult:
        if isinstance(query, Query) and query.notation_read:  # read by the caller already: not read again
            return run_search(self.statements, query, k, mode, where)
        read = read_typed_notation(query)
        # the same text keeps its Query, and so its embedding (``ask`` reads the notation first)
        return run_search(self.statements, query if read == query else Query(read), k, mode, where)
