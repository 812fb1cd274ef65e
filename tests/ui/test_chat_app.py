"""The real Streamlit app, driven with AppTest."""

from __future__ import annotations

from pathlib import Path

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from rag_app.llm_server import LLMServerProcess
from ui.latex_display import to_streamlit_markdown

APP = str(Path(__file__).resolve().parents[2] / "ui" / "chat_app.py")


@pytest.fixture
def app_env(monkeypatch: pytest.MonkeyPatch, demo_index_dir: Path) -> pytest.MonkeyPatch:
    st.cache_resource.clear()
    monkeypatch.setenv("RAG_APP_INDEX_DIR", str(demo_index_dir))
    monkeypatch.setenv("RAG_APP_LLM__MAX_TOKENS", "40")
    monkeypatch.setenv("RAG_APP_LLM__RETRIES", "0")
    return monkeypatch


def test_one_question_and_its_answer(app_env: pytest.MonkeyPatch, llm_server: LLMServerProcess) -> None:
    app_env.setenv("RAG_APP_LLM__BASE_URL", llm_server.base_url)
    at = AppTest.from_file(APP, default_timeout=180).run()
    assert not at.exception
    assert at.title[0].value == "Ask mathematics"
    at.chat_input[0].set_value("What is the spectral theorem for symmetric matrices?").run()
    assert not at.exception
    assert len(at.chat_message) == 2
    answer_markdown = [m.value for m in at.chat_message[1].markdown]
    assert answer_markdown[0].strip()  # the streamed answer
    assert "**Sources**" in answer_markdown
    labels = [e.label for e in at.expander]
    assert any("Spectral theorem" in label for label in labels), labels
    assert not any("not available" in warning.value for warning in at.warning)


def test_a_question_the_corpus_cannot_answer_says_so_and_shows_the_closest(app_env: pytest.MonkeyPatch) -> None:
    app_env.setenv("RAG_APP_LLM__BASE_URL", "http://127.0.0.1:9/v1")  # never asked: nothing is generated
    at = AppTest.from_file(APP, default_timeout=120).run()
    at.chat_input[0].set_value("What is the best recipe for sourdough bread?").run()
    assert not at.exception and not at.warning
    assert "does not seem to contain" in at.info[0].value
    assert at.expander, "the closest statements are listed"


def test_llm_down_shows_a_banner_and_sources(app_env: pytest.MonkeyPatch) -> None:
    app_env.setenv("RAG_APP_LLM__BASE_URL", "http://127.0.0.1:9/v1")
    at = AppTest.from_file(APP, default_timeout=120).run()
    at.chat_input[0].set_value("Fundamental theorem of Galois theory").run()
    assert not at.exception
    assert "not available" in at.warning[0].value
    assert any("Fundamental theorem of Galois theory" in e.label for e in at.expander)


def test_empty_index_explains_how_to_ingest(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    st.cache_resource.clear()
    monkeypatch.setenv("RAG_APP_INDEX_DIR", str(tmp_path / "empty-index"))
    at = AppTest.from_file(APP, default_timeout=60).run()
    assert not at.exception
    assert "index is empty" in at.info[0].value
    assert at.button[0].label == "Ingest the demo corpus"


def test_latex_delimiters_are_converted_but_code_is_not() -> None:
    text = r"Since \(x^2 \ge 0\) we get \[a = b\] and `\(keep\)`."
    converted = to_streamlit_markdown(text)
    assert "$x^2 \\ge 0$" in converted and "\n$$\na = b\n$$\n" in converted
    assert "`\\(keep\\)`" in converted
    aligned = to_streamlit_markdown(r"\begin{align}x &= 1 \label{e}\end{align}")
    assert "\\begin{aligned}x &= 1 \\end{aligned}" in aligned


def test_formula_search_renders_the_formula_and_finds_its_statement(app_env: pytest.MonkeyPatch) -> None:
    app_env.setenv("RAG_APP_LLM__BASE_URL", "http://127.0.0.1:9/v1")
    at = AppTest.from_file(APP, default_timeout=120).run()
    assert "hybrid-formula" in at.selectbox[0].options
    at.text_input(key="formula").set_value(r"$\tfrac1{n+1}\dbinom{2n}n$").run()
    assert not at.exception
    assert r"\tfrac1{n+1}\dbinom{2n}n" in at.latex[0].value  # st.latex wraps it in $$
    labels = [e.label for e in at.expander]
    assert any("Catalan" in label for label in labels), labels
