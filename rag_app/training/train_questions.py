"""The ``train questions`` job: LLM questions for an index's training statements, into the questions file."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

from rag_app.datasets.paper_split import split_of
from rag_app.settings import Settings
from rag_app.training.index_store import open_index_store
from rag_app.training.question_file import ExtendReport, QuestionFile, extend_questions
from rag_app.training.question_generator import QuestionCache, QuestionGenerator

DEFAULT_LICENSE = "that of the statements they paraphrase (see each source's license)"


def default_questions_file(settings: Settings) -> Path:
    """Where ``train questions`` writes and ``train rerank`` / ``train embed --llm-questions`` read."""
    return settings.training.rerank.questions_file or settings.data_dir / "training" / "questions.jsonl"


def judged_docnos(query_sets: Sequence[Path]) -> set[str]:
    """Every docno a query set judges (any grade): the statements its questions are about."""
    from rag_app.datasets.query_set import QuerySet

    return {docno for path in query_sets for query in QuerySet.load(path).queries for docno in query.relevant}


def generate_questions(
    settings: Settings,
    index_dir: Path,
    path: Path,
    limit: int | None = None,
    license_note: str | None = None,
    show_progress: bool = False,
    log: Callable[[str], None] = print,
    exclude_sets: Sequence[Path] = (),
) -> ExtendReport:
    """Extend ``path`` with questions for the training statements it lacks (held-out ones stay unseen).

    ``exclude_sets``: query sets whose judged statements get no question, so that nothing trained on the
    file has seen a development set's answers (its relevant docnos are left out)."""
    from rag_app.pipeline import MathRAG

    store, _ = open_index_store(index_dir, settings.store.connection())
    records = list(store.iter_records())
    if not records:
        raise ValueError(f"the index in {index_dir} holds no statements")
    split = split_of(records, settings.training.embed)  # held-out statements get no question
    train_records = split.training_records(records)
    excluded = judged_docnos(exclude_sets)
    if excluded:
        kept = [record for record in train_records if record.docno not in excluded]
        log(f"{len(train_records) - len(kept):,} training statements judged by {len(exclude_sets)} set(s) left out")
        train_records = kept
    question_file = QuestionFile.load(path)
    # Some variety between retries of a malformed reply; a question is short.
    rag = MathRAG(settings.with_overrides({"llm.temperature": 0.7, "llm.max_tokens": 160}))
    cache = QuestionCache(settings.data_dir / "training" / "questions.sqlite")
    try:
        generator = QuestionGenerator(
            rag.llm.client(),
            cache,
            settings.training.embed.question_concurrency,
            settings.training.embed.question_attempts,
            max_statement_chars=settings.training.embed.question_statement_chars,
            reconnect=rag.llm.client,
        )
        header = {
            "prompt": generator.prompt_key,
            "model": generator.client.model,
            "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "corpus": {
                "index": str(index_dir),
                "statements": len(records),
                "training_statements": len(train_records),
                "sources": dict(Counter(r.source.value for r in records)),
                "papers": len({r.paper_id for r in records}),
                "split_seed": split.seed,
            },
            "license": license_note or DEFAULT_LICENSE,
            "excluded_sets": [path.name for path in exclude_sets],
        }
        log(f"{len(question_file.questions):,} questions in {path}; {len(train_records):,} training statements")
        return extend_questions(
            question_file, train_records, generator, header, limit, seed=split.seed, show_progress=show_progress,
            log=log,
        )  # fmt: skip
    finally:
        cache.close()
        rag.close()
