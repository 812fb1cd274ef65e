"""Answering from retrieved statements: which sources the model reads, the prompt that fits its window,
the streamed answer, and the checks after it (citations to sources given, each sentence attributed to
what its sources state).

:class:`MathRAG` searches; an :class:`Answerer` takes the hits and a chat client from there on.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from prompts import PromptTemplate, load_prompt
from rag_app.answering.answer import Answer, AnswerStatus, AnswerStream, ContextReport
from rag_app.answering.attribution import Attributor, SentenceSupport, attach_citations
from rag_app.answering.citations import check_citations, citation_numbers
from rag_app.answering.context import asks_for_proof, estimate_tokens, new_fence_key, pack_sources, source_block
from rag_app.answering.conversation import RewrittenQuery
from rag_app.answering.quoted_answer import choice_probabilities, parse_selection, quoted_answer, ranker_is_sure
from rag_app.answering.statement_check import StatementChecker, source_context
from rag_app.answering.text_repair import repair
from rag_app.answering.yes_no_lead import checkable_lead_in, is_yes_no_question, parse_claim, verdict_of_claims
from rag_app.serving.llm_client import ChatClient, LLMUnavailableError
from rag_app.serving.llm_server import LLMServerError
from rag_app.serving.packaged_models import PackagedModelError
from rag_app.settings import Settings
from retriever import Embedder, SearchHit


@dataclass(frozen=True, slots=True)
class Retrieval:
    """The sources found for a question, and how they were found (the answer reports it)."""

    hits: list[SearchHit]
    search: RewrittenQuery
    filter: str  # the filter's description, or "everything"
    retriever: str
    reranker: str = ""  # the cross-encoder's identity, when it reordered the hits
    rerank_ms: float = 0.0
    second_embedding: str = ""  # the second embedding model fused in, or ""
    learned_ranker: bool = False  # the hits' scores are the learned ranker's (comparable across questions)


class Answerer:
    """Streams an answer to a question from its retrieved sources.

    ``vectors`` gives the stored vectors of statement ids (the relevance gate and the attribution
    compare them with the question and the answer's sentences); ``client`` gives the chat client,
    started on first use.
    """

    def __init__(
        self,
        settings: Settings,
        embedder: Embedder,
        vectors: Callable[[Sequence[str]], Mapping[str, np.ndarray]],
        client: Callable[[], ChatClient],
    ) -> None:
        self.settings = settings
        self.embedder = embedder
        self.vectors = vectors
        self.client = client

    def stream(self, question: str, retrieval: Retrieval, started: float) -> AnswerStream:
        """Check that something relevant was found, then stream the LLM's answer. Nothing is generated
        when no source is similar enough to the question (the answer says so and keeps the closest
        statements); when the LLM is down, the answer says so and keeps the sources. After generation,
        citations are validated and each sentence is attributed to its sources. ``started``: when the
        question came (timings count from there)."""
        hits, search = retrieval.hits, retrieval.search
        vectors = self.vectors([hit.record.id for hit in hits])
        hit_vectors = np.stack([vectors[h.record.id] for h in hits]) if hits else np.zeros((0, 1), np.float32)
        similarities = hit_vectors @ self.embedder.embed_query(search.query) if hits else np.zeros(0)
        relevance = float(similarities.max()) if hits else None
        retrieval_ms = (time.perf_counter() - started) * 1000
        checks = self.settings.answers
        quoting = checks.style == "quote"
        prompt = load_prompt(checks.quote.prompt if quoting else self.settings.llm.prompt)
        record = Answer(
            question, "", hits, prompt=prompt.identity, relevance=relevance,
            relevance_threshold=checks.min_relevance, support_threshold=checks.min_support,
            search_query=search.query, rewrite=search.method.value, filter=retrieval.filter,
            retriever=retrieval.retriever, reranker=retrieval.reranker, rerank_ms=retrieval.rerank_ms,
            second_embedding=retrieval.second_embedding, style=checks.style,
        )  # fmt: skip
        # The model reads the question as asked, and what it means in the conversation.
        prompt_question = f"{question}\n(In this conversation: {search.query})" if search.rewritten else question
        given: list[SearchHit] = []
        reply: list[str] = []  # quoting: the model's choice of sources, as it wrote it

        def chunks() -> Iterator[str]:
            if relevance is None or relevance < checks.min_relevance:
                record.status = AnswerStatus.NOT_FOUND
                yield _not_found_notice(relevance, checks.min_relevance, bool(hits))
                return
            try:
                client = self.client()
                record.model, record.server = client.model, client.base_url
                if quoting:
                    yield self._quote(client, prompt, prompt_question, retrieval, similarities, record, given, reply)
                    return
                candidates = self._source_candidates(hits, similarities, checks.max_sources, checks.source_margin)
                messages = self._messages(
                    client, prompt, prompt_question, candidates, record, given,
                    checks.sources_budget_tokens, checks.max_source_tokens,
                )  # fmt: skip
                yield from client.stream_chat(messages)
            except (LLMUnavailableError, LLMServerError, PackagedModelError) as error:
                record.status, record.llm_error = AnswerStatus.LLM_UNAVAILABLE, str(error)

        def finish(text: str, stream: AnswerStream) -> Answer:
            validation_started = time.perf_counter()
            if record.status is AnswerStatus.NOT_FOUND:
                record.text = text
                return _with_timings(record, retrieval_ms, stream, validation_started)
            record.raw_text = text
            if record.llm_error is not None:
                notice = f"The language model is not available ({record.llm_error})."
                record.text = notice + (" The statements retrieved for your question are listed below." if hits else "")
            elif quoting:
                record.sources, record.raw_text, record.text = list(given), "".join(reply), text
                record.cited = [s.cited[0] for s in record.sentences]  # status: set by _quote
            else:
                record.sources = list(given)
                source_vectors = np.stack([vectors[h.record.id] for h in given]) if given else hit_vectors[:0]
                self._validate(record, text.strip(), source_vectors, question)
            return _with_timings(record, retrieval_ms, stream, validation_started)

        return AnswerStream(hits, chunks(), finish, started)

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
        client: ChatClient,
        prompt: PromptTemplate,
        question: str,
        retrieval: Retrieval,
        similarities: np.ndarray,
        record: Answer,
        given: list[SearchHit],
        reply: list[str],
    ) -> str:
        """The quoting answer: the model picks among short views of the sources; the answer quotes its picks.
        Where the learned ranker's first result clearly leads (``answers.quote.ranker_sure_margin``), it is
        quoted without asking the model."""
        quote = self.settings.answers.quote
        candidates = self._source_candidates(retrieval.hits, similarities, quote.max_sources, quote.source_margin)
        if retrieval.learned_ranker and ranker_is_sure(candidates, quote.ranker_sure_margin):
            given.extend(candidates)
            selected, record.chosen_by = [1], "ranker"
        else:
            messages = self._messages(
                client, prompt, question, candidates, record, given, quote.sources_budget_tokens,
                quote.max_source_tokens, proofs=False,
            )  # fmt: skip
            text, alternatives = client.chat_with_alternatives(messages, max_tokens=quote.max_tokens)
            reply.append(text)
            selected, record.chosen_by = parse_selection(reply[0], len(given), quote.max_quotes), "model"
            record.choice = choice_probabilities(alternatives, len(given))
        text, record.sentences = quoted_answer(given, selected)
        record.status = AnswerStatus.ANSWERED if selected else AnswerStatus.UNSUPPORTED
        if selected and quote.yes_no_lead and is_yes_no_question(question):
            record.lead_in = self._yes_no_lead_in(client, question, given[selected[0] - 1], selected[0], record)
            if record.lead_in:
                text = f"{record.lead_in}\n\n{text}"
        return text

    def _yes_no_lead_in(
        self, client: ChatClient, question: str, hit: SearchHit, number: int, record: Answer
    ) -> str | None:
        """The lead-in for a yes/no question whose answer quotes ``hit`` as source ``number``: the model
        reads the statement whole and judges "the answer is yes" and "the answer is no" TRUE or FALSE;
        None where that cannot be checked."""
        quote = self.settings.answers.quote
        started = time.perf_counter()
        fence = new_fence_key()
        text = source_block(number, hit, fence)  # numbered as the answer quotes it
        if (client.count_tokens(text) or estimate_tokens(text)) > quote.yes_no_max_statement_tokens:
            return None  # read cut, a verdict could be wrong about the part not read
        prompt = load_prompt(quote.yes_no_prompt)
        claims = []
        for answer in ("yes", "no"):  # one claim at a time: asked for one verdict, the model said YES to all
            messages = prompt.messages(sources=text, question=question, fence=fence, answer=answer)
            claims.append(parse_claim(client.chat(messages, max_tokens=3, temperature=0.0)))
        verdict = verdict_of_claims(*claims)
        record.yes_no_verdict = verdict.value
        record.timings_ms["yes_no"] = round((time.perf_counter() - started) * 1000, 1)
        return checkable_lead_in(question, hit.record.text, verdict, number, quote.yes_no_min_overlap)

    def _messages(
        self,
        client: ChatClient,
        prompt: PromptTemplate,
        question: str,
        hits: list[SearchHit],
        record: Answer,
        given: list[SearchHit],
        sources_budget: int | None,
        max_source_tokens: int | None,
        proofs: bool | None = None,
    ) -> list[dict[str, str]]:
        """The prompt with as many sources as fit the model's window (and ``sources_budget``), counted with
        its tokenizer; ``proofs``: give each source's proof (unset: as ``answers.proofs`` says)."""
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
        packed = pack_sources(hits, max(0, budget), fence, client.count_tokens, max_source_tokens, proofs)
        given.extend(packed.hits)
        record.context = ContextReport(
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
        return prompt.messages(sources=packed.text, question=question, fence=fence)

    def _validate(self, record: Answer, text: str, source_vectors: np.ndarray, question: str) -> None:
        """Drop citations to sources not given, attach citations by attribution, mark unsupported claims;
        with ``answers.check_statements``, remove repeats, a cut-off end, and each sentence its cited
        source does not state."""
        checks = self.settings.answers
        if checks.check_statements:
            text, record.repeated_sentences, record.truncated = repair(text)
            if not text.strip():  # say why, rather than show an empty answer
                record.text, record.status = CUT_OFF, AnswerStatus.UNSUPPORTED
                return
        checked = check_citations(text, len(record.sources))
        record.invalid_citations = checked.invalid
        record.text, record.cited = checked.text, checked.cited
        if not checks.attribute or not record.sources:
            record.status = AnswerStatus.ANSWERED if checked.cited else AnswerStatus.UNSUPPORTED
            return
        attributor = Attributor(self.embedder.embed_documents, checks.min_support)
        attribution = attributor.attribute(checked.text, [h.record.text for h in record.sources], source_vectors)
        record.text, record.sentences = attribution.text, attribution.sentences
        if checks.check_statements:
            texts = [s.text for s in attribution.sentences]
            record.sentences = [
                self._checked(s, record.sources, question, texts[i - 1] if i else "")
                for i, s in enumerate(attribution.sentences)
            ]
            kept = [s for s in record.sentences if not s.claim or s.stated]
            if not any(s.claim for s in kept):
                kept = []  # no claim left: fragments and bare citations would read as an answer
            record.removed_sentences = [s.text for s in record.sentences if s.claim and not s.stated]
            if record.removed_sentences or record.repeated_sentences or record.truncated:
                record.text = " ".join(attach_citations(s.text, s.attributed) for s in kept)
            if record.removed_sentences:
                count = len(record.removed_sentences)
                record.text = (record.text + "\n\n" if record.text else "") + (
                    f"({count} sentence{'s' if count > 1 else ''} that the cited sources do not state "
                    f"{'were' if count > 1 else 'was'} removed: read the sources below.)"
                )
        record.attributed = sorted({n for s in record.sentences if s.stated is not False for n in s.attributed})
        record.cited = list(dict.fromkeys(citation_numbers(record.text)))
        supported = any(s.claim and s.supported for s in record.sentences)
        record.status = AnswerStatus.ANSWERED if supported else AnswerStatus.UNSUPPORTED

    @staticmethod
    def _checked(sentence: SentenceSupport, sources: list[SearchHit], question: str, previous: str) -> SentenceSupport:
        """``sentence`` checked against the sources it cites (or was attributed to); ``previous``: the
        sentence before it, which "This is stated in [2]." stands for."""
        if not sentence.claim:
            return sentence
        numbers = sentence.cited or sentence.attributed
        if not numbers:
            return replace(sentence, supported=False, stated=False, problems=["cites no source"])
        cited_text = "\n".join(source_context(sources[n - 1].record) for n in numbers)
        check = _CHECKER.check(sentence.text, cited_text, question, previous)
        return replace(
            sentence, supported=sentence.supported and check.stated, stated=check.stated, problems=list(check.problems)
        )


_CHECKER = StatementChecker()  # holds no state: one serves every answer
CUT_OFF = "The model's answer stopped before its first sentence was complete, so none is shown: read the sources below."


def _not_found_notice(relevance: float | None, threshold: float, any_hits: bool) -> str:
    if not any_hits:
        return "The index holds no statement that matches this question, so no answer was generated."
    return (
        "The indexed corpus does not seem to contain an answer to this question: its closest statement has "
        f"similarity {relevance:.2f}, under the threshold {threshold:.2f}. No answer was generated; the closest "
        "statements are listed below."
    )


def _with_timings(record: Answer, retrieval_ms: float, stream: AnswerStream, validation_started: float) -> Answer:
    """``record`` with milliseconds from the question: retrieval, first text, whole answer, validation, total."""
    now = time.perf_counter()
    timings = {"retrieval": retrieval_ms, **record.timings_ms}  # with any step's own (the yes/no verdict)
    if record.reranker:  # the cross-encoder's share of retrieval
        timings["rerank"] = record.rerank_ms
    if stream.first_chunk_s is not None:
        timings["first_token"] = stream.first_chunk_s * 1000
    if stream.generated_s is not None:
        timings["full_answer"] = stream.generated_s * 1000
    timings["validation"] = (now - validation_started) * 1000
    timings["total"] = (now - stream.started) * 1000
    record.timings_ms = {name: round(value, 1) for name, value in timings.items()}
    return record
