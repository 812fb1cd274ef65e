"""LLM-written questions for statements, kept as one versioned JSON-lines file that reruns extend.

The first line is a header: format and version, the prompt and model, the corpus the statements come
from and its license. Every further line is one question for one statement. A rerun reads the file,
skips the statements it already has and appends the rest as they are generated, a few at a time: a
run stopped at any point loses at most the questions in flight, and the file can be copied to another
machine (a GPU box serving vLLM) and extended there.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ingestion import StatementRecord
from rag_app.training.question_generator import GenerationReport, QuestionGenerator
from rag_app.training.training_pairs import TrainingPair

FORMAT = "rag-app-generated-questions"
VERSION = 1


class QuestionFileError(ValueError):
    """A questions file that cannot be read or extended, with the line at fault."""


@dataclass(frozen=True, slots=True)
class GeneratedQuestion:
    statement_id: str
    docno: str
    paper_id: str
    question: str
    model: str
    prompt: str


@dataclass
class QuestionFile:
    """The header and the questions of one file (``load`` reads it, ``append`` extends it on disk)."""

    path: Path
    header: dict[str, Any] = field(default_factory=dict)
    questions: list[GeneratedQuestion] = field(default_factory=list)

    @classmethod
    def load(cls, path: Path) -> QuestionFile:
        if not path.exists():
            return cls(path)
        questions: list[GeneratedQuestion] = []
        header: dict[str, Any] = {}
        text = path.read_text(encoding="utf-8")
        lines = text.splitlines()
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                data = json.loads(line)
                if number == 1:
                    header = data
                    if header.get("format") != FORMAT:
                        raise QuestionFileError(f"{path}:1: not a generated-questions file ({FORMAT})")
                    if int(header.get("version", 0)) > VERSION:
                        raise QuestionFileError(f"{path}:1: version {header['version']} is newer than this code")
                    continue
                questions.append(GeneratedQuestion(**data))
            except (json.JSONDecodeError, TypeError) as error:
                if number == len(lines) and not text.endswith("\n"):
                    break  # a last line cut off by a kill: the next run regenerates it
                raise QuestionFileError(f"{path}:{number}: not a generated question ({error})") from error
        return cls(path, header, questions)

    @property
    def statement_ids(self) -> set[str]:
        return {q.statement_id for q in self.questions}

    def pairs(self, statement_ids: set[str] | None = None) -> list[TrainingPair]:
        """Training pairs (kind ``question``), optionally only for some statements (the training split)."""
        return [
            TrainingPair(q.question, q.statement_id, "question")
            for q in self.questions
            if statement_ids is None or q.statement_id in statement_ids
        ]

    def start(self, header: dict[str, Any]) -> None:
        """Write the header of a new file (an existing file keeps its own)."""
        if self.path.exists() and self.path.stat().st_size:
            self._rewrite_if_truncated()
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.header = {"format": FORMAT, "version": VERSION, **header}
        self.path.write_text(json.dumps(self.header, ensure_ascii=False) + "\n", encoding="utf-8")

    def append(self, questions: Sequence[GeneratedQuestion]) -> None:
        with self.path.open("a", encoding="utf-8") as handle:
            for question in questions:
                handle.write(json.dumps(asdict(question), ensure_ascii=False) + "\n")
            handle.flush()
        self.questions.extend(questions)

    def _rewrite_if_truncated(self) -> None:
        """A run killed mid-line leaves a partial last line: rewrite the file without it."""
        text = self.path.read_text(encoding="utf-8")
        if text.endswith("\n"):
            return
        kept = text[: text.rfind("\n") + 1]
        self.path.write_text(kept, encoding="utf-8")


@dataclass
class ExtendReport:
    path: Path
    existing: int
    added: int
    failed: int
    remaining: int  # statements still without a question
    seconds: float


def extend_questions(
    question_file: QuestionFile,
    records: Sequence[StatementRecord],
    generator: QuestionGenerator,
    header: dict[str, Any],
    limit: int | None = None,
    chunk: int = 8,
    seed: int = 2026,
    show_progress: bool = False,
    log: Callable[[str], None] = print,
) -> ExtendReport:
    """Generate questions for the statements the file lacks (a seeded order, so a partial file is a sample)."""
    started = time.perf_counter()
    question_file.start(header)
    done = question_file.statement_ids
    todo = [record for record in records if record.id not in done]
    random.Random(seed).shuffle(todo)
    if limit is not None:
        todo = todo[:limit]
    existing, added, failed = len(question_file.questions), 0, 0
    for start in range(0, len(todo), chunk):
        batch = todo[start : start + chunk]
        report: GenerationReport = generator.generate(batch, show_progress=False)
        by_id = {record.id: record for record in batch}
        new = [
            GeneratedQuestion(p.statement_id, by_id[p.statement_id].docno, by_id[p.statement_id].paper_id,
                              p.anchor, generator.client.model, generator.prompt_key)
            for p in report.pairs
        ]  # fmt: skip
        question_file.append(new)
        added += len(new)
        failed += len(report.failures)
        for reason in list(report.failures.values())[:1]:  # one reason per chunk: a pattern shows, no flood
            log(f"question failed: {reason}")
        if show_progress:
            log(f"questions: {existing + added:,} in {question_file.path.name} (+{added:,} this run, {failed} failed)")
    remaining = sum(1 for record in records if record.id not in question_file.statement_ids)
    return ExtendReport(question_file.path, existing, added, failed, remaining, time.perf_counter() - started)
