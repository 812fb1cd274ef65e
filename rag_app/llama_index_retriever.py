"""Our retrieval as a llama-index retriever, for other llama-index pipelines to use."""

from __future__ import annotations

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

from rag_app.pipeline import MathRAG
from retriever import SearchMode


class MathRAGRetriever(BaseRetriever):
    """Wraps :meth:`MathRAG.search`; each statement becomes a ``TextNode`` with its provenance."""

    def __init__(self, rag: MathRAG, k: int | None = None, mode: SearchMode | str | None = None) -> None:
        super().__init__()
        self._rag = rag
        self._k = k
        self._mode = mode

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        nodes = []
        for hit in self._rag.search(query_bundle.query_str, self._k, self._mode):
            record = hit.record
            node = TextNode(
                id_=record.id,
                text=record.text,
                metadata={
                    "kind": record.kind.value,
                    "name": record.name,
                    "display_name": record.display_name,
                    "paper_id": record.paper_id,
                    "title": record.title,
                    "label": record.label,
                    "section": record.section,
                    "url": record.url,
                    "source": record.source.value,
                },
            )
            nodes.append(NodeWithScore(node=node, score=hit.score))
        return nodes
