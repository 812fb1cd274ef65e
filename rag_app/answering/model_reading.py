"""The model's reading of the sources: the prompt that fits its window, and its pick of the sources that answer.

Both the quoting answer (the model picks source numbers) and the written answer (the model writes, citing [n]) give
the model the same prompt: as many sources as fit its window, counted with its tokenizer, each under the
definitions it relies on where ``answers.source_definitions`` asks for them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from ingestion.records import StatementRecord
from prompts import PromptTemplate
from rag_app.answering.context import definitions_note, estimate_tokens, new_fence_key, pack_sources
from rag_app.answering.question import Question
from rag_app.answering.quoted_answer import choice_probabilities, parse_selection
from rag_app.answering.stages import ContextReport, Generation, ModelCall
from rag_app.serving.llm_client import ChatClient
from rag_app.settings import Settings
from retriever.types import SearchHit

Definitions = Callable[[str, int], Sequence[StatementRecord]]  # (statement id, how many): nearest first


@dataclass(frozen=True, slots=True)
class ModelPick:
    """What the model picked of the sources it read: ``generation`` holds the sources given (numbered from 1), the
    prompt's packing, the model's name and its reply; ``picked``: the source numbers, best first (none: it judged
    that none answers); ``probabilities``: how sure it was of its first pick; ``call``: how long it took."""

    generation: Generation
    picked: tuple[int, ...]
    probabilities: dict[str, float]
    call: ModelCall


class ModelReading:
    """The prompts the model reads, and its pick among the sources (a chat call raises the client's errors)."""

    def __init__(self, settings: Settings, client: Callable[[], ChatClient], definitions: Definitions | None) -> None:
        self.settings = settings
        self.client = client
        self.definitions = definitions

    def pick(
        self, prompt: PromptTemplate, question: Question, candidates: Sequence[SearchHit], generation: Generation
    ) -> ModelPick:
        """The model's pick among ``candidates`` (``answers.quote``: its budget, how many it may pick)."""
        quote = self.settings.answers.quote
        client = self.client()
        generation = replace(generation, model=client.model, server=client.base_url)
        messages, generation = self.messages(
            client, prompt, question, candidates, generation, quote.sources_budget_tokens, quote.max_source_tokens,
            proofs=False,
        )  # fmt: skip
        asked = time.perf_counter()
        reply, alternatives = client.chat_with_alternatives(messages, max_tokens=quote.max_tokens)
        given = len(generation.sources)
        return ModelPick(
            replace(generation, reply=reply),
            tuple(parse_selection(reply, given, quote.max_quotes)),
            choice_probabilities(alternatives, given),
            ModelCall("choice", (time.perf_counter() - asked) * 1000),
        )

    def messages(
        self,
        client: ChatClient,
        prompt: PromptTemplate,
        question: Question,
        hits: Sequence[SearchHit],
        generation: Generation,
        sources_budget: int | None,
        max_source_tokens: int | None,
        proofs: bool | None = None,
    ) -> tuple[list[dict[str, str]], Generation]:
        """The prompt with as many sources as fit the model's window (and ``sources_budget``), counted with
        its tokenizer, and ``generation`` with the sources given and how they were packed; ``proofs``: give
        each source's proof (unset: as ``answers.proofs`` says)."""
        llm = self.settings.llm
        window = client.context_window() or llm.context_window
        fence = new_fence_key()
        text = question.for_model
        frame = prompt.messages(sources="", question=text, fence=fence)
        system_text = "\n".join(message["content"] for message in frame if message["role"] == "system")
        rest_text = "\n".join(message["content"] for message in frame if message["role"] != "system")
        system_tokens = client.count_tokens(system_text) or estimate_tokens(system_text)
        rest_tokens = client.count_tokens(rest_text) or estimate_tokens(rest_text)
        frame_tokens = system_tokens + rest_tokens
        # Chat templates add a few tokens per message around the contents.
        budget = window - llm.max_tokens - frame_tokens - 16 * len(frame)
        checks = self.settings.answers
        if proofs is None:
            proofs = checks.proofs == "always" or (checks.proofs == "auto" and question.asks_for_proof)
        if sources_budget is not None:
            budget = min(budget, sources_budget)
        packed = pack_sources(
            list(hits), max(0, budget), fence, client.count_tokens, max_source_tokens, proofs,
            self._definition_notes(hits), prompt.layout,
        )  # fmt: skip
        context = ContextReport(
            packed.tokens + frame_tokens,
            packed.counted,
            window,
            len(packed.hits),
            packed.trimmed,
            packed.dropped,
            system_tokens,
            rest_tokens,
            packed.source_tokens,
            packed.proofs,
        )
        messages = prompt.messages(sources=packed.text, question=text, fence=fence)
        return messages, replace(generation, sources=tuple(packed.hits), context=context)

    def _definition_notes(self, hits: Sequence[SearchHit]) -> dict[str, str]:
        """Under each source, the definitions it references (``answers.source_definitions`` of them)."""
        checks = self.settings.answers
        if not checks.source_definitions or self.definitions is None:
            return {}
        notes = {}
        for hit in hits[: checks.max_sources]:
            definitions = self.definitions(hit.record.id, checks.source_definitions)
            note = definitions_note(definitions, checks.definition_tokens)
            if note:
                notes[hit.record.id] = note
        return notes
