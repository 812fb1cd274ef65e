"""rag-app: retrieval-augmented question answering over mathematics."""

from rag_app.answer import Answer, AnswerStream
from rag_app.ingest_report import IngestReport
from rag_app.pipeline import MathRAG, demo_corpus_path
from rag_app.settings import Settings

__all__ = ["Answer", "AnswerStream", "IngestReport", "MathRAG", "Settings", "demo_corpus_path"]
