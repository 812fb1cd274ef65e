"""The compact result list: one line a statement, grouped by paper and section, each opening to the statement.

Under every answer (the search's results after the answer's sources) and on the Search page. A line shows
the statement's kind, number and name, where it comes from and its first words; opened, the whole statement,
what it uses and what uses it, and buttons to ask about it or quote it. An item's contents are drawn only
once it is opened (a lazy expander), so twenty closed lines cost a page almost nothing.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import streamlit as st

from rag_app import MathRAG
from rag_app.search.result_list import first_words, grouped_by_place
from retriever import SearchHit
from ui.export import source_heading, source_origin, typographic_dashes
from ui.graph_buttons import render_links, statement_view
from ui.latex_display import to_streamlit_markdown

QUESTION_INPUT = "question"  # the chat input's key: "Ask about it" writes a question there to edit and send
TO_CHAT = "ask_in_chat"  # set by "Ask about it": a page other than the chat switches to it


def inline_markdown(text: str) -> str:
    """LaTeX as one line of Streamlit Markdown (a label): display math made inline, line breaks made spaces."""
    markdown = to_streamlit_markdown(text)
    markdown = re.sub(r"\s*\$\$\s*", "$", markdown)
    return " ".join(markdown.split())


def line_label(hit: SearchHit, place: str | None) -> str:
    """``7. **Lemma 10.12.3 (Nakayama)** · Commutative Algebra · Modules — Let $R$ be a ring …``."""
    record = hit.record
    where = f" · {inline_markdown(typographic_dashes(place))}" if place else ""
    heading, words = inline_markdown(source_heading(record)), inline_markdown(first_words(record.text))
    return f"{hit.rank}. **{heading}**{where} — {words}"


def question_about(hit: SearchHit) -> str:
    """The question "Ask about it" puts in the chat's input, for the reader to finish or send."""
    record = hit.record
    where = f"{record.paper_id}#{record.label}" if record.label else record.source_title or record.paper_id
    return f"What does {source_heading(record)} ({where}) say, and when does it apply?"


def quote_markdown(hit: SearchHit) -> str:
    """The statement as a Markdown quote with its reference (what "Quote it" gives to copy)."""
    record = hit.record
    quoted = "\n".join(f"> {line}" if line else ">" for line in record.text.strip().splitlines())
    reference = f"{source_heading(record)}, {source_origin(record)}"
    link = f" <{record.url}>" if record.url else ""
    return f"> **{source_heading(record)}.** \n{quoted}\n\n— {reference}{link}\n"


def _ask_about(hit: SearchHit) -> None:
    st.session_state[QUESTION_INPUT] = question_about(hit)
    st.session_state[TO_CHAT] = True


def _show_more(key: str, count: int) -> None:
    st.session_state[key] = count


def render_result_list(rag: MathRAG, hits: Sequence[SearchHit], key: str, shown: int, heading: str) -> None:
    """``hits`` as a compact list under ``heading``: ``shown`` at first, more on request (no new search)."""
    if not hits or shown <= 0:
        return
    more_key = f"{key}-count"
    count = min(st.session_state.get(more_key, shown), len(hits))
    st.markdown(f"**{heading}**")
    for group in grouped_by_place(hits[:count]):
        alone = len(group.hits) == 1
        if not alone:
            st.caption(f"{inline_markdown(typographic_dashes(group.place))} ({len(group.hits)} results)")
        for hit in group.hits:
            render_line(rag, hit, f"{key}-{hit.rank}", group.place if alone else None)
    if count < len(hits):
        step = min(shown, len(hits) - count)
        st.button(f"Show {step} more", key=f"{key}-more", on_click=_show_more, args=(more_key, count + step))


def render_line(rag: MathRAG, hit: SearchHit, key: str, place: str | None) -> None:
    """One result's line; opened: the statement, its links in the statement graph, ask about it, quote it."""
    line = st.expander(line_label(hit, place), key=key, on_change="rerun")
    if not line.open:
        return
    record = hit.record
    with line:
        st.markdown(to_streamlit_markdown(record.text))
        details = [source_origin(record)]
        if record.url:
            details.append(f"[link]({record.url})")
        st.caption(" · ".join(details))
        if record.proof and st.toggle("Proof", key=f"{key}-proof"):
            st.markdown("*Proof.* " + to_streamlit_markdown(record.proof))
        if hit.uses_count or hit.used_by_count or hit.uses_count is None:
            view = statement_view(rag, record.id)
            if view is not None:
                render_links(view, key)
        columns = st.columns(2)
        columns[0].button(
            "Ask about it", key=f"{key}-ask", on_click=_ask_about, args=(hit,), help="a question about it, to edit"
        )
        with columns[1].popover("Quote it"):
            st.code(quote_markdown(hit), language="markdown")  # the code block has a copy button
