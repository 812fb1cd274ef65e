"""The answer, composed from its stages in the one place that orders them.

=====================  ===================================  ==============================  ==========================
stage                  in                                   out                             module
=====================  ===================================  ==============================  ==========================
read the question      the text, what was searched for it   :class:`Question`               ``question``
search                 the question                         :class:`Retrieval`              ``rag_app.pipeline``
gate                   the retrieval                        :class:`Relevance`, vectors     ``relevance_gate``
choose                 question, retrieval, relevance       candidates, :class:`SourceChoice`  ``choose_stage``
verdict                question, candidates, choice         :class:`VerdictRead`            ``verdict_stage``
lead-in and quotes     the generation (picks, verdict)      text, :class:`Generation`       ``quote_stage``
the model reads        question, candidates                 :class:`ModelPick` or a stream  ``model_reading``
checks                 text, generation, relevance          :class:`Checks`                 ``answer_checks``
record                 all of the above                     :class:`Answer`                 ``answer``
=====================  ===================================  ==============================  ==========================

:class:`rag_app.MathRAG` reads the question and searches; :meth:`Answerer.stream` runs the rest. A quoting answer
takes one of three routes: the learned chooser (its first quote under the verdict's lead-in at once, the model
reading after it and adding a statement where it points to another), the learned ranker sure of its first result
(quoted, no model), or the model choosing (the search's first result shown while it reads). A written answer
streams the model's text.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Generator
from dataclasses import replace

import retriever.deadline as deadline
from prompts import PromptTemplate, load_prompt
from rag_app.answering.answer import AnswerStream, AnswerUpdate
from rag_app.answering.answer_checks import llm_unavailable_notice, not_found_notice
from rag_app.answering.choose_stage import ChooseStage, source_candidates
from rag_app.answering.model_reading import Definitions, ModelReading
from rag_app.answering.question import Question
from rag_app.answering.quote_stage import (
    added_quote,
    picked_quote,
    quoted_ids,
    update_after_shown_first,
    verdict_quote,
)
from rag_app.answering.quoted_answer import ranker_is_sure, shown_first_heading
from rag_app.answering.record_stage import RecordStage
from rag_app.answering.relevance_gate import RelevanceGate, StoredVectors
from rag_app.answering.source_chooser import SourceChooser
from rag_app.answering.source_features import CitingSentences
from rag_app.answering.stages import Generation, Relevance, Retrieval, ShownFirst
from rag_app.answering.verdict_stage import VerdictStage
from rag_app.answering.written_checks import CUT_OFF
from rag_app.serving.llm_client import ChatClient, LLMUnavailableError
from rag_app.serving.llm_server import LLMServerError
from rag_app.serving.packaged_models import PackagedModelError
from rag_app.settings import Settings
from retriever import Embedder, SearchHit

__all__ = ["CUT_OFF", "Answerer", "Retrieval"]  # Retrieval and CUT_OFF are imported from here by older callers

MODEL_DOWN = (LLMUnavailableError, LLMServerError, PackagedModelError)
Chunks = Generator[str | AnswerUpdate, None, Generation]


class Answerer:
    """Streams an answer to a question from its retrieved sources, stage by stage (see the module's table).

    ``vectors`` gives the stored vectors of statement ids a search did not bring with its hits; ``client`` the chat
    client, started on first use; ``definitions`` the definitions a statement relies on (the statement graph);
    ``citing`` the sentences that cite each statement; ``verdict`` the verdict stage (None: the quote stands alone).
    """

    def __init__(
        self,
        settings: Settings,
        embedder: Embedder,
        vectors: StoredVectors,
        client: Callable[[], ChatClient],
        definitions: Definitions | None = None,
        citing: CitingSentences | None = None,
        verdict: VerdictStage | None = None,
    ) -> None:
        self.settings = settings
        self.embedder = embedder
        self.gate = RelevanceGate(settings.answers.min_relevance, embedder, vectors)
        self.choosing = ChooseStage(settings.answers.quote, definitions, citing)
        self.model = ModelReading(settings, client, definitions)
        self.verdict = verdict

    def stream(self, question: Question | str, retrieval: Retrieval, started: float) -> AnswerStream:
        """The answer's stream: nothing is generated when no source is similar enough to the question (the answer
        says so and keeps the closest statements); when the LLM is down, the answer says so and keeps the sources.
        ``question``: as read (a text is read here, as searched by ``retrieval``); ``started``: when the question
        came (timings count from there)."""
        if isinstance(question, str):
            question = Question.read(question, retrieval.search)
        asked = question
        relevance, vectors = self.gate.read(retrieval)
        answers = self.settings.answers
        retrieval_ms = (time.perf_counter() - started) * 1000
        quoting = answers.style == "quote"
        prompt = load_prompt(answers.quote.prompt if quoting else self.settings.llm.prompt)

        def chunks() -> Chunks:
            generation = Generation(prompt.identity, answers.style)
            if not relevance.passed:
                yield not_found_notice(relevance.score, answers.min_relevance, bool(retrieval.hits))
                return generation
            try:
                deadline.check("the LLM")
                if quoting:
                    return (yield from self._quoted(prompt, asked, retrieval, relevance, generation, started))
                return (yield from self._written(prompt, asked, retrieval, relevance, generation))
            except MODEL_DOWN as error:
                return replace(generation, llm_error=str(error))

        record = RecordStage(asked.text, retrieval, relevance, vectors, retrieval_ms, answers, self.embedder)
        return AnswerStream(retrieval.hits, chunks(), record, started, retrieval.next_hits)

    # ---------------------------------------------------------------- a written answer
    def _written(
        self, prompt: PromptTemplate, question: Question, retrieval: Retrieval, relevance: Relevance,
        generation: Generation,
    ) -> Chunks:  # fmt: skip
        """The model's written answer, streamed, over the sources that fit its window."""
        answers = self.settings.answers
        client = self.model.client()
        generation = replace(generation, model=client.model, server=client.base_url)
        similarities = relevance.similarities
        candidates = source_candidates(retrieval.hits, similarities, answers.max_sources, answers.source_margin)
        messages, generation = self.model.messages(
            client, prompt, question, candidates, generation, answers.sources_budget_tokens, answers.max_source_tokens
        )
        yield from client.stream_chat(messages)
        return generation

    # ---------------------------------------------------------------- a quoting answer: which route
    def _quoted(
        self, prompt: PromptTemplate, question: Question, retrieval: Retrieval, relevance: Relevance,
        generation: Generation, started: float,
    ) -> Chunks:  # fmt: skip
        """The quoting answer: the learned chooser's route, the ranker's sure first result, or the model's choice."""
        quote = self.settings.answers.quote
        candidates = source_candidates(retrieval.hits, relevance.similarities, quote.max_sources, quote.source_margin)
        chooser = self.choosing.chooser if retrieval.learned_ranker else None
        if chooser is not None:
            return (yield from self._chosen(prompt, question, relevance, candidates, chooser, generation, started))
        if retrieval.learned_ranker and ranker_is_sure(candidates, quote.ranker_sure_margin):
            # the learned ranker's first result clearly leads: quoted without asking the model (at search speed,
            # and when the server is down too)
            generation = replace(generation, sources=tuple(candidates), picked=(1,), chosen_by="ranker")
            text, generation = picked_quote(generation, quote.unsure_quotes)
            yield text
            return generation
        if retrieval.learned_ranker and quote.reading_gap is not None:
            candidates = [hit for hit in candidates if candidates[0].score - hit.score <= quote.reading_gap]
        return (yield from self._model_chooses(prompt, question, candidates, generation, started))

    def _chosen(
        self, prompt: PromptTemplate, question: Question, relevance: Relevance, candidates: list[SearchHit],
        chooser: SourceChooser, generation: Generation, started: float,
    ) -> Chunks:  # fmt: skip
        """The learned chooser's route: the source most likely to answer quoted at once under the verdict's lead-in
        (what it settles, how sure; where nothing answers, the closest under "Nothing in the index answers this");
        without a verdict stage, under the chooser's own notice where none is likely to answer. Then
        (``model_adds``) the model reads the sources and a statement it picks that is not quoted yet is added below.
        The model never takes back the first quote: its pick was measured worse than the search's first result."""
        quote = self.settings.answers.quote
        choice = self.choosing.choose(chooser, question, candidates, relevance)
        picked = (choice.first,) if choice.answers else ()
        generation = replace(generation, sources=tuple(candidates), picked=picked, chosen_by="chooser")
        generation = replace(generation, choice_of=choice)
        if self.verdict is not None:
            read, ms = self.verdict.read(question, candidates, choice, relevance.score)
            text, generation = verdict_quote(replace(generation, verdict=read, verdict_ms=ms), quote.unsure_quotes)
        else:
            text, generation = picked_quote(generation, quote.unsure_quotes)
        yield text
        if not quote.model_adds or not generation.picked or len(generation.picked) >= quote.max_quotes:
            return generation
        if ranker_is_sure(candidates, quote.ranker_sure_margin):
            return generation  # the model is asked only where the ranker is not sure, as with no chooser: the same cost
        return (yield from self._model_adds(prompt, question, candidates, generation, text, started))

    def _model_adds(
        self, prompt: PromptTemplate, question: Question, candidates: list[SearchHit], generation: Generation,
        text: str, started: float,
    ) -> Chunks:  # fmt: skip
        """The model reads the sources after the first quote; a statement it picks that is not quoted yet is added."""
        shown = ShownFirst(generation.picked, (time.perf_counter() - started) * 1000)
        try:
            pick = self.model.pick(prompt, question, candidates, generation)
        except MODEL_DOWN as error:
            notice = f"The language model is not available ({error}); the quote above is the answer."
            return replace(generation, shown_first=replace(shown, kept=True, notice=notice))
        read = pick.generation
        generation = replace(
            generation, model=read.model, server=read.server, context=read.context, reply=read.reply,
            choice=pick.probabilities, model_calls=(*generation.model_calls, pick.call),
        )  # fmt: skip
        quoted = quoted_ids(generation)
        added = next((n for n in pick.picked if read.sources[n - 1].record.id not in quoted), None)
        if added is None:
            return replace(generation, shown_first=replace(shown, kept=True, notice=""))
        number = [hit.record.id for hit in generation.sources].index(read.sources[added - 1].record.id) + 1
        unsure = self.settings.answers.quote.unsure_quotes
        update, generation = added_quote(generation, number, len(read.sources), text, unsure)
        yield update
        return replace(generation, shown_first=replace(shown, kept=True, notice=update.notice))

    def _model_chooses(
        self, prompt: PromptTemplate, question: Question, candidates: list[SearchHit], generation: Generation,
        started: float,
    ) -> Chunks:  # fmt: skip
        """The model picks among short views of the sources and the answer quotes its picks. With
        ``answers.quote.show_first`` the search's first result is quoted at once and the model's choice follows as an
        :class:`AnswerUpdate` (then a model that is down leaves the first result standing, under a notice)."""
        quote = self.settings.answers.quote
        shown: ShownFirst | None = None
        if quote.show_first and candidates:
            first = replace(generation, sources=tuple(candidates), picked=(1,), chosen_by="search")
            first_text, _ = picked_quote(first, quote.unsure_quotes)
            shown = ShownFirst((1,), (time.perf_counter() - started) * 1000)
            yield f"{shown_first_heading(len(candidates))}\n\n{first_text}"
        try:
            pick = self.model.pick(prompt, question, candidates, generation)
        except MODEL_DOWN as error:
            if shown is None:
                raise
            notice = "The language model is not available, so the statement shown first was not checked by it."
            yield AnswerUpdate(llm_unavailable_notice(str(error)), f"\n\n{notice}", True, notice)
            return replace(generation, llm_error=str(error), shown_first=replace(shown, notice=notice))
        generation = replace(
            pick.generation, picked=pick.picked, chosen_by="model", choice=pick.probabilities,
            model_calls=(*generation.model_calls, pick.call),
        )  # fmt: skip
        text, generation = picked_quote(generation, quote.unsure_quotes)
        if shown is None:
            yield text
            return generation
        update = update_after_shown_first(shown, generation, text)
        yield update
        kept = bool(generation.picked) and generation.picked[0] in shown.picked
        return replace(generation, shown_first=replace(shown, kept=kept, notice=update.notice))

