"""The Search page: a query gives the ranked list at once, no answer written; the same list as `search --json`.

The sidebar's filters (source, kind, category, dates) and retriever apply as in the chat. A query may be a
formula (statements holding it, an equivalent or a similar one), and papers can be ranked instead of
statements. Each result is one line that opens to the statement.
"""

from __future__ import annotations

import json
import time

import streamlit as st

from retriever import PaperHit, SearchHit
from retriever.text.query_formulas import strip_delimiters
from ui.components import (
    SearchControls,
    current_library_stats,
    offer_demo_corpus,
    render_paper,
    sidebar_controls,
)
from ui.failures import show_failure
from ui.graph_buttons import render_opened_statement
from ui.resources import open_backend, open_rag_or_say_why
from ui.result_lines import TO_CHAT, render_result_list

SHOWN = 20  # lines at first; "Show more" lists the rest of those found, without a new search


def run_search(query: str, controls: SearchControls, count: int, papers: bool, formula: bool) -> list:
    """What `rag-app search` with the same options returns (`--papers`, `--formula`, `-k`, `--mode`, filters):
    the search task's stack, as `GET /v1/search` ranks."""
    backend = open_backend()
    if papers:
        mode = None if formula else controls.mode
        return backend.papers(query, count, controls.where, mode, formula=formula)
    if formula:
        return backend.formula(query, count, controls.where)
    return backend.search(query, count, controls.mode, controls.where)


def render_json(results: list[SearchHit] | list[PaperHit]) -> None:
    """The results as `search --json` prints them, to copy or download."""
    text = json.dumps([result.to_dict() for result in results], ensure_ascii=False, indent=1)
    with st.popover("JSON (as `search --json`)"):
        st.download_button("Download search.json", text, file_name="search.json", mime="application/json")
        st.code(text, language="json")


def main() -> None:
    if st.session_state.pop(TO_CHAT, False):  # "Ask about it": the question waits in the chat's input
        st.switch_page("chat_page.py")
    opened = open_rag_or_say_why()
    if opened is None:
        return
    rag, statement_count = opened
    st.title("Search")
    if statement_count == 0:
        offer_demo_corpus(rag)
        return
    controls = sidebar_controls(rag, current_library_stats(rag), sources_slider=False)
    render_opened_statement(rag)
    query = st.text_input(
        "Search the statements", key="search_query", placeholder="Nakayama's lemma, or \\int \\frac{dx}{(x^2+1)^n}"
    )
    columns = st.columns([2, 2, 1])
    papers = columns[0].radio("Rank", ["statements", "papers"], horizontal=True, key="search_rank") == "papers"
    formula = columns[1].toggle("The query is a formula", key="search_formula")
    count = int(columns[2].number_input("Results", 10, 100, 50, step=10, key="search_count"))
    if not query.strip():
        st.caption("One line a result, best first, grouped by paper and section; open a line for the statement.")
        return
    if formula:
        st.latex(strip_delimiters(query))
    started = time.perf_counter()
    try:
        results = run_search(query, controls, count, papers, formula)
    except Exception as error:  # a message, never a traceback
        show_failure("The search failed", error)
        return
    found_ms = (time.perf_counter() - started) * 1000
    if not results:
        st.info("Nothing found (check the filters in the sidebar).")
        return
    what = "papers" if papers else "statements"
    filtered = f" · filter: {controls.where.describe()}" if controls.where.active else ""
    st.caption(f"{len(results)} {what} in {found_ms:.0f} ms{filtered}")
    render_json(results)
    if papers:
        for paper in results:
            render_paper(paper)
    else:
        render_result_list(rag, results, "search", SHOWN, "Results")


main()
