from ingestion.formula_spans import find_formula_spans
from ingestion.latex_text import extract_formulas


def test_every_math_span_with_its_position() -> None:
    text = r"Let $x^2$ be given. Then \[ \int f \] and \begin{align*} a &= b \end{align*} hold; \$5 is not math."
    spans = find_formula_spans(text)
    assert [span.latex for span in spans] == ["x^2", r"\int f", "a &= b"]
    assert [span.display for span in spans] == [False, True, True]
    for span in spans:
        assert span.latex in text[span.start : span.end]
    assert text[spans[0].start : spans[0].end] == "$x^2$"
    assert extract_formulas(text) == [span.latex for span in spans]
