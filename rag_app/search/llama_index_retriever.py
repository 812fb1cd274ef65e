"""Our retrieval as a llama-index retriever, for other llama-index pipelines to use."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

from retriever import SearchHit, SearchMode


class Searches(Protocol):
    """What the retriever needs of :class:`rag_app.MathRAG` (its search); named here, so that the search stack does
    not import the pipeline that composes it."""

    def search(self, query: str, k: int | None = None, mode: SearchMode | str | None = None) -> Sequence[SearchHit]: ...


# Carried by the node itself (id, text, score) or too bulky for metadata filters.
_NOT_METADATA = {"id", "text", "score", "rank", "formulas", "channel_ranks"}


class MathRAGRetriever(BaseRetriever):
    """Wraps :meth:`MathRAG.search`; each statement becomes a ``TextNode`` with its provenance."""

    def __init__(self, rag: Searches, k: int | None = None, mode: SearchMode | str | None = None) -> None:
        super().__init__()
        self._rag = rag
        self._k = k
        self._mode = mode

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        nodes = []
        for hit in self._rag.search(query_bundle.query_str, self._k, self._mode):
            # The hit's JSON fields (one definition, in SearchHit.to_dict) become node metadata.
            metadata = {key: value for key, value in hit.to_dict().items() if key not in _NOT_METADATA}
            node = TextNode(id_=hit.record.id, text=hit.record.text, metadata=metadata)
            nodes.append(NodeWithScore(node=node, score=hit.score))
        return nodes
