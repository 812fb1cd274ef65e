"""LaTeX rendered as Unicode for the dense embedder, and the embedder reading every text that way."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ingestion.records import Source, StatementKind, StatementRecord, statement_id
from retriever import Embedder, IndexMismatchError, SearchMode, StatementIndex
from retriever.text.unicode_math_text import UnicodeMathText
from tests.searchers import first_stage

PACKAGED = "packaged:all-MiniLM-L6-v2"


def test_mathematics_and_markup_become_unicode_text() -> None:
    text = UnicodeMathText()
    rendered = text.render(r"Let $\mathfrak p \subset R$ be prime and $\varphi : R \to S$. Then \emph{$S$ is flat}.")
    assert "𝔭" in rendered and "⊂" in rendered and "φ" in rendered and "→" in rendered
    assert "\\" not in rendered and "$" not in rendered and "emph" not in rendered
    assert text.render(r"$$\mathop{\mathrm{Spec}}(R')$$ and $\frac{1}{2}$") == "Spec(R') and 1/2"


def test_plain_text_is_left_as_it_is_and_a_percent_sign_is_not_a_comment() -> None:
    text = UnicodeMathText()
    assert text.render("A compact subset of a Hausdorff space is closed.") == (
        "A compact subset of a Hausdorff space is closed."
    )
    # A Math StackExchange answer: a bare % must not drop the rest of its line as a LaTeX comment.
    assert text.render("About 50% of $n$ cases fail, then the rest") == "About 50% of n cases fail, then the rest"


def test_broken_markup_still_gives_text() -> None:
    rendered = UnicodeMathText().render(r"unbalanced {$x \frac{1}")
    assert "unbalanced" in rendered and "x" in rendered


def test_the_embedder_reads_statements_and_queries_in_the_unicode_form() -> None:
    unicode_form, latex_form = Embedder(PACKAGED), Embedder(PACKAGED, math_text="latex")
    assert unicode_form.identity == PACKAGED + "+unicode-math" and latex_form.identity == PACKAGED
    latex = r"Every $\alpha \in \mathfrak p$ satisfies $\alpha^2 \to 0$."
    unicode = UnicodeMathText().render(latex)
    assert "α" in unicode and "𝔭" in unicode
    as_read = unicode_form.embed_documents([latex])[0]
    assert np.allclose(as_read, latex_form.embed_documents([unicode])[0], atol=1e-5)
    assert np.allclose(unicode_form.embed_query(latex), as_read, atol=1e-5)  # queries read the same way
    assert float(as_read @ latex_form.embed_documents([latex])[0]) < 0.99  # the markup is no longer read
    with pytest.raises(ValueError, match="math_text"):
        Embedder(PACKAGED, math_text="mathml")


def test_an_index_embedded_in_the_latex_form_asks_to_be_reindexed(tmp_path: Path) -> None:
    text = r"The space $\mathop{\mathrm{Spec}}(R)$ is quasi-compact."
    statement = StatementRecord(statement_id("local", "alg", "lemma", text), Source.LOCAL, StatementKind.LEMMA,
                                text, "alg")  # fmt: skip
    StatementIndex(tmp_path / "index", Embedder(PACKAGED, math_text="latex")).add([statement])
    with pytest.raises(IndexMismatchError, match="rag-app reindex"):
        StatementIndex(tmp_path / "index", Embedder(PACKAGED))
    latex_form = first_stage(StatementIndex(tmp_path / "index", Embedder(PACKAGED, math_text="latex")))
    assert latex_form.search("Spec of a ring is quasi-compact", 1, SearchMode.DENSE)[0].record == statement


def test_formula_fusion_reads_the_text_form_its_models_were_trained_on() -> None:
    from retriever.models.marf_encoder import FormulaModels

    def models(text_embedder: str) -> FormulaModels:
        return FormulaModels(Path("m"), None, None, {"text_embedder": text_embedder})  # type: ignore[arg-type]

    assert models(PACKAGED).text_form == "latex"  # trained before the Unicode form existed
    assert models(PACKAGED + "+unicode-math").text_form == "unicode"
    assert FormulaModels(Path("m"), None, None, {}).text_form is None  # type: ignore[arg-type]  # the embedder's
    latex = [r"The space $\mathop{\mathrm{Spec}}(R)$ is quasi-compact."]
    unicode_form, latex_form = Embedder(PACKAGED), Embedder(PACKAGED, math_text="latex")
    _, as_latex = unicode_form.embed_with_tokens(latex, math_text="latex")
    _, expected = latex_form.embed_with_tokens(latex)
    _, as_unicode = unicode_form.embed_with_tokens(latex)
    assert as_latex[0].shape == expected[0].shape and np.allclose(as_latex[0], expected[0], atol=1e-5)
    assert as_unicode[0].shape[0] < as_latex[0].shape[0]  # fewer tokens once the markup is rendered
