"""The chat: ask, follow up, read streamed answers whose citations link to the numbered sources."""

from __future__ import annotations

import streamlit as st

from rag_app.answering.answer import Answer
from rag_app.answering.conversation import Turn
from rag_app.api.guards import QueueFullError
from retriever.text.query_formulas import strip_delimiters
from ui.components import (
    SearchControls,
    current_library_stats,
    offer_demo_corpus,
    render_answer,
    render_llm_health,
    render_paper,
    render_sources,
    sidebar_controls,
)
from ui.failures import show_failure
from ui.graph_buttons import render_opened_statement
from ui.latex_display import to_streamlit_markdown
from ui.resources import open_backend, open_rag, open_rag_or_say_why
from ui.result_lines import QUESTION_INPUT, TO_CHAT


def render_formula_search(controls: SearchControls) -> None:
    """Type or paste a formula, see it rendered live, find the statements holding it or an equivalent one."""
    with st.expander("Search by formula", expanded=bool(st.session_state.get("formula"))):
        formula = st.text_input("Formula (LaTeX)", key="formula", placeholder=r"\int \frac{dx}{(x^2+1)^n}")
        if not formula.strip():
            return
        st.latex(strip_delimiters(formula))
        try:
            hits = open_backend().formula(formula, controls.top_k, controls.where)
        except Exception as error:  # a message, never a traceback
            show_failure("Formula search failed", error)
            return
        if hits:
            render_sources(hits, [], anchor=None)
        else:
            st.info("No statement holds this formula or a similar one.")


def render_paper_search(controls: SearchControls) -> None:
    """Which paper proves this? Papers (MSE: threads) ranked by their statements, each with its best ones."""
    with st.expander("Find papers", expanded=bool(st.session_state.get("paper_query"))):
        query = st.text_input(
            "What should the paper prove?", key="paper_query", placeholder="good moduli spaces are projective"
        )
        if not query.strip():
            return
        try:
            papers = open_backend().papers(query, controls.top_k, controls.where, controls.mode)
        except Exception as error:  # a message, never a traceback
            show_failure("Paper search failed", error)
            return
        if not papers:
            st.info("No paper matches (check the filters in the sidebar).")
        for paper in papers:
            render_paper(paper)


def answer_question(question: str, history: list[Answer], controls: SearchControls) -> Answer | None:
    """Stream one answer into the page; errors become messages."""
    rag = open_rag()
    turns = [Turn(a.question, a.text if a.answered_by_llm else "", a.search_query or a.question) for a in history]
    # The answer task's stack (rerank.answer, second_embedding.answer), as every other front end's answers.
    options = {"mode": controls.mode, "history": turns, "where": controls.where}
    try:
        with (
            st.spinner("Searching and writing ...", show_time=True),
            open_backend().answer(question, controls.top_k, **options) as stream,  # in its turn at the LLM
        ):
            placeholder = st.empty()
            text = ""
            for chunk in stream.events():
                # an update (the model's choice after the quote shown first) replaces what was shown, saying so
                text = text + chunk if isinstance(chunk, str) else chunk.text
                placeholder.markdown(to_streamlit_markdown(text) + " ▌")
            answer = stream.result()
        placeholder.empty()
    except QueueFullError:
        limits = rag.settings.api
        st.warning(f"{limits.max_queued_asks} questions are waiting for the model already; ask again in a moment.")
        return None
    except TimeoutError:  # past api.ask_timeout_s, in the queue, the search or the writing
        st.error(
            f"The answer took longer than its time limit (api.ask_timeout_s = {rag.settings.api.ask_timeout_s:g} s)."
        )
        return None
    except Exception as error:  # never a traceback in the chat
        show_failure("Something went wrong while answering", error)
        return None
    render_answer(answer, len(history))
    seconds = answer.timings_ms.get("total", 0) / 1000
    first = answer.timings_ms.get("first_token")
    shown_at = f"first words at {first / 1000:.1f} s · " if first is not None and seconds - first / 1000 >= 0.5 else ""
    st.caption(f"{shown_at}{seconds:.1f} s · {answer.model_calls_text} · {answer.prompt}")
    return answer


def main() -> None:
    st.session_state.pop(TO_CHAT, None)  # "Ask about it" brought the reader here, or was clicked here: done
    opened = open_rag_or_say_why()
    if opened is None:
        return
    rag, statement_count = opened

    st.title("Ask mathematics")
    if statement_count == 0:
        offer_demo_corpus(rag)
        st.page_link("library_page.py", label="Or upload LaTeX sources on the Library page", icon="📚")
        return

    if message := st.session_state.pop("ingest_message", None):
        st.success(message)
    controls = sidebar_controls(rag, current_library_stats(rag))
    llm_slot = st.sidebar.empty()
    health = render_llm_health(rag, llm_slot)
    if health.state == "down":
        st.warning(
            f"The language model is not available ({health.description}). "
            "Questions still get the retrieved statements, without a written answer."
        )
    elif health.state == "building":
        st.info(
            "The local model is still being built for this CPU: answers quote the statement the search ranks first, "
            "and take the model's reading as soon as it is in (no restart)."
        )
    render_opened_statement(rag)
    render_paper_search(controls)
    render_formula_search(controls)

    history: list[Answer] = st.session_state.setdefault("history", [])
    if history and st.sidebar.button("New conversation"):
        history.clear()
        st.rerun()
    for turn, answer in enumerate(history):
        with st.chat_message("user"):
            st.markdown(to_streamlit_markdown(answer.question))
        with st.chat_message("assistant"):
            render_answer(answer, turn, latest=turn == len(history) - 1)

    # keyed: "Ask about it" under a result writes a question here for the reader to finish or send
    question = st.chat_input("Ask about a theorem, a definition or a formula ...", key=QUESTION_INPUT)
    if not question:
        return
    with st.chat_message("user"):
        st.markdown(to_streamlit_markdown(question))
    with st.chat_message("assistant"):
        answer = answer_question(question, history, controls)
    if answer is not None:
        history.append(answer)
    render_llm_health(rag, llm_slot)  # the server may have died (or been restarted) under this question


main()
