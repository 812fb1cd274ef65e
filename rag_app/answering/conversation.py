"""Follow-up questions: the retrieval query is rewritten from the conversation.

"What about its converse?" finds nothing on its own. The rewriter asks the LLM for a standalone
query (``prompts/query_rewrite``); small local models sometimes drop the question or chatter, so the
reply is checked, and when it is unusable (or the LLM is down) a follow-up that refers back is
joined with the previous search instead. The chat shows the result as "searched for: ...".
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from enum import StrEnum

from prompts import PromptTemplate
from rag_app.answering.claims.vocabulary import DISCOURSE_WORDS, NEGATIONS, STOPWORDS
from rag_app.answering.content_words import content_words
from rag_app.serving.llm_client import ChatClient
from rag_app.serving.llm_connection import LLM_FAILURES

_MATH = re.compile(r"\$[^$]+\$|\\\(.+?\\\)")
# Words that point back into the conversation ("its converse", "the same for rings", "what about ...").
_REFERRING = re.compile(
    r"\b(it|its|this|that|these|those|they|them|their|such|same|above|previous|converse|also|"
    r"what about|how about|and if|why|instead|(?:which|what) ones?)\b",
    re.IGNORECASE,
)
# How a whole question opens: a fragment ("and for rings?", "over Q?") leans on the question before it.
_QUESTION_OPENING = re.compile(
    r"^\s*(is|are|does|do|can|could|must|should|will|would|has|have|what|which|who|how|when|where|under|prove|show|"
    r"find|compute|give|state|define|let)\b",
    re.IGNORECASE,
)
# A rewrite keeps the question's words: all but the stopwords, negations and discourse count ("not" says nothing
# of a topic).
_STOPWORDS = STOPWORDS | NEGATIONS | DISCOURSE_WORDS
_PREFIX = re.compile(r"^(standalone (search )?query|query|rewritten( question)?)\s*:\s*", re.IGNORECASE)

logger = logging.getLogger(__name__)


class RewriteMethod(StrEnum):
    AS_ASKED = "as asked"
    LLM = "rewritten by the LLM"
    JOINED = "joined with the previous search"


@dataclass(frozen=True, slots=True)
class Turn:
    """One exchange of the conversation: what was asked, what was searched for, what was answered."""

    question: str
    answer: str
    search_query: str


@dataclass(frozen=True, slots=True)
class RewrittenQuery:
    query: str
    method: RewriteMethod
    asked_llm: bool = False  # the LLM was asked for the rewrite (whatever it gave back)

    @property
    def rewritten(self) -> bool:
        return self.method is not RewriteMethod.AS_ASKED


class QueryRewriter:
    """Turns the latest question and the recent turns into one standalone retrieval query."""

    def __init__(
        self,
        prompt: PromptTemplate,
        client: Callable[[], ChatClient] | None,
        max_turns: int = 3,
        max_tokens: int = 64,
    ) -> None:
        self.prompt = prompt
        self.client = client  # None: never ask the LLM, only join
        self.max_turns = max_turns
        self.max_tokens = max_tokens
        frame = prompt.messages(history="", question="")
        self.prompt_words = frozenset(_words(" ".join(message["content"] for message in frame)))

    def rewrite(self, question: str, history: Sequence[Turn]) -> RewrittenQuery:
        recent = list(history)[-self.max_turns :] if self.max_turns else []
        # A question that stands on its own costs no LLM call (seconds of prompt reading on a CPU).
        if not recent or not refers_back(question):
            return RewrittenQuery(question, RewriteMethod.AS_ASKED)
        asked = False
        if self.client is not None:
            try:
                reply = self.client().chat(
                    self.prompt.messages(history=_history_text(recent), question=question),
                    max_tokens=self.max_tokens,
                    temperature=0.0,
                )
                asked = True
            except LLM_FAILURES as error:  # no rewrite: the question joined to the last query, and why in the log
                logger.warning("the follow-up question was not rewritten by the LLM: %s", error)
                reply = ""
            query = usable_rewrite(reply, question, recent, self.prompt_words)
            if query is not None:
                method = RewriteMethod.AS_ASKED if _same(query, question) else RewriteMethod.LLM
                return RewrittenQuery(question if method is RewriteMethod.AS_ASKED else query, method, asked)
        return RewrittenQuery(f"{recent[-1].search_query} {question}", RewriteMethod.JOINED, asked)


def refers_back(question: str) -> bool:
    """Whether a question leans on the conversation: a referring word, or too few words of its own. A formula
    names its own objects: a question that types one ("Is $\\int_0^\\infty e^{-x^2}dx = \\sqrt{\\pi}/2$?") stands
    alone with a single word beside it (the rewriter gives such a question back with the prompt's words)."""
    prose = _MATH.sub(" ", question)
    if _REFERRING.search(prose):
        return True
    own = len(_words(question)) + len(_MATH.findall(question))  # its content words and formulas
    if _QUESTION_OPENING.match(prose) and own >= 1:
        return False  # a whole question ("Is every PID a UFD?", "Is $x^2 \\geq 0$?") names what it asks about
    return own < 3


def _words(text: str) -> set[str]:
    return content_words(text, _STOPWORDS, without_math=True)


def usable_rewrite(
    reply: str, question: str, history: Sequence[Turn], prompt_words: Collection[str] = frozenset()
) -> str | None:
    """The LLM's query, cleaned, or None when it drops the question, invents topics, chatters or repeats words of
    its instructions (``prompt_words``: the rewrite prompt's own words)."""
    lines = [line.strip() for line in reply.strip().splitlines() if line.strip()]
    if not lines:
        return None
    query = _PREFIX.sub("", lines[0]).strip().strip("\"'`").strip()
    if not query or len(query) > 3 * len(question) + 200:
        return None
    words = _words(query)
    own = _words(question)
    # It must keep most of the question's own words, and bring nothing from outside the conversation.
    if own and len(own & words) < 0.5 * len(own):
        return None
    known = own | {w for turn in history for w in _words(turn.question + " " + turn.search_query)}
    if words - known and len(words - known) > max(2, len(words) // 3):
        return None
    # A word the rewrite prompt holds and the conversation does not ("conversation", "standalone") is the model
    # repeating its instructions, never what the user asked.
    said = known | {w for turn in history for w in _words(turn.answer)}
    if (words - said) & prompt_words:
        return None
    for formula in _MATH.findall(question):
        if formula.strip("$") not in query:
            return None
    return query


def _same(a: str, b: str) -> bool:
    return " ".join(a.lower().split()).rstrip("?.") == " ".join(b.lower().split()).rstrip("?.")


def _history_text(turns: Sequence[Turn]) -> str:
    lines = []
    for turn in turns:
        lines.append(f"User: {turn.question}")
        answer = " ".join(turn.answer.split())
        if answer:
            lines.append(f"Assistant: {answer[:400]}{' ...' if len(answer) > 400 else ''}")
    return "\n".join(lines)
