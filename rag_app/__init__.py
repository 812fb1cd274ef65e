"""rag-app: retrieval-augmented question answering over mathematics.

Rooms by job: ``answering/`` (answers and their checks), ``search/`` (the search stack), ``indexing/``
(the index's writer and the ingest jobs that feed it; parsing sources is the top-level ``ingestion``),
``serving/`` (LLM and Chroma servers, packaged models), ``cli/`` (one module per command family),
``settings/`` (one module per stage), ``evaluation/``, ``training/``, ``datasets/`` (what those two both
read); ``pipeline`` (MathRAG) composes them behind the Python API.
"""

from retriever.moved_modules import keep_old_paths

# Modules that moved (issues 49 and 77): their old paths are aliases of the new modules until 2027-03-01.
MOVED_MODULES = {
    "rag_app.answer": "rag_app.answering.answer",
    "rag_app.answerer": "rag_app.answering.answerer",
    "rag_app.context": "rag_app.answering.context",
    "rag_app.citations": "rag_app.answering.citations",
    "rag_app.attribution": "rag_app.answering.attribution",
    "rag_app.statement_check": "rag_app.answering.statement_check",
    "rag_app.text_repair": "rag_app.answering.text_repair",
    "rag_app.quoted_answer": "rag_app.answering.quoted_answer",
    "rag_app.conversation": "rag_app.answering.conversation",
    "rag_app.yes_no_lead": "rag_app.answering.yes_no_lead",
    "rag_app.llm_client": "rag_app.serving.llm_client",
    "rag_app.llm_connection": "rag_app.serving.llm_connection",
    "rag_app.llm_server": "rag_app.serving.llm_server",
    "rag_app.server_process": "rag_app.serving.server_process",
    "rag_app.packaged_models": "rag_app.serving.packaged_models",
    "rag_app.chroma_server": "rag_app.serving.chroma_server",
    "rag_app.statement_writer": "rag_app.indexing.statement_writer",
    "rag_app.arxiv_month": "rag_app.indexing.arxiv_month",
    "rag_app.mse_ingest": "rag_app.indexing.mse_ingest",
    "rag_app.dask_ingest": "rag_app.indexing.dask_ingest",
    "rag_app.ingest_report": "rag_app.indexing.ingest_report",
    "rag_app.search_stack": "rag_app.search.search_stack",
    "rag_app.statement_rewrite": "rag_app.search.statement_rewrite",
    "rag_app.embedder_factory": "rag_app.search.embedder_factory",
    "rag_app.llama_index_retriever": "rag_app.search.llama_index_retriever",
    "rag_app.library": "ui.library",
    "rag_app.export": "ui.export",
    "rag_app.uploads": "ui.uploads",
    # Issue 77: what training and evaluation both read moved below both.
    "rag_app.evaluation.query_set": "rag_app.datasets.query_set",
    "rag_app.training.paper_split": "rag_app.datasets.paper_split",
    # Issue 77: the index's writers and the jobs that feed them, under a name apart from ``ingestion/``.
    "rag_app.ingest": "rag_app.indexing",
    # Issue 84: the reading of yes/no claims is pure text, beside the other text readers.
    "rag_app.answering.claim_verdict": "retriever.text.claims.claim_comparison",
    "rag_app.answering.claim_terms": "retriever.text.claims.claim_terms",
    **{
        f"rag_app.ingest.{name}": f"rag_app.indexing.{name}"
        for name in ("arxiv_month", "dask_ingest", "ingest_report", "low_priority", "mse_ingest", "statement_writer")
    },
}
keep_old_paths(MOVED_MODULES)

# ruff: noqa: E402 - the old paths must work before any submodule is imported

from rag_app.answering.answer import Answer, AnswerStream
from rag_app.indexing.ingest_report import IngestReport
from rag_app.pipeline import MathRAG, demo_corpus_path
from rag_app.settings import Settings

__all__ = ["Answer", "AnswerStream", "IngestReport", "MathRAG", "Settings", "demo_corpus_path"]
