"""The quoting answer's one-line lead-in for a yes/no question, above the quote: a verdict a reader can check.

:class:`YesNoReading` is the one thing the answer calls (``Answerer._quoted_text`` calls :meth:`YesNoReading.read`
once): a statement the search found that refutes the claim is quoted first (issue 84), and the lead-in above the
first quote is decided as ``answers.quote.yes_no_method`` says. Three ways, measured
side by side by ``bench/yes_no_verdict.py`` on ``eval/questions/yes-no-claims.v1.jsonl``:

- **rules** (the default): the question's claim compared with the quoted statement's hypotheses and
  conclusion (:mod:`rag_app.answering.claims`, pure reading of text). It says "Yes, as [n] states:" only where
  the statement proves what was asked, "[n] states the opposite:" where it asserts the opposite, "Only under
  a hypothesis the question does not state (...); [n]:" where it needs a hypothesis the question drops, and,
  where the statement does not use the question's words or concludes something else, a notice that the
  quote does not settle the question as asked. No model call.
- **model**: the packaged model reads the statement whole and judges the claims "the answer is yes" and "the
  answer is no" TRUE or FALSE; "Yes" where it judges yes TRUE and no FALSE, the question does not negate and the
  statement shares most of its topic words. It said "Yes" to 10 of 16 false claims that drop a hypothesis
  (issue 74): kept to be measured against, not the default.
- **rules+model**: "Yes" only where both say yes; the other lead-ins as the rules give them.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from ingestion.records import StatementRecord
from prompts import load_prompt
from rag_app.answering.claims import ClaimComparison, Verdict
from rag_app.answering.claims.asked_question import AskedQuestion
from rag_app.answering.claims.claim_comparison import (
    CONVERSE,
    EXPRESSION,
    OTHER_CONCLUSION,
    OTHER_SUBJECT,
    PART_OF_PHRASE,
)
from rag_app.answering.claims.yes_no_questions import topic_words
from rag_app.answering.context import estimate_tokens, new_fence_key, source_block
from rag_app.answering.source_chooser import SourceChoice
from rag_app.answering.source_features import read_claim
from rag_app.answering.stages import ModelCall, YesNoLead
from rag_app.serving.llm_client import ChatClient, LLMUnavailableError
from rag_app.serving.llm_server import LLMServerError
from rag_app.serving.packaged_models import PackagedModelError
from rag_app.settings.answering import QuoteSettings
from retriever.types import SearchHit

CHECK = "Check against the question:"
_NOT_SETTLED = {
    CONVERSE: "the question asks the converse of [{n}]",
    OTHER_CONCLUSION: "[{n}] concludes something else than the question asks",
    EXPRESSION: "[{n}] concludes about an expression the question does not name",
    PART_OF_PHRASE: "what [{n}] concludes differs from what the question asks",
    OTHER_SUBJECT: "[{n}] proves it of another object than the question names",
}


@dataclass(frozen=True, slots=True)
class YesNoRead:
    """What the yes/no reading makes of an answer's quotes: the sources and picks (a refuting statement first,
    where one was found) and the lead-in above the first quote, with the model calls made for it."""

    sources: tuple[SearchHit, ...]
    picked: tuple[int, ...]
    lead: YesNoLead | None
    calls: tuple[ModelCall, ...] = ()


class YesNoReading:
    """The lead-in policy: rules, model or both (``quote.yes_no_method``), over the statement quoted first.

    ``client``: the model's chat client, asked for only where the method needs the model."""

    def __init__(self, quote: QuoteSettings, client: Callable[[], ChatClient]) -> None:
        self.quote = quote
        self.client = client
        # (question, statement id) -> the claim reading: the chooser's features, the refutation scan and the lead-in
        # read the same statements; each is read once (an answerer serves one question, so this stays small)
        self._readings: dict[tuple[str, str], ClaimComparison] = {}
        self._asked: dict[str, AskedQuestion] = {}  # the question itself, read once for every reader (issue 93)

    def asked(self, question: str | AskedQuestion) -> AskedQuestion:
        """``question`` read once: whether it asks yes or no, its LaTeX, its claim's terms, its topic."""
        if isinstance(question, AskedQuestion):
            return question
        if question not in self._asked:
            self._asked[question] = AskedQuestion.read(question)
        return self._asked[question]

    def reading(self, question: str | AskedQuestion, record: StatementRecord) -> ClaimComparison:
        """The claim reading of ``record`` on ``question`` (:func:`read_claim`), read once per answer."""
        asked = self.asked(question)
        key = (asked.text, record.id)
        if key not in self._readings:
            self._readings[key] = read_claim(asked, record)
        return self._readings[key]

    def lead(
        self,
        question: str,
        hit: SearchHit,
        number: int,
        client: ChatClient | None = None,
        model_allowed: bool = True,
        doubted: bool | None = None,
    ) -> tuple[YesNoLead, tuple[ModelCall, ...]] | None:
        """The lead-in above the quote of ``hit`` as source ``number`` and the model calls made for it; None
        where there is none to give (the lead-in is off, or the question does not ask yes or no).
        ``model_allowed``: False where the quote is shown before the model's part, so no "Yes" stands that the
        model has not seen (method "model" or "rules+model"). ``doubted``: the learned chooser's reading of the
        quote (None: no chooser); a "Check against the question" is shown only above a quote it doubts."""
        if not self.quote.yes_no_lead or not self.asked(question).yes_no:
            return None
        method = self.quote.yes_no_method
        rules = self.by_rules(question, hit, number, self.reading(question, hit.record))
        if doubted is False and rules.lead_in is not None and rules.lead_in.startswith(CHECK):
            rules = replace(rules, lead_in=None)  # the chooser is confident it answers: no false alarm above it
        if method == "rules" or (method == "rules+model" and rules.verdict is not Verdict.YES):
            return rules, ()
        if not model_allowed:
            unseen = method == "model" or rules.verdict is Verdict.YES
            return (replace(rules, lead_in=None, method=method) if unseen else rules), ()
        try:
            model_lead = self.by_model(client or self.client(), question, hit, number)
        except (LLMUnavailableError, LLMServerError, PackagedModelError):
            failed = YesNoLead(Verdict.NONE, None, 0.0, method)  # the quote stands without the model's lead-in
            unread = replace(rules, lead_in=None, verdict=Verdict.NONE, method=method)
            return (failed if method == "model" else unread), ()
        calls = (ModelCall("verdict", model_lead.ms),) if model_lead.ms > 0 else ()  # 0: no call was made
        if method == "model":
            return model_lead, calls
        agreed = model_lead.lead_in is not None  # the model's "Yes" beside the rules' own
        combined = replace(rules, method=method, ms=rules.ms + model_lead.ms)
        return (combined if agreed else replace(combined, verdict=Verdict.NONE, lead_in=None)), calls

    def read(
        self,
        question: str,
        sources: tuple[SearchHit, ...],
        picked: tuple[int, ...],
        found: Sequence[SearchHit] = (),
        client: ChatClient | None = None,
        model_allowed: bool = True,
        choice: SourceChoice | None = None,
    ) -> YesNoRead:
        """The one call the answer makes: where a statement of ``sources`` or of what the search ``found``
        refutes the yes/no claim, it becomes the first quote (added to the sources where the model did not read
        it) and the model's pick follows; then the lead-in above the first quote (:meth:`lead`; ``choice``: the
        learned chooser's reading of ``sources``, which decides whether a "Check" is worth showing)."""
        refuter = self.refuter(question, (*sources, *found)) if picked or found else None
        if refuter is not None:
            given = [hit.record.id for hit in sources]
            sources = sources if refuter.record.id in given else (*sources, refuter)
            number = [hit.record.id for hit in sources].index(refuter.record.id) + 1
            picked = (number, *(n for n in picked if n != number))[: self.quote.max_quotes]
        doubted = None
        if choice is not None and picked:
            doubted = choice.doubtful[picked[0] - 1] if picked[0] <= len(choice.doubtful) else False
        first = sources[picked[0] - 1] if picked else None
        decided = self.lead(question, first, picked[0], client, model_allowed, doubted) if first else None
        lead, calls = decided if decided is not None else (None, ())
        return YesNoRead(sources, picked, lead, calls)

    def refuter(self, question: str, hits: Sequence[SearchHit]) -> SearchHit | None:
        """The first of ``hits`` (in their order) that refutes the yes/no ``question``'s claim as asked (a
        counterexample, a warning, the claim's negation: :mod:`rag_app.answering.claims.refutation`); None where
        none does, the lead-in is off, or the question does not ask yes or no."""
        if not self.quote.yes_no_lead or not self.asked(question).yes_no:
            return None
        seen: set[str] = set()
        for hit in hits:
            if hit.record.id in seen:
                continue
            seen.add(hit.record.id)
            if self.reading(question, hit.record).verdict is Verdict.NO:
                return hit
        return None

    @staticmethod
    def by_rules(question: str, hit: SearchHit, number: int, comparison: ClaimComparison | None = None) -> YesNoLead:
        """The rules' lead-in (no model call), from ``comparison`` where the statement was read already. The
        statement is read as the index knows it (:func:`read_claim`): a question word its name, section or label
        holds ("Zariski's Main Theorem") is no word it fails to speak of."""
        started = time.perf_counter()
        comparison = comparison or read_claim(question, hit.record)
        return YesNoLead(
            comparison.verdict, rules_lead_in(comparison, number), (time.perf_counter() - started) * 1000,
            "rules", comparison.reason, comparison.missing, comparison.unmatched,
        )  # fmt: skip

    def by_model(self, client: ChatClient, question: str, hit: SearchHit, number: int) -> YesNoLead:
        """The model's lead-in: the model reads the statement whole and judges "the answer is yes" and "the answer
        is no" TRUE or FALSE; no verdict (``Verdict.NONE``, ``ms`` 0: no call was made) where that cannot be checked."""
        started = time.perf_counter()
        fence = new_fence_key()
        text = source_block(number, hit, fence)  # numbered as the answer quotes it
        if (client.count_tokens(text) or estimate_tokens(text)) > self.quote.yes_no_max_statement_tokens:
            # read cut: a verdict could be wrong about the part not read
            return YesNoLead(Verdict.NONE, None, 0.0, "model")
        prompt = load_prompt(self.quote.yes_no_prompt)
        claims = []
        for answer in ("yes", "no"):  # one claim at a time: asked for one verdict, the model said YES to all
            messages = prompt.messages(sources=text, question=question, fence=fence, answer=answer)
            claims.append(parse_claim(client.chat(messages, max_tokens=3, temperature=0.0)))
        verdict = verdict_of_claims(*claims)
        asked, min_overlap = self.asked(question), self.quote.yes_no_min_overlap
        lead_in = checkable_lead_in(asked, hit.record.text, verdict, number, min_overlap)
        return YesNoLead(verdict, lead_in, (time.perf_counter() - started) * 1000, "model")


