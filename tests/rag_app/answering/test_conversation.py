from __future__ import annotations

from prompts import load_prompt
from rag_app.answering.conversation import QueryRewriter, RewriteMethod, Turn, refers_back, usable_rewrite
from rag_app.serving.llm_client import LLMUnavailableError

HISTORY = [
    Turn("What is Nakayama's lemma?", "If $M$ is finitely generated and $IM = M$ ...", "What is Nakayama's lemma?")
]


class ScriptedClient:
    """A unit-test stand-in for ChatClient that replies with a fixed text (or fails)."""

    def __init__(self, reply: str | Exception) -> None:
        self.reply = reply
        self.messages: list[list[dict[str, str]]] = []

    def chat(self, messages, extra_body=None, max_tokens=None, temperature=None) -> str:
        self.messages.append(messages)
        if isinstance(self.reply, Exception):
            raise self.reply
        return self.reply


def rewriter(reply: str | Exception | None) -> tuple[QueryRewriter, ScriptedClient | None]:
    client = None if reply is None else ScriptedClient(reply)
    return QueryRewriter(load_prompt("query_rewrite"), (lambda: client) if client else None), client


def test_without_history_the_question_is_searched_as_asked() -> None:
    rewrite, client = rewriter("anything")
    result = rewrite.rewrite("What is a flat module?", [])
    assert result.query == "What is a flat module?" and result.method is RewriteMethod.AS_ASKED
    assert client is not None and client.messages == [], "no LLM call"


def test_the_llm_rewrite_is_used_and_sees_the_history() -> None:
    rewrite, client = rewriter("Standalone query: Does the converse of Nakayama's lemma hold?")
    result = rewrite.rewrite("Does its converse hold?", HISTORY)
    assert result.query == "Does the converse of Nakayama's lemma hold?" and result.method is RewriteMethod.LLM
    assert (
        "Nakayama" in client.messages[0][1]["content"] and "Does its converse hold?" in client.messages[0][1]["content"]
    )


def test_an_unusable_rewrite_or_a_down_llm_falls_back_to_joining() -> None:
    for reply in (
        "Sure! Here is a poem about bananas and tropical weather forecasts.",
        "",
        LLMUnavailableError("down"),
    ):
        result = rewriter(reply)[0].rewrite("Does its converse hold?", HISTORY)
        assert result.method is RewriteMethod.JOINED, reply
        assert result.query == "What is Nakayama's lemma? Does its converse hold?"
    standalone = rewriter(None)[0].rewrite("State the Hilbert basis theorem for polynomial rings", HISTORY)
    assert standalone.method is RewriteMethod.AS_ASKED


def test_a_follow_up_that_stands_on_its_own_costs_no_llm_call() -> None:
    rewrite, client = rewriter("Standalone query: anything")
    result = rewrite.rewrite("State the Hilbert basis theorem for polynomial rings", HISTORY)
    assert result.method is RewriteMethod.AS_ASKED and result.query.startswith("State the Hilbert")
    assert client is not None and client.messages == [], "no LLM call"


def test_refers_back_and_rewrite_checks() -> None:
    assert refers_back("What about its converse?") and refers_back("and for rings?")
    assert not refers_back("State the Hilbert basis theorem for polynomial rings")
    assert (
        usable_rewrite("query: Is $x^2$ convex on the reals", "Is $x^2$ convex?", HISTORY)
        == "Is $x^2$ convex on the reals"
    )
    assert usable_rewrite("Is it convex on the reals", "Is $x^2$ convex?", HISTORY) is None, "the formula was dropped"


def test_an_unexpected_error_in_the_rewrite_is_raised_not_swallowed() -> None:
    """Issue 61, defect 9: `except Exception` took a bug for an LLM that is down and joined the queries."""
    import pytest

    rewrite, _ = rewriter(TypeError("a bug"))
    with pytest.raises(TypeError):
        rewrite.rewrite("Does its converse hold?", HISTORY)


def test_a_whole_question_stands_alone_in_a_conversation_and_costs_no_model_call() -> None:
    """Issue 92: asked third in the chat, a question that types its own formula went to the rewriter."""
    rewrite, client = rewriter("Is the conversation about the integral?")
    for question in ("Is $\\int_0^\\infty e^{-x^2}dx = \\sqrt{\\pi}/2$?", "Is every PID a UFD?", "What is a scheme?"):
        result = rewrite.rewrite(question, HISTORY * 3)
        assert result.query == question and result.method is RewriteMethod.AS_ASKED, question
    assert client is not None and client.messages == []
    for fragment in ("and for rings?", "$n=3$?", "Which one?", "Is it true for $p=2$?"):
        assert refers_back(fragment), fragment


def test_a_rewrite_that_brings_words_of_the_prompt_is_not_used() -> None:
    rewrite, _ = rewriter("Nakayama's lemma converse in this conversation")
    result = rewrite.rewrite("Does its converse hold?", HISTORY)
    assert "conversation" not in result.query and result.method is RewriteMethod.JOINED
    words = rewrite.prompt_words
    assert "conversation" in words and "standalone" in words
    assert usable_rewrite("converse of Nakayama's lemma", "Does its converse hold?", HISTORY, words) is not None
