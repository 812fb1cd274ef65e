"""Retrievers by name, so that one command can run several side by side.

A retriever turns a query into a ranked run: ``RunEntry(docno, score, paper_id)``. Index-backed
retrievers are named by search mode (:data:`RETRIEVERS`); ``NAME+dense2`` fuses in the second
embedding model's channel (what ask and the chat use); ``NAME+rerank`` is that retriever followed by
the cross-encoder over its top N (``NAME+dense2+rerank``: both). The name grammar and the searchers
are the search stack's (``rag_app.search.search_stack``). ``run:PATH`` replays a TREC run file, ours or anyone's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from rag_app.datasets.query_set import EvalQuery
from rag_app.evaluation.trec_files import RunEntry, read_run
from rag_app.search.search_stack import RunName, SearchStack, UnknownRunNameError
from retriever.search_mode import SearchMode
from retriever.types import StatementSearcher


class Retriever(Protocol):
    name: str

    def retrieve(self, query: EvalQuery, k: int) -> list[RunEntry]: ...


class IndexRetriever:
    """A searcher of the index (the first stage, or a stage composed around it) in one mode;
    statements that share a docno count once."""

    def __init__(self, name: str, searcher: StatementSearcher, mode: SearchMode) -> None:
        self.name = name
        self.searcher = searcher
        self.mode = mode

    def retrieve(self, query: EvalQuery, k: int) -> list[RunEntry]:
        entries: list[RunEntry] = []
        seen: set[str] = set()
        for hit in self.searcher.search(query.text, k, self.mode):
            docno = hit.record.docno
            if docno not in seen:
                seen.add(docno)
                entries.append(RunEntry(docno, hit.score, hit.record.paper_id))
        return entries


class RunFileRetriever:
    """A fixed TREC run: each topic's results as the file ranks them."""

    def __init__(self, path: str | Path, name: str | None = None) -> None:
        self.path = Path(path)
        self.name = name or self.path.name
        self.run = read_run(self.path)

    def retrieve(self, query: EvalQuery, k: int) -> list[RunEntry]:
        return self.run.get(query.qid, [])[:k]


# The index-backed retrievers: one per search mode, each also as NAME+dense2, NAME+rerank, NAME+dense2+rerank.
RETRIEVERS: dict[str, SearchMode] = {mode.value: mode for mode in SearchMode}

# Retrievers that read the formula-fusion vectors: the evaluation brings them up to date first.
FUSION_RETRIEVERS = frozenset({"fusion", "fusion-maxsim"})

DEFAULT_RETRIEVERS = ("bm25", "dense", "hybrid")

def build_retriever(spec: str, stack: SearchStack | None) -> Retriever:
    """A retriever from its name (``bm25``, ``hybrid``, ``hybrid-formula+dense2+rerank``, ...) or
    ``run:PATH``; the index's searchers come from ``stack``, the one place they are composed."""
    if spec.startswith("run:"):
        return RunFileRetriever(spec.removeprefix("run:"))
    RunName.parse(spec)  # an unknown name is reported before a missing index
    if stack is None:
        raise UnknownRunNameError(f"retriever {spec!r} needs an index")
    searcher, mode = stack.for_run_name(spec)
    return IndexRetriever(spec, searcher, mode)
