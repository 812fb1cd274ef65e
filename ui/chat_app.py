"""The research chat: ask a question, read a streamed answer that cites numbered statements.

Run with ``rag-app ui`` (which also starts the local LLM server when none is configured).
"""

from __future__ import annotations

import time

import streamlit as st

from rag_app import MathRAG, Settings
from rag_app.answer import Answer, AnswerStatus
from retriever import SearchHit
from retriever.formulas.query_formulas import strip_delimiters
from ui.latex_display import to_streamlit_markdown

st.set_page_config(page_title="rag-app · ask mathematics", page_icon="∑", layout="wide")


@st.cache_resource
def open_rag() -> MathRAG:
    return MathRAG(Settings.load())


def render_sources(sources: list[SearchHit], cited: list[int]) -> None:
    if not sources:
        return
    st.markdown("**Sources**")
    for number, hit in enumerate(sources, start=1):
        record = hit.record
        mark = " ✓ cited" if number in cited else ""
        heading = f"[{number}] {record.display_name} — {record.title or record.paper_id}"
        with st.expander(f"{heading}  ·  score {hit.score:.3f}{mark}", expanded=number in cited):
            st.markdown(to_streamlit_markdown(record.text))
            details = [f"paper `{record.paper_id}`"]
            if record.label:
                details.append(f"label `{record.label}`")
            if record.section:
                details.append(f"section: {record.section}")
            if record.url:
                details.append(f"[link]({record.url})")
            st.caption(" · ".join(details))


def render_answer(answer: Answer) -> None:
    if answer.llm_error:
        st.warning(answer.text)
    elif answer.not_found:
        st.info(answer.text)
    else:
        st.markdown(to_streamlit_markdown(answer.text))
        if answer.status is AnswerStatus.UNSUPPORTED:
            st.warning("No sentence of this answer is supported by the sources: read it with care.")
        for sentence in answer.unsupported_sentences:
            st.caption(f"⚠ no source supports: {sentence}")
        if answer.invalid_citations:
            st.caption(f"Removed citations to sources that were not given: {answer.invalid_citations}")
    render_sources(answer.sources, answer.cited)


def render_formula_search(rag: MathRAG, top_k: int) -> None:
    """Type or paste a formula, see it rendered, find the statements holding it or an equivalent one."""
    with st.expander("Search by formula", expanded=bool(st.session_state.get("formula"))):
        formula = st.text_input("Formula (LaTeX)", key="formula", placeholder=r"\int \frac{dx}{(x^2+1)^n}")
        if not formula.strip():
            return
        st.latex(strip_delimiters(formula))
        try:
            hits = rag.search_formula(formula, top_k)
        except Exception as error:  # a message, never a traceback
            st.error(f"Formula search failed: {error}")
            return
        if hits:
            render_sources(hits, [])
        else:
            st.info("No statement holds this formula or a similar one.")


def main() -> None:
    try:
        rag = open_rag()
        statement_count = rag.index.count()
    except Exception as error:  # shown to the user as a message, never as a traceback
        st.error(f"The index could not be opened: {error}")
        return

    with st.sidebar:
        st.header("Settings")
        top_k = st.slider("Number of sources", 1, 15, rag.settings.retrieval.top_k)
        modes = ["hybrid", "dense", "bm25", "hybrid-formula"]
        if rag.index.fusion_index().exists():  # built by `rag-app build-fusion`
            modes += ["fusion", "fusion-maxsim"]
        configured = rag.settings.retrieval.mode
        mode = st.selectbox("Retriever", modes, index=modes.index(configured) if configured in modes else 0)
        st.caption(f"Index: {statement_count:,} statements")
        st.caption(f"LLM: {rag.llm_status()}")

    st.title("Ask mathematics")
    if statement_count == 0:
        st.info("The index is empty. Ingest LaTeX papers with `rag-app ingest PATH`, or load the demo corpus.")
        if st.button("Ingest the demo corpus"):
            with st.spinner("Ingesting the demo corpus ..."):
                report = rag.ingest_demo()
            st.success(report.summary())
            st.rerun()
        return

    render_formula_search(rag, top_k)

    history: list[Answer] = st.session_state.setdefault("history", [])
    for answer in history:
        with st.chat_message("user"):
            st.markdown(to_streamlit_markdown(answer.question))
        with st.chat_message("assistant"):
            render_answer(answer)

    question = st.chat_input("Ask about a theorem, a definition or a formula ...")
    if not question:
        return
    with st.chat_message("user"):
        st.markdown(to_streamlit_markdown(question))
    with st.chat_message("assistant"):
        try:
            started = time.monotonic()
            with st.spinner("Searching and writing ..."):
                stream = rag.ask_stream(question, top_k, mode)
                placeholder = st.empty()
                text = ""
                for chunk in stream:
                    text += chunk
                    placeholder.markdown(to_streamlit_markdown(text) + " ▌")
                answer = stream.result()
            placeholder.empty()
            render_answer(answer)
            st.caption(f"{time.monotonic() - started:.1f} s")
        except Exception as error:  # never a traceback in the chat
            st.error(f"Something went wrong while answering: {error}")
            return
    history.append(answer)


main()
