"""Offline retrieval evaluation: query sets, TREC files, ARQMath/thesis/known-item measures, reports.

from rag_app.evaluation import QuerySet, evaluate
result = evaluate(["bm25", "dense", "hybrid"], QuerySet.load(path), index=rag.index)
"""

from rag_app.datasets.query_set import EvalQuery, Protocol, QuerySet, QuerySetError
from rag_app.evaluation.evaluate import RetrieverScores, SetEvaluation, evaluate
from rag_app.evaluation.report import EvaluationReport
from rag_app.evaluation.retrievers import RETRIEVERS, Retriever, RunFileRetriever, build_retriever
from rag_app.evaluation.runner import EvalRequest, arqmath_query_set, run_evaluation
from rag_app.evaluation.trec_files import RunEntry, TrecFormatError, read_qrels, read_run, write_run
from retriever.text.formula_share import formula_share, formula_slice

__all__ = [
    "RETRIEVERS",
    "EvalQuery",
    "EvalRequest",
    "EvaluationReport",
    "Protocol",
    "QuerySet",
    "QuerySetError",
    "Retriever",
    "RetrieverScores",
    "RunEntry",
    "RunFileRetriever",
    "SetEvaluation",
    "TrecFormatError",
    "arqmath_query_set",
    "build_retriever",
    "evaluate",
    "formula_share",
    "formula_slice",
    "read_qrels",
    "read_run",
    "run_evaluation",
    "write_run",
]
