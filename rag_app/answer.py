"""What ``ask`` returns: the answer, the sources it was given, and what it cited."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from retriever.types import SearchHit


@dataclass
class Answer:
    question: str
    text: str
    sources: list[SearchHit]
    cited: list[int] = field(default_factory=list)
    invalid_citations: list[int] = field(default_factory=list)
    llm_error: str | None = None
    model: str | None = None

    @property
    def answered_by_llm(self) -> bool:
        return self.llm_error is None and bool(self.text)

    def to_dict(self) -> dict[str, object]:
        """The JSON shape of ``ask --json`` (a contract: fields are only ever added)."""
        return {
            "question": self.question,
            "answer": self.text,
            "cited": self.cited,
            "invalid_citations": self.invalid_citations,
            "llm_error": self.llm_error,
            "model": self.model,
            "sources": [hit.to_dict() for hit in self.sources],
        }


class AnswerStream:
    """An answer being generated: iterate for text chunks, then call :meth:`result`.

    ``sources`` is known before the first chunk, so a UI can show them while the model writes.
    """

    def __init__(self, sources: list[SearchHit], chunks: Iterator[str], finish: Callable[[str], Answer]) -> None:
        self.sources = sources
        self._chunks = chunks
        self._finish = finish
        self._parts: list[str] = []
        self._answer: Answer | None = None

    def __iter__(self) -> Iterator[str]:
        for chunk in self._chunks:
            self._parts.append(chunk)
            yield chunk

    def result(self) -> Answer:
        if self._answer is None:
            for _ in self:  # finish generation if the caller stopped early
                pass
            self._answer = self._finish("".join(self._parts))
        return self._answer
