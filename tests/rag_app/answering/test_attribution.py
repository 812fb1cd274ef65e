"""Post-hoc attribution with the packaged embedder: citations attached, unsupported sentences marked."""

from __future__ import annotations

import numpy as np
import pytest

from rag_app.answering.attribution import Attributor, split_sentences, support_features
from retriever.models.embedder import Embedder

SOURCES = [
    "Let $X$ be a normal topological space and $A \\subseteq X$ closed. Every continuous function "
    "$f: A \\to \\mathbb{R}$ extends to a continuous function on $X$.",
    "A finite group $G$ of order $n$ has subgroups whose orders divide $n$: for every subgroup $H$, "
    "$|H|$ divides $|G|$.",
]


@pytest.fixture(scope="module")
def embedder() -> Embedder:
    return Embedder("packaged:all-MiniLM-L6-v2")


def test_sentences_split_outside_math_and_lists() -> None:
    text = "By Lagrange, $|H| \\mid |G|. Also$ holds [2]. Second one! Third?\n\n- a bullet point here\n- another"
    assert split_sentences(text) == [
        "By Lagrange, $|H| \\mid |G|. Also$ holds [2].",
        "Second one!",
        "Third?",
        "- a bullet point here",
        "- another",
    ]


@pytest.mark.slow
def test_supported_sentences_get_citations_and_unsupported_ones_are_marked(embedder: Embedder) -> None:
    vectors = embedder.embed_documents(SOURCES)
    answer = (
        "Every continuous function on a closed subset $A$ of a normal space $X$ extends to $X$.\n\n"
        "The order $|H|$ of a subgroup divides the order $|G|$ of the finite group [2]. "
        "Bananas are rich in potassium and grow in tropical climates."
    )
    attribution = Attributor(embedder.embed_documents, threshold=0.5).attribute(answer, SOURCES, vectors)
    first, second, third = attribution.sentences
    assert first.supported and first.attributed == [1] and first.best_source == 1
    assert second.supported and second.cited == [2] and second.attributed == []
    assert third.claim and not third.supported and third.attributed == []
    assert attribution.text.startswith("Every continuous function on a closed subset $A$ of a normal space $X$ extends")
    assert "to $X$ [1].\n\nThe order" in attribution.text  # layout kept, citation before the full stop
    assert attribution.supported and [s.text for s in attribution.unsupported] == [third.text]


def test_an_answer_with_no_supported_sentence_is_unsupported(embedder: Embedder) -> None:
    vectors = embedder.embed_documents(SOURCES)
    answer = "Bananas are rich in potassium. Paris is the capital of France and has many museums."
    attribution = Attributor(embedder.embed_documents, threshold=0.5).attribute(answer, SOURCES, vectors)
    assert not attribution.supported and len(attribution.unsupported) == 2 and attribution.text == answer


def test_formula_overlap_counts_for_sentences_with_formulas() -> None:
    vector = np.ones(4, dtype=np.float32) / 2
    with_formula = support_features("we get $\\frac{a}{b}$", vector, SOURCES[0], vector)
    assert with_formula.formulas is not None and with_formula.formulas < 1
    same = support_features("so $|H|$ divides $|G|$", vector, SOURCES[1], vector)
    assert same.formulas == 1.0 and same.score > with_formula.score
    assert support_features("no formula here at all", vector, SOURCES[0], vector).formulas is None
