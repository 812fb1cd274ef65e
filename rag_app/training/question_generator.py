"""LLM-generated training questions, one per statement, as in the reference thesis.

The configured OpenAI-compatible endpoint (vLLM in production, the local llama.cpp server here)
is asked for strict JSON ``{"question": "..."}``. Replies are repaired the way the thesis did
(unescaped LaTeX backslashes escaped, the JSON object cut out of any chatter around it) and retried
when still malformed. Requests run with bounded concurrency, and every answer is cached in SQLite
by (prompt version, model, statement id), so a rerun never pays twice.
"""

from __future__ import annotations

import json
import re
import sqlite3
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path

from tqdm import tqdm

from ingestion import StatementRecord
from prompts import PromptTemplate, load_prompt
from rag_app.serving.llm_client import ChatClient, LLMUnavailableError
from rag_app.training.training_pairs import TrainingPair

PROMPT = "question_generation"
MAX_STATEMENT_CHARS = 1500


class MalformedReplyError(ValueError):
    """The model's reply held no usable ``{"question": ...}`` object, even after repair."""


def parse_question(reply: str) -> str:
    """The question in a model reply, repairing unescaped backslashes and surrounding chatter."""
    candidate = extract_json_object(reply)
    if candidate is None:
        raise MalformedReplyError(f"no JSON object in the reply: {reply[:120]!r}")
    # Escaping first matters: "\frac" parses as a form feed plus "rac" and would pass silently.
    for text in (escape_backslashes(candidate), candidate):
        try:
            data = json.loads(text)
        except json.JSONDecodeError:
            continue
        question = data.get("question") if isinstance(data, dict) else None
        if isinstance(question, str) and len(question.strip()) >= 8:
            return " ".join(question.split())
        raise MalformedReplyError(f"the JSON object has no usable 'question': {candidate[:120]!r}")
    raise MalformedReplyError(f"the JSON object does not parse, even repaired: {candidate[:120]!r}")


def extract_json_object(text: str) -> str | None:
    """The first balanced ``{...}`` in ``text`` (braces inside strings do not count)."""
    start = text.find("{")
    while start != -1:
        depth, in_string, escaped = 0, False, False
        for position in range(start, len(text)):
            char = text[position]
            if in_string:
                if escaped:
                    escaped = False
                elif char == "\\":
                    escaped = True
                elif char == '"':
                    in_string = False
            elif char == '"':
                in_string = True
            elif char == "{":
                depth += 1
            elif char == "}":
                depth -= 1
                if depth == 0:
                    return text[start : position + 1]
        start = text.find("{", start + 1)
    return None


_BACKSLASH = re.compile(r'\\\\|\\"|\\')


def escape_backslashes(text: str) -> str:
    """Double every lone backslash (LaTeX commands); keep ``\\\\`` and ``\\"`` as JSON escapes."""
    return _BACKSLASH.sub(lambda m: m.group(0) if len(m.group(0)) == 2 else "\\\\", text)


class QuestionCache:
    """Generated questions on disk, keyed by prompt version, model and statement id (thread-safe)."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(path, check_same_thread=False)
        self._lock = threading.Lock()
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS question (prompt TEXT, model TEXT, statement_id TEXT, question TEXT,"
            " PRIMARY KEY (prompt, model, statement_id))"
        )
        self._db.commit()

    def get(self, prompt: str, model: str, statement_id: str) -> str | None:
        with self._lock:
            row = self._db.execute(
                "SELECT question FROM question WHERE prompt = ? AND model = ? AND statement_id = ?",
                (prompt, model, statement_id),
            ).fetchone()
        return row[0] if row else None

    def put(self, prompt: str, model: str, statement_id: str, question: str) -> None:
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO question VALUES (?, ?, ?, ?)", (prompt, model, statement_id, question)
            )
            self._db.commit()

    def close(self) -> None:
        self._db.close()


@dataclass
class GenerationReport:
    pairs: list[TrainingPair] = field(default_factory=list)
    generated: int = 0
    cached: int = 0
    failures: dict[str, str] = field(default_factory=dict)  # statement id -> reason
    repaired: int = 0  # replies that parsed only after repair or a retry


class QuestionGenerator:
    def __init__(
        self,
        client: ChatClient,
        cache: QuestionCache,
        concurrency: int = 4,
        attempts: int = 3,
        prompt: PromptTemplate | None = None,
        max_statement_chars: int = MAX_STATEMENT_CHARS,
        reconnect: Callable[[], ChatClient] | None = None,
    ) -> None:
        self.client = client
        # A client again after the server went away (``rag.llm.client``: a dead local server is restarted).
        # Without it, a job of hours whose llama.cpp server died failed every question left, fast.
        self.reconnect = reconnect
        self.max_statement_chars = max_statement_chars
        self.cache = cache
        self.concurrency = concurrency
        self.attempts = attempts
        self.prompt = prompt or load_prompt(PROMPT)

    @property
    def prompt_key(self) -> str:
        return f"{self.prompt.name}@v{self.prompt.version}"

    def generate(self, records: Sequence[StatementRecord], show_progress: bool = False) -> GenerationReport:
        report = GenerationReport()
        model = self.client.model
        todo = []
        for record in records:
            cached = self.cache.get(self.prompt_key, model, record.id)
            if cached is not None:
                report.cached += 1
                report.pairs.append(TrainingPair(cached, record.id, "question"))
            else:
                todo.append(record)
        with (
            ThreadPoolExecutor(max_workers=self.concurrency) as pool,
            tqdm(total=len(todo), desc="generating questions", unit="stmt", disable=not show_progress) as bar,
        ):
            futures = {pool.submit(self._question, record): record for record in todo}
            for future in as_completed(futures):
                record = futures[future]
                bar.update(1)
                try:
                    question, repaired = future.result()
                except (MalformedReplyError, LLMUnavailableError) as error:
                    report.failures[record.id] = str(error)
                    continue
                self.cache.put(self.prompt_key, model, record.id, question)
                report.generated += 1
                report.repaired += repaired
                report.pairs.append(TrainingPair(question, record.id, "question"))
        return report

    def _question(self, record: StatementRecord) -> tuple[str, bool]:
        messages = self.prompt.messages(
            kind=record.display_name,
            title=record.source_title,
            statement=record.text[: self.max_statement_chars],
        )
        last_error: MalformedReplyError | None = None
        for attempt in range(self.attempts):
            try:
                reply = self.client.chat(messages)
            except LLMUnavailableError:
                if self.reconnect is None:
                    raise
                self.client = self.reconnect()  # raises in its turn when no server can be had
                reply = self.client.chat(messages)
            try:
                question = parse_question(reply)
            except MalformedReplyError as error:
                last_error = error
                continue
            return question, attempt > 0 or needed_repair(reply)
        assert last_error is not None
        raise MalformedReplyError(f"{record.id}: {self.attempts} malformed replies; last: {last_error}")


def needed_repair(reply: str) -> bool:
    """Whether the reply had chatter around its JSON object or lone backslashes inside it."""
    candidate = extract_json_object(reply)
    return candidate is not None and (candidate != reply.strip() or escape_backslashes(candidate) != candidate)
