"""rag-app: retrieval-augmented question answering over mathematics.

Rooms by job: ``answering/`` (answers and their checks), ``search/`` (the search stack), ``indexing/``
(the index's writer and the ingest jobs that feed it; parsing sources is the top-level ``ingestion``),
``serving/`` (LLM and Chroma servers, packaged models), ``cli/`` (one module per command family),
``settings/`` (one module per stage), ``evaluation/``, ``training/``, ``datasets/`` (what those two both
read); ``pipeline`` (MathRAG) composes them behind the Python API.
"""

from rag_app.answering.answer import Answer, AnswerStream
from rag_app.indexing.ingest_report import IngestReport
from rag_app.pipeline import MathRAG, demo_corpus_path
from rag_app.settings import Settings

__all__ = ["Answer", "AnswerStream", "IngestReport", "MathRAG", "Settings", "demo_corpus_path"]
