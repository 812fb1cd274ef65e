"""A text's content words, as the conversation's rewrite check compares them."""

from __future__ import annotations

from rag_app.answering.content_words import content_words


def test_words_of_three_letters_or_more_less_the_stopwords() -> None:
    assert content_words("Is every compact set of R closed?", {"every"}) == {"compact", "set", "closed"}


def test_formulas_are_left_out_only_when_asked() -> None:
    text = r"Is $\mathbb{R}^n$ connected? and \(\operatorname{Spec} A\)"
    assert "mathbb" in content_words(text, set())
    assert content_words(text, {"and"}, without_math=True) == {"connected"}


def test_quotes_and_hyphens_at_the_ends_are_trimmed_inside_kept() -> None:
    assert content_words("'path-connected' spaces-", set()) == {"path-connected", "spaces"}