def rules_lead_in(comparison: ClaimComparison, number: int) -> str | None:
    """The lead-in for the rules' verdict on source ``number``: each form names what the reader checks in
    the quote beneath it."""
    if comparison.verdict is Verdict.YES:
        return f"Yes, as [{number}] states:"
    if comparison.verdict is Verdict.OPPOSITE:
        return f"[{number}] states the opposite:"
    if comparison.verdict is Verdict.NO:  # refuted by the statement: a counterexample, a warning, the negation
        if comparison.reason.endswith("counterexample"):
            return f"No: [{number}] gives a counterexample:"
        return f"No: [{number}] refutes it:"  # OPPOSITE says "states the opposite", without a "No"
    if comparison.verdict is Verdict.ONLY_IF:
        return f"Only under a hypothesis the question does not state ({', '.join(comparison.missing)}); [{number}]:"
    if comparison.unmatched:
        words = ", ".join(comparison.unmatched[:6])
        return f"{CHECK} [{number}] does not speak of {words}. Quoted as it stands:"
    if comparison.reason.endswith(", not a proved statement"):
        return f"{CHECK} [{number}] is {comparison.reason}. Quoted as it stands:"
    notice = _NOT_SETTLED.get(comparison.reason)
    if notice:
        detail = f" ({', '.join(comparison.missing)})" if comparison.missing else ""
        return f"{CHECK} {notice.format(n=number)}{detail}. Quoted as it stands:"
    return None


