"""The statement graph in the chat: what each source uses and what uses it, each a button that opens
that statement at the top of the page, and under a quoted answer the definitions its statement relies on."""

from __future__ import annotations

import sqlite3

import streamlit as st

from rag_app import MathRAG
from rag_app.api.blocking_backend import BlockingBackend
from rag_app.search.statement_links import StatementLink, StatementNotFoundError, StatementView
from retriever import SearchHit
from ui.latex_display import to_streamlit_markdown
from ui.resources import open_backend

OPENED = "open_statement"  # session state: the id of the statement opened at the top of the page
MAX_LINKS = 20  # buttons listed under "Used by"; the rest are counted


@st.cache_data(show_spinner=False, max_entries=2000)
def cached_statement_view(
    _backend: BlockingBackend, index_dir: str, updated: str, statement_id: str
) -> StatementView | None:
    """One statement's view (through the serving backend, in its turn among the searches), read again only
    when the index changes (its manifest's time); ``_backend`` is not part of the cache key (Streamlit
    leaves out parameters named with a leading underscore)."""
    try:
        return _backend.statement(statement_id, depth=2)
    except (StatementNotFoundError, sqlite3.DatabaseError):
        return None  # deleted meanwhile, or a damaged graph (`rag-app status` names it)


def statement_view(rag: MathRAG, statement_id: str) -> StatementView | None:
    updated = str(rag.index.manifest().get("updated", ""))
    try:
        return cached_statement_view(open_backend(), str(rag.index.directory), updated, statement_id)
    except TimeoutError:  # past the search time limit: not cached (an exception is not), shown as not found
        return None


def _open(statement_id: str) -> None:
    st.session_state[OPENED] = statement_id


def _link_button(link: StatementLink, key: str) -> None:
    where = f"{link.paper_id}#{link.label}" if link.label else link.paper_id
    st.button(f"{link.display_name} · {where}", key=key, on_click=_open, args=(link.id,), type="tertiary")


def render_statement_links(rag: MathRAG, hit: SearchHit, key: str) -> None:
    """Under a source card: "Uses n · Used by m", expanding to buttons that open those statements."""
    uses, used_by = hit.uses_count or 0, hit.used_by_count or 0
    if not uses and not used_by:
        return
    with st.expander(f"Uses {uses} · Used by {used_by}"):
        view = statement_view(rag, hit.record.id)
        if view is None:
            st.caption("The statement graph cannot be read now.")
            return
        render_links(view, key)


def render_links(view: StatementView, key: str) -> None:
    if view.uses:
        st.markdown("**Uses**")
        for position, use in enumerate(view.uses):
            if use.statement is not None:
                _link_button(use.statement, f"{key}-uses-{position}")
            elif use.section:
                st.caption(f"section: {use.section}")
            else:
                st.caption(f"not in the index: {use.label}")
    if view.used_by:
        st.markdown("**Used by**")
        for position, link in enumerate(view.used_by[:MAX_LINKS]):
            _link_button(link, f"{key}-used-by-{position}")
        if len(view.used_by) > MAX_LINKS:  # Nakayama's lemma is used 118 times in the Stacks project
            more = len(view.used_by) - MAX_LINKS
            st.caption(f"... and {more} more: `rag-app show {view.record.id}` lists them all")
    if view.cited_as:
        st.markdown(f"**How it is cited** ({view.cited_as_count} citing sentences)")
        for position, mention in enumerate(view.cited_as):
            st.markdown("> " + to_streamlit_markdown(mention.sentence))
            _link_button(mention.statement, f"{key}-cited-as-{position}")
        if view.cited_as_count > len(view.cited_as):
            st.caption(f"... and {view.cited_as_count - len(view.cited_as)} more: `rag-app show {view.record.id}`")
    cited = [citation for citation in view.cites if citation.in_index]
    if cited:
        st.markdown("**Cites papers in the index**")
        for citation in cited:
            st.caption(f"[{citation.key}] arXiv:{citation.arxiv_id} — {citation.paper_title}")
    if view.cited_by:
        st.markdown(f"**Its paper is cited by** {view.cited_by_count} statements of other papers")
        for position, link in enumerate(view.cited_by[:MAX_LINKS]):
            _link_button(link, f"{key}-cited-by-{position}")


def render_definitions(rag: MathRAG, hit: SearchHit, key: str) -> None:
    """Under a quoted statement: the definitions it relies on (directly, then through what it uses)."""
    view = statement_view(rag, hit.record.id)
    if view is None or not view.definitions:
        return
    st.caption("Definitions it relies on:")
    for position, link in enumerate(view.definitions):
        _link_button(link, f"{key}-definition-{position}")


def render_opened_statement(rag: MathRAG) -> None:
    """The statement a link opened, at the top of the page, with its own links (close to go back)."""
    statement_id = st.session_state.get(OPENED)
    if not statement_id:
        return
    view = statement_view(rag, statement_id)
    if view is None:
        st.session_state.pop(OPENED, None)
        return
    record = view.record
    with st.container(border=True):
        where = f"{record.paper_id}#{record.label}" if record.label else record.paper_id
        st.markdown(f"**{record.display_name}** · {to_streamlit_markdown(record.source_title)} · `{where}`")
        st.markdown(to_streamlit_markdown(record.text))
        if record.proof:
            with st.expander("Proof"):
                st.markdown("*Proof.* " + to_streamlit_markdown(record.proof))
        if record.url:
            st.caption(record.url)
        render_links(view, "opened")
        if view.definitions:
            st.markdown("**Definitions in scope**")
            for position, link in enumerate(view.definitions):
                _link_button(link, f"opened-definition-{position}")
        st.button("Close", key="close-opened", on_click=st.session_state.pop, args=(OPENED, None))
