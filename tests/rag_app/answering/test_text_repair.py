"""Repairs of a written answer's form: repeats kept once, a cut-off end removed."""

from __future__ import annotations

from rag_app.answering.text_repair import is_finished, repair


def test_a_looping_answer_keeps_each_sentence_once() -> None:
    text = "A finite group of prime order is cyclic [1]. Its order is $p$ [1]. " * 5
    repaired, repeated, truncated = repair(text.strip())
    assert repaired == "A finite group of prime order is cyclic [1]. Its order is $p$ [1]."
    assert (repeated, truncated) == (8, False)


def test_a_theorem_cut_before_its_conclusion_is_removed() -> None:
    text = "Nakayama's lemma holds for finite modules [1]. Let $R$ be a local ring and $M$ a finite module. Then"
    repaired, repeated, truncated = repair(text)
    assert repaired == "Nakayama's lemma holds for finite modules [1]. Let $R$ be a local ring and $M$ a finite module."
    assert (repeated, truncated) == (0, True)
    assert not is_finished("If $x = y") and is_finished("Then $x = y$ [2].") and is_finished("$$x = y$$")


def test_a_whole_answer_is_left_as_it_is() -> None:
    text = "Every compact subset of a Hausdorff space is closed [2]."
    assert repair(text) == (text, 0, False)
    # the small model often puts its citations after the last full stop
    text = "There are exactly $n^{n-2}$ labelled trees on $n$ vertices. [1]"
    assert repair(text) == (text, 0, False) and is_finished("[1][2]")
