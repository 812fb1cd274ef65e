"""Retrievers by name, so that one command can run several side by side.

A retriever turns a query into a ranked run: ``RunEntry(docno, score, paper_id)``. Index-backed
retrievers are registered in :data:`RETRIEVERS`; later variants (fine-tuned embeddings, formula
fusion) register here under their own names. ``NAME+dense2`` fuses in the second embedding model's
channel (what ask and the chat use); ``NAME+rerank`` is that retriever followed by the cross-encoder
over its top N (``NAME+dense2+rerank``: both). ``run:PATH`` replays a TREC run file, ours or anyone's.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from rag_app.evaluation.query_set import EvalQuery
from rag_app.evaluation.trec_files import RunEntry, read_run
from retriever import SearchMode, StatementIndex
from retriever.reranking_searcher import RerankingSearcher
from retriever.types import StatementSearcher


class Retriever(Protocol):
    name: str

    def retrieve(self, query: EvalQuery, k: int) -> list[RunEntry]: ...


class IndexRetriever:
    """One search mode of a :class:`StatementIndex` (or a searcher composed around it, such as
    :class:`RerankingSearcher`); statements that share a docno count once."""

    def __init__(self, name: str, index: StatementSearcher, mode: SearchMode) -> None:
        self.name = name
        self.index = index
        self.mode = mode

    def retrieve(self, query: EvalQuery, k: int) -> list[RunEntry]:
        entries: list[RunEntry] = []
        seen: set[str] = set()
        for hit in self.index.search(query.text, k, self.mode):
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


RetrieverFactory = Callable[[StatementIndex], Retriever]

RETRIEVERS: dict[str, RetrieverFactory] = {
    "bm25": lambda index: IndexRetriever("bm25", index, SearchMode.BM25),
    "dense": lambda index: IndexRetriever("dense", index, SearchMode.DENSE),
    "hybrid": lambda index: IndexRetriever("hybrid", index, SearchMode.HYBRID),
    "hybrid-formula": lambda index: IndexRetriever("hybrid-formula", index, SearchMode.HYBRID_FORMULA),
    "formula": lambda index: IndexRetriever("formula", index, SearchMode.FORMULA),
    "fusion": lambda index: IndexRetriever("fusion", index, SearchMode.FUSION),
    "fusion-maxsim": lambda index: IndexRetriever("fusion-maxsim", index, SearchMode.FUSION_MAXSIM),
}

# Retrievers that read the formula-fusion vectors: the evaluation brings them up to date first.
FUSION_RETRIEVERS = frozenset({"fusion", "fusion-maxsim"})

DEFAULT_RETRIEVERS = ("bm25", "dense", "hybrid")

RERANK_SUFFIX = "+rerank"  # `hybrid-formula+rerank`: that retriever's top N rescored by the cross-encoder
SECOND_EMBEDDING_SUFFIX = "+dense2"  # `hybrid-formula+dense2`: fused with the second embedding model
# The reranking searcher around an index, or around the index fused with the second model (the flag).
RerankingFactory = Callable[[StatementIndex, bool], RerankingSearcher]
EnsembleFactory = Callable[[StatementIndex], StatementSearcher]


class UnknownRetrieverError(ValueError):
    pass


def build_retriever(
    spec: str,
    index: StatementIndex | None,
    reranking: RerankingFactory | None = None,
    ensemble: EnsembleFactory | None = None,
) -> Retriever:
    """A retriever from its name (``bm25``, ``hybrid``, ``hybrid-formula+dense2+rerank``, ...) or ``run:PATH``.

    ``reranking`` makes the reranking searcher around an index (from the ``[rerank]`` settings);
    ``ensemble`` the index fused with the second embedding model (``[second_embedding]``).
    """
    if spec.startswith("run:"):
        return RunFileRetriever(spec.removeprefix("run:"))
    reranked = spec.endswith(RERANK_SUFFIX)
    with_second = spec.removesuffix(RERANK_SUFFIX).endswith(SECOND_EMBEDDING_SUFFIX)
    base = spec.removesuffix(RERANK_SUFFIX).removesuffix(SECOND_EMBEDDING_SUFFIX)
    if base not in RETRIEVERS:
        known = ", ".join([*RETRIEVERS, "NAME+dense2", "NAME+rerank", "NAME+dense2+rerank", "run:PATH"])
        raise UnknownRetrieverError(f"unknown retriever {spec!r} (known: {known})")
    if index is None:
        raise UnknownRetrieverError(f"retriever {spec!r} needs an index")
    retriever = RETRIEVERS[base](index)
    if base == spec:
        return retriever
    assert isinstance(retriever, IndexRetriever)
    if reranked:
        if reranking is None:
            raise UnknownRetrieverError(f"retriever {spec!r} needs the reranker settings")
        return IndexRetriever(spec, reranking(index, with_second), retriever.mode)
    if ensemble is None:
        raise UnknownRetrieverError(f"retriever {spec!r} needs the second embedding model (second_embedding.model)")
    return IndexRetriever(spec, ensemble(index), retriever.mode)
