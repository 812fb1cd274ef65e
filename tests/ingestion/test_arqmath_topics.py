from __future__ import annotations

import html
import re
from pathlib import Path

import pytest

from ingestion.arqmath_topics import read_arqmath_topics
from ingestion.mse_html import html_to_text, math_spans
from ingestion.problems import SourceError
from tests.conftest import SHARED

TOPIC_FILES = sorted((SHARED / "arqmath").glob("topics.arqmath-*.xml"))


@pytest.mark.skipif(not TOPIC_FILES, reason="needs ../shared/arqmath")
@pytest.mark.parametrize("path", TOPIC_FILES, ids=lambda p: p.name)
def test_every_topic_keeps_every_formula(path: Path) -> None:
    topics = read_arqmath_topics(path)
    raw = html.unescape(path.read_text(encoding="utf-8"))
    assert len(topics) == raw.count("<Topic ")
    assert sum(len(t.formulas) for t in topics) == raw.count('class="math-container"')
    for topic in topics:
        assert topic.title and not re.search(r"</?[a-zA-Z][a-zA-Z0-9]*[\s/>]", topic.text)
        assert not re.search(r"&(?:[a-zA-Z]+|#\d+);", topic.text)  # no HTML entity left undecoded
        for formula in topic.formulas:
            assert formula in topic.text
    if "task2" in path.name:
        assert all(t.query_formula and t.formula_id for t in topics)


def test_html_to_text_keeps_math_quotes_and_code() -> None:
    body = (
        '<p>Let <span class="math-container">$x^2$</span> be <a href="http://x">here</a>.</p>'
        "<blockquote><p>Prove it.</p></blockquote><pre><code>f(x) = 1</code></pre>"
        '<p><img src="a.png" alt="graph of f"></p>'
    )
    text = html_to_text(body)
    assert "Let $x^2$ be here." in text
    assert "> Prove it." in text and "```\nf(x) = 1\n```" in text and "[image: graph of f]" in text
    assert math_spans(body) == ["x^2"]
    assert re.search(r"\$\$a\$\$", html_to_text('<span class="math-container">$$a$$</span>'))


def test_malformed_topic_file_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "topics.xml"
    path.write_text("<Topics><Topic number='A.1'><Title>x</Title></Topic>")
    with pytest.raises(SourceError, match=r"topics\.xml:1: not a well-formed"):
        read_arqmath_topics(path)
