from llama_index.core.schema import QueryBundle

from rag_app import MathRAG
from rag_app.search.llama_index_retriever import MathRAGRetriever


def test_llama_index_retriever_returns_scored_nodes(demo_rag: MathRAG) -> None:
    retriever = MathRAGRetriever(demo_rag, k=3)
    nodes = retriever.retrieve(QueryBundle("Banach fixed point contraction"))
    assert len(nodes) == 3
    top = nodes[0]
    assert top.node.metadata["name"] == "Banach fixed point"
    assert top.node.metadata["paper_id"] == "functional-analysis"
    assert "contraction" in top.node.get_content()
    assert top.score is not None and top.score >= nodes[1].score
