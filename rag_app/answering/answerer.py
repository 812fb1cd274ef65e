"""Answering from retrieved statements: which sources the model reads, the prompt that fits its window,
the streamed answer, and the checks after it (citations to sources given, each sentence attributed to
what its sources state).

:class:`MathRAG` searches; an :class:`Answerer` takes the :class:`Retrieval` and a chat client from
there on. Each stage hands the next an immutable record (:mod:`rag_app.answering.stages`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import replace

import numpy as np

import retriever.deadline as deadline
from ingestion.records import StatementRecord
from prompts import PromptTemplate, load_prompt
from rag_app.answering.answer import Answer, AnswerStream, AnswerUpdate
from rag_app.answering.claim_readings import ClaimReadings
from rag_app.answering.context import (
    asks_for_proof,
    definitions_note,
    estimate_tokens,
    new_fence_key,
    pack_sources,
)
from rag_app.answering.quoted_answer import (
    choice_probabilities,
    parse_selection,
    quoted_answer,
    ranker_is_sure,
    shown_first_heading,
)
from rag_app.answering.quoted_answer import quote as quote_block
from rag_app.answering.source_chooser import SourceChooser
from rag_app.answering.source_features import CitingSentences, SourceFeatures
from rag_app.answering.stages import (
    AnswerStatus,
    Checks,
    ContextReport,
    Generation,
    ModelCall,
    Relevance,
    Retrieval,
    ShownFirst,
)
from rag_app.answering.verdict import NOTHING_ANSWERS, AnswerVerdict
from rag_app.answering.verdict_stage import VerdictStage
from rag_app.answering.written_checks import CUT_OFF, WrittenAnswerChecks
from rag_app.serving.llm_client import ChatClient, LLMUnavailableError
from rag_app.serving.llm_server import LLMServerError
from rag_app.serving.packaged_models import PackagedModelError
from rag_app.settings import Settings
from retriever import Embedder, SearchHit

__all__ = ["CUT_OFF", "Answerer", "Retrieval"]  # Retrieval and CUT_OFF lived here first

_CHOOSERS: dict[str, SourceChooser] = {}  # a chooser's weights by spec, read once per process

SCOPE_DEFINITIONS = 3  # the definitions in a statement's scope whose names the chooser reads as the statement's words


class Answerer:
    """Streams an answer to a question from its retrieved sources.

    ``vectors`` gives the stored vectors of statement ids a search did not bring with its hits (a
    searcher written outside this package); ``client`` gives the chat client, started on first use;
    ``definitions`` the definitions a statement relies on (the statement graph), for
    ``answers.source_definitions``; ``verdict`` the verdict stage (None: no verdict is read, the quote stands alone).
    """

    def __init__(
        self,
        settings: Settings,
        embedder: Embedder,
        vectors: Callable[[Sequence[str]], Mapping[str, np.ndarray]],
        client: Callable[[], ChatClient],
        definitions: Callable[[str, int], Sequence[StatementRecord]] | None = None,
        citing: CitingSentences | None = None,
        verdict: VerdictStage | None = None,
    ) -> None:
        self.settings = settings
        self.embedder = embedder
        self.vectors = vectors
        self.client = client
        self.definitions = definitions  # (statement id, how many): the definitions it relies on, nearest first
        self.citing = citing  # (statement ids): the sentences that cite each (the chooser reads them)
        self.claims = ClaimReadings()  # the question and its claim's readings of each source, each made once
        self.verdict = verdict

    def stream(self, question: str, retrieval: Retrieval, started: float) -> AnswerStream:
        """Check that something relevant was found, then stream the LLM's answer. Nothing is generated
        when no source is similar enough to the question (the answer says so and keeps the closest
        statements); when the LLM is down, the answer says so and keeps the sources. After generation,
        citations are validated and each sentence is attributed to its sources. ``started``: when the
        question came (timings count from there)."""
        hits = retrieval.hits
        relevance, vectors = self.relevance(retrieval)
        similarities = relevance.similarities
        checks = self.settings.answers
        retrieval_ms = (time.perf_counter() - started) * 1000
        quoting = checks.style == "quote"
        prompt = load_prompt(checks.quote.prompt if quoting else self.settings.llm.prompt)
        search = retrieval.search
        # The model reads the question as asked, and what it means in the conversation.
        prompt_question = f"{question}\n(In this conversation: {search.query})" if search.rewritten else question

        def chunks() -> Generator[str | AnswerUpdate, None, Generation]:
            generation = Generation(prompt.identity, checks.style)
            if not relevance.passed:
                yield _not_found_notice(relevance.score, checks.min_relevance, bool(hits))
                return generation
            try:
                deadline.check("the LLM")
                if quoting:
                    return (yield from self._quote(prompt, prompt_question, retrieval, relevance, generation, started))
                client = self.client()
                generation = replace(generation, model=client.model, server=client.base_url)
                candidates = self._source_candidates(hits, similarities, checks.max_sources, checks.source_margin)
                messages, generation = self._messages(
                    client, prompt, prompt_question, candidates, generation,
                    checks.sources_budget_tokens, checks.max_source_tokens,
                )  # fmt: skip
                yield from client.stream_chat(messages)
            except (LLMUnavailableError, LLMServerError, PackagedModelError) as error:
                generation = replace(generation, llm_error=str(error))
            return generation

        def finish(text: str, generation: Generation, stream: AnswerStream) -> Answer:
            validation_started = time.perf_counter()
            answer_checks = self._checks(text, generation, relevance, vectors, question)
            timings = _timings(retrieval, generation, retrieval_ms, stream, validation_started)
            return Answer(question, retrieval, relevance, generation, answer_checks, checks.min_support, timings)

        return AnswerStream(hits, chunks(), finish, started, retrieval.next_hits)

    def relevance(self, retrieval: Retrieval) -> tuple[Relevance, Mapping[str, np.ndarray]]:
        """The question's cosine with each source (the gate before any answer), and the sources' vectors."""
        hits = retrieval.hits
        vectors = self._hit_vectors(retrieval)
        hit_vectors = np.stack([vectors[h.record.id] for h in hits]) if hits else np.zeros((0, 1), np.float32)
        # the question's vector is the one its search embedded (embedded here only if no channel did)
        similarities = hit_vectors @ retrieval.result.query.vector(self.embedder) if hits else np.zeros(0)
        return Relevance(similarities, self.settings.answers.min_relevance), vectors

    def source_features(
        self, question: str, candidates: Sequence[SearchHit], relevance: Relevance, learned: bool
    ) -> SourceFeatures:
        """What the chooser reads of each candidate source (:mod:`rag_app.answering.source_features`)."""
        scope = self.definitions
        in_scope = (lambda statement_id: scope(statement_id, SCOPE_DEFINITIONS)) if scope is not None else None
        similarities = relevance.similarities[: len(candidates)]
        return SourceFeatures.of(
            self.claims.asked(question), candidates, similarities, learned, in_scope, self.citing, self.claims.reading
        )  # fmt: skip

    def _hit_vectors(self, retrieval: Retrieval) -> Mapping[str, np.ndarray]:
        """The hits' stored vectors: those the search read with the records (all of them, for the
        searchers composed here), any other read from the store."""
        brought = retrieval.result.vectors
        missing = [hit.record.id for hit in retrieval.hits if hit.record.id not in brought]
        return {**brought, **self.vectors(missing)} if missing else brought

    def _checks(
        self,
        text: str,
        generation: Generation,
        relevance: Relevance,
        vectors: Mapping[str, np.ndarray],
        question: str,
    ) -> Checks:
        """The answer's text after the checks that fit how it was made."""
        if not relevance.passed:
            return Checks(text, AnswerStatus.NOT_FOUND)
        if generation.llm_error is not None:
            # (asked only once a relevant statement was found: there are statements to list)
            return Checks(_llm_unavailable_notice(generation.llm_error), AnswerStatus.LLM_UNAVAILABLE, text)
        if generation.style == "quote":
            sentences = list(generation.quoted)
            status = AnswerStatus.ANSWERED if generation.picked else AnswerStatus.UNSUPPORTED
            return Checks(text, status, generation.reply, [s.cited[0] for s in sentences], sentences=sentences)
        sources = list(generation.sources)
        source_vectors = np.stack([vectors[h.record.id] for h in sources]) if sources else np.zeros((0, 1), np.float32)
        return WrittenAnswerChecks(self.settings.answers, self.embedder).check(text, sources, source_vectors, question)

    @staticmethod
    def _source_candidates(
        hits: list[SearchHit], similarities: np.ndarray, max_sources: int, margin: float | None
    ) -> list[SearchHit]:
        """The hits worth the model's reading time: at most ``max_sources``, and (with ``margin``) only
        those about as similar to the question as the best one."""
        best = float(similarities.max()) if len(similarities) else 0.0
        pairs = zip(hits, similarities, strict=True)
        kept = [hit for hit, similarity in pairs if margin is None or similarity >= best - margin]
        return kept[:max_sources]

    def _quote(
        self,
        prompt: PromptTemplate,
        question: str,
        retrieval: Retrieval,
        relevance: Relevance,
        generation: Generation,
        started: float,
    ) -> Generator[str | AnswerUpdate, None, Generation]:
        """The quoting answer's text: the model picks among short views of the sources; the answer quotes
        its picks. Where the learned ranker's first result clearly leads (``answers.quote.ranker_sure_margin``),
        it is quoted without asking the model: that answer needs no model at all (it is given when the
        server is down too). Where the model chooses, the search's first result is quoted at once
        (``answers.quote.show_first``) and the model's choice follows as an :class:`AnswerUpdate`."""
        quote = self.settings.answers.quote
        hits, similarities = retrieval.hits, relevance.similarities
        candidates = self._source_candidates(hits, similarities, quote.max_sources, quote.source_margin)
        chooser = self.chooser() if retrieval.learned_ranker else None
        if chooser is not None:
            chosen = self._chosen(prompt, question, relevance, candidates, chooser, generation, started)
            return (yield from chosen)
        if retrieval.learned_ranker and ranker_is_sure(candidates, quote.ranker_sure_margin):
            generation = replace(generation, sources=tuple(candidates), picked=(1,), chosen_by="ranker")
            text, generation = self._quoted_text(generation)
            yield text
            return generation
        if retrieval.learned_ranker and quote.reading_gap is not None:
            candidates = [hit for hit in candidates if candidates[0].score - hit.score <= quote.reading_gap]
        shown: ShownFirst | None = None
        if quote.show_first and candidates:
            first = replace(generation, sources=tuple(candidates), picked=(1,), chosen_by="search")
            first_text, _ = self._quoted_text(first)
            shown = ShownFirst((1,), (time.perf_counter() - started) * 1000)
            yield f"{shown_first_heading(len(candidates))}\n\n{first_text}"
        try:
            client = self.client()
            generation = replace(generation, model=client.model, server=client.base_url)
            messages, generation = self._messages(
                client, prompt, question, candidates, generation, quote.sources_budget_tokens,
                quote.max_source_tokens, proofs=False,
            )  # fmt: skip
            asked = time.perf_counter()
            reply, alternatives = client.chat_with_alternatives(messages, max_tokens=quote.max_tokens)
        except (LLMUnavailableError, LLMServerError, PackagedModelError) as error:
            if shown is None:
                raise
            notice = "The language model is not available, so the statement shown first was not checked by it."
            yield AnswerUpdate(_llm_unavailable_notice(str(error)), f"\n\n{notice}", True, notice)
            return replace(generation, llm_error=str(error), shown_first=replace(shown, notice=notice))
        given = len(generation.sources)
        generation = replace(
            generation,
            reply=reply,
            picked=tuple(parse_selection(reply, given, quote.max_quotes)),
            chosen_by="model",
            choice=choice_probabilities(alternatives, given),
            model_calls=(*generation.model_calls, ModelCall("choice", (time.perf_counter() - asked) * 1000)),
        )
        text, generation = self._quoted_text(generation)
        if shown is None:
            yield text
            return generation
        update = _update_after_shown_first(shown, generation, text)
        yield update
        kept = bool(generation.picked) and generation.picked[0] in shown.picked
        return replace(generation, shown_first=replace(shown, kept=kept, notice=update.notice))

    def chooser(self) -> SourceChooser | None:
        """The learned chooser ``answers.quote.chooser`` names (None: "none", the model chooses); read once."""
        spec = self.settings.answers.quote.chooser
        if spec.strip().lower() in ("none", "off", ""):
            return None
        if spec not in _CHOOSERS:
            _CHOOSERS[spec] = SourceChooser.load(spec)
        return _CHOOSERS[spec]

    def _chosen(
        self,
        prompt: PromptTemplate,
        question: str,
        relevance: Relevance,
        candidates: list[SearchHit],
        chooser: SourceChooser,
        generation: Generation,
        started: float,
    ) -> Generator[str | AnswerUpdate, None, Generation]:
        """The learned chooser's answer: the source most likely to answer is quoted at once under the verdict's
        lead-in (what it settles, how sure; where nothing answers, the closest under "Nothing in the index answers
        this"); without a verdict stage, under the chooser's own notice where none is likely to answer. Then
        (``model_adds``) the model reads the sources and a statement it picks that is not quoted yet is added below.
        The model never takes back the first quote: its pick was measured worse than the search's first result."""
        choice = chooser.choose(self.source_features(question, candidates, relevance, learned=True))
        picked = (choice.first,) if choice.answers else ()
        generation = replace(generation, sources=tuple(candidates), picked=picked, chosen_by="chooser")
        generation = replace(generation, choice_of=choice)
        if self.verdict is not None:
            yes_no = self.claims.asked(question).yes_no
            read, ms = self.verdict.read(question, candidates, choice, relevance.score, yes_no)
            text, generation = self._verdict_text(replace(generation, verdict=read, verdict_ms=ms))
        else:
            text, generation = self._quoted_text(generation)
        yield text
        quote = self.settings.answers.quote
        if not quote.model_adds or not generation.picked or len(generation.picked) >= quote.max_quotes:
            return generation
        if ranker_is_sure(candidates, quote.ranker_sure_margin):
            return generation  # the model is asked only where the ranker is not sure, as with no chooser: the same cost
        shown = ShownFirst(generation.picked, (time.perf_counter() - started) * 1000)
        try:
            client = self.client()
            model = replace(generation, model=client.model, server=client.base_url)
            messages, model = self._messages(
                client, prompt, question, candidates, model, quote.sources_budget_tokens, quote.max_source_tokens,
                proofs=False,
            )  # fmt: skip
            asked = time.perf_counter()
            reply, alternatives = client.chat_with_alternatives(messages, max_tokens=quote.max_tokens)
        except (LLMUnavailableError, LLMServerError, PackagedModelError) as error:
            notice = f"The language model is not available ({error}); the quote above is the answer."
            return replace(generation, shown_first=replace(shown, kept=True, notice=notice))
        given = len(model.sources)
        picks = parse_selection(reply, given, quote.max_quotes)
        generation = replace(
            generation, model=model.model, server=model.server, context=model.context, reply=reply,
            choice=choice_probabilities(alternatives, given),
            model_calls=(*generation.model_calls, ModelCall("choice", (time.perf_counter() - asked) * 1000)),
        )  # fmt: skip
        added = next((n for n in picks if model.sources[n - 1].record.id not in _quoted_ids(generation)), None)
        if added is None:
            return replace(generation, shown_first=replace(shown, kept=True, notice=""))
        number = [hit.record.id for hit in generation.sources].index(model.sources[added - 1].record.id) + 1
        with_added = replace(generation, picked=(*generation.picked, number))
        unsure = quote.unsure_quotes
        _, sentences = quoted_answer(with_added.sources, with_added.picked, unsure)
        notice = f"The model read the {given} statements found and points to [{number}] as well:"
        block = quote_block(with_added.sources[number - 1], number)
        yield AnswerUpdate(f"{text}\n\n{notice}\n\n{block}", f"\n\n{notice}\n\n{block}", False, notice)
        return replace(with_added, quoted=tuple(sentences), shown_first=replace(shown, kept=True, notice=notice))

    def _verdict_text(self, generation: Generation) -> tuple[str, Generation]:
        """The quote under the verdict's lead-in: the first of its order quoted as the answer, or where nothing
        answers, the closest ``answers.quote.unsure_quotes`` under "Nothing in the index answers this"."""
        read = generation.verdict
        assert read is not None
        if read.verdict is AnswerVerdict.NOT_FOUND:
            closest = read.order[: self.settings.answers.quote.unsure_quotes]
            text, sentences = quoted_answer(generation.sources, closest)
            return f"{NOTHING_ANSWERS}\n\n{text}", replace(generation, picked=(), quoted=tuple(sentences))
        picked = read.order[:1]
        text, sentences = quoted_answer(generation.sources, picked)
        text = f"{read.lead_in}\n\n{text}" if read.lead_in else text
        return text, replace(generation, picked=picked, quoted=tuple(sentences))

    def _quoted_text(self, generation: Generation) -> tuple[str, Generation]:
        """The quote of ``generation``'s picks; with none picked, the closest under the notice that none was judged to
        answer (in the learned chooser's order, ``generation.choice_of``, where it read them)."""
        choice = generation.choice_of
        unsure = self.settings.answers.quote.unsure_quotes
        closest = choice.order if choice is not None else None
        text, sentences = quoted_answer(generation.sources, generation.picked, unsure, closest)
        return text, replace(generation, quoted=tuple(sentences))

    def _messages(
        self,
        client: ChatClient,
        prompt: PromptTemplate,
        question: str,
        hits: list[SearchHit],
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
        frame = prompt.messages(sources="", question=question, fence=fence)
        system_text = "\n".join(message["content"] for message in frame if message["role"] == "system")
        rest_text = "\n".join(message["content"] for message in frame if message["role"] != "system")
        system_tokens = client.count_tokens(system_text) or estimate_tokens(system_text)
        rest_tokens = client.count_tokens(rest_text) or estimate_tokens(rest_text)
        frame_tokens = system_tokens + rest_tokens
        # Chat templates add a few tokens per message around the contents.
        budget = window - llm.max_tokens - frame_tokens - 16 * len(frame)
        checks = self.settings.answers
        if proofs is None:
            proofs = checks.proofs == "always" or (checks.proofs == "auto" and asks_for_proof(question))
        if sources_budget is not None:
            budget = min(budget, sources_budget)
        packed = pack_sources(
            hits, max(0, budget), fence, client.count_tokens, max_source_tokens, proofs, self._definition_notes(hits),
            prompt.layout,
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
        messages = prompt.messages(sources=packed.text, question=question, fence=fence)
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


def _quoted_ids(generation: Generation) -> set[str]:
    return {generation.sources[n - 1].record.id for n in generation.picked}


def _update_after_shown_first(shown: ShownFirst, generation: Generation, text: str) -> AnswerUpdate:
    """What the model's choice makes of the statement shown first: the answer as it now stands, and what a reader
    who saw it is told (``changed``: the first quote is no longer the answer's first)."""
    given = len(generation.sources)
    read = f"The model read the {given} statements found" if given > 1 else "The model read the statement found"
    first = ", ".join(f"[{number}]" for number in shown.picked)
    picked = generation.picked
    if not picked:
        notice = f"{read} and judged that none of them answers the question; {first} was the search's first result."
        return AnswerUpdate(f"{notice}\n\n{text}", f"\n\n---\n\n{notice}\n\n{text}", True, notice, text)
    chosen = " and ".join(f"[{number}]" for number in picked)
    if picked[0] not in shown.picked:
        notice = f"{read} and chose {chosen} instead of {first}, the search's first result shown first."
        return AnswerUpdate(f"{notice}\n\n{text}", f"\n\n---\n\n{notice}\n\n{text}", True, notice, text)
    added = [number for number in picked if number not in shown.picked]
    if not added:
        notice = f"{read} and chose {first} as well."
        return AnswerUpdate(text, f"\n\n{notice}", False, notice)
    more = " and ".join(f"[{number}]" for number in added)
    notice = f"{read} and chose {chosen}: {more} added."
    added_quotes = "\n\n".join(quote_block(generation.sources[number - 1], number) for number in added)
    return AnswerUpdate(text, f"\n\n{notice}\n\n{added_quotes}", False, notice)


def _llm_unavailable_notice(error: str) -> str:
    return (
        f"The language model is not available ({error}). The statements retrieved for your question are listed below."
    )


def _not_found_notice(relevance: float | None, threshold: float, any_hits: bool) -> str:
    if not any_hits:
        return "The index holds no statement that matches this question, so no answer was generated."
    return (
        "The indexed corpus does not seem to contain an answer to this question: its closest statement has "
        f"similarity {relevance:.2f}, under the threshold {threshold:.2f}. No answer was generated; the closest "
        "statements are listed below."
    )


def _timings(
    retrieval: Retrieval, generation: Generation, retrieval_ms: float, stream: AnswerStream, validation_started: float
) -> dict[str, float]:
    """Milliseconds from the question: retrieval (the cross-encoder's share of it: rerank), the yes/no
    verdict, the calls made to the model before the answer's text (``model_calls``: the rewrite, the choice,
    the model's verdict; ``model_calls`` in the answer lists each), first text, whole answer, validation, total."""
    now = time.perf_counter()
    timings = {"retrieval": retrieval_ms}
    if generation.verdict_ms:
        timings["verdict"] = generation.verdict_ms
    calls = [*retrieval.model_calls, *generation.model_calls]
    if calls:
        timings["model_calls"] = sum(call.ms for call in calls)
    if retrieval.result.reranker:
        timings["rerank"] = retrieval.result.rerank_ms
    if stream.first_chunk_s is not None:
        timings["first_token"] = stream.first_chunk_s * 1000
    if stream.generated_s is not None:
        timings["full_answer"] = stream.generated_s * 1000
    timings["validation"] = (now - validation_started) * 1000
    timings["total"] = (now - stream.started) * 1000
    return {name: round(value, 1) for name, value in timings.items()}