def parse_claim(reply: str) -> bool | None:
    """The model's TRUE or FALSE on one claim; None for anything else."""
    words = re.findall(r"[A-Za-z]+", reply.upper())
    first = words[0] if words else ""
    return True if first == "TRUE" else False if first == "FALSE" else None


def verdict_of_claims(yes_claim: bool | None, no_claim: bool | None) -> Verdict:
    """YES only when "the answer is yes" was judged TRUE and "the answer is no" FALSE (NO the other way
    round); anything else, both TRUE included, is no verdict (NONE: the two judgements did not agree)."""
    if yes_claim is True and no_claim is False:
        return Verdict.YES
    if yes_claim is False and no_claim is True:
        return Verdict.NO
    return Verdict.NONE


def checkable_lead_in(
    question: str | AskedQuestion, statement: str, verdict: Verdict, number: int, min_overlap: float
) -> str | None:
    """The lead-in, where the verdict is YES, the question does not negate and the statement is about the
    question's topic; never for NO (see the module's note)."""
    asked = AskedQuestion.read(question)
    if verdict is not Verdict.YES or asked.negated:
        return None
    if asked.topic and len(asked.topic & topic_words(statement)) / len(asked.topic) < min_overlap:
        return None
    return f"Yes, as [{number}] states:"
