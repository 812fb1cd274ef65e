"""The sentence around a reference: cut at sentence ends outside math, bounded, readable."""

from __future__ import annotations

from ingestion.citing_sentences import MAX_SENTENCE_CHARS, SentenceEnds, readable_sentence
from ingestion.latex_references import SentenceReader, statement_references


def _sentence(latex: str, label: str) -> str:
    start = latex.index(f"\\ref{{{label}}}")
    return SentenceEnds(latex).sentence(start, start + len(f"\\ref{{{label}}}"))


def test_the_sentence_holding_the_reference_is_cut_at_its_ends() -> None:
    latex = (
        r"Let $M$ be a module over a local ring. Since $M$ is finite and $\mathfrak m M = M$, we get "
        r"$M = 0$ by Nakayama's lemma, see Lemma~\ref{lemma-NAK}. Hence the map is surjective."
    )
    assert _sentence(latex, "lemma-NAK") == (
        r"Since $M$ is finite and $\mathfrak m M = M$, we get $M = 0$ by Nakayama's lemma, see Lemma~\ref{lemma-NAK}."
    )


def test_a_period_inside_math_or_braces_ends_no_sentence() -> None:
    latex = r"We have $x = y. Z$ here and \emph{by a. Lemma} so by Lemma \ref{a} it holds. Next One."
    assert _sentence(latex, "a") == r"We have $x = y. Z$ here and \emph{by a. Lemma} so by Lemma \ref{a} it holds."


def test_a_bare_sentence_gets_the_one_before_it() -> None:
    latex = r"First. The ring $R$ is Noetherian and the module $M$ is flat over it. Apply Lemma \ref{b}. Done here."
    assert (
        _sentence(latex, "b") == r"The ring $R$ is Noetherian and the module $M$ is flat over it. Apply Lemma \ref{b}."
    )


def test_a_long_sentence_is_cut_around_the_reference_never_inside_a_formula() -> None:
    formula = "$" + " + ".join(f"a_{{{i}}}" for i in range(200)) + "$"
    latex = f"Take {formula} and then by Lemma \\ref{{c}} we conclude with {formula} as wanted."
    sentence = _sentence(latex, "c")
    assert sentence.startswith("… ") and sentence.endswith(" …") and r"Lemma \ref{c}" in sentence
    assert sentence.count("$") % 2 == 0  # no formula cut in half


def test_an_unknown_label_reads_ref_and_the_text_is_bounded() -> None:
    text = readable_sentence("See [other-lemma-x] and " + "word " * 200, {"mine"}, ["other-lemma-x"], str)
    assert text.startswith("See [ref] and word") and len(text) <= MAX_SENTENCE_CHARS + 2


def test_each_label_gets_the_sentence_of_its_first_reference() -> None:
    reader = SentenceReader(lambda latex: latex.replace("\\ref{a}", "1").replace("\\ref{b}", "2"), {"a", "b"})
    references = statement_references(
        r"By \ref{a} it is flat over the base ring.", r"Apply \ref{b} and \ref{a} to the module here.", sentences=reader
    )
    assert [(r.label, r.where, r.sentence) for r in references] == [
        ("a", "statement", "By 1 it is flat over the base ring."),
        ("b", "proof", "Apply 2 and 1 to the module here."),
    ]
