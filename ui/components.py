"""Pieces the chat and library pages share: the cached MathRAG, source cards, answers, sidebar controls."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from rag_app import MathRAG
from rag_app.answering.answer import Answer, AnswerStatus
from rag_app.answering.attribution import split_sentences
from rag_app.answering.verdict import verdict_line
from rag_app.serving.server_watch import LLMHealth
from retriever import PaperHit, SearchFilter, SearchHit
from ui.export import answer_markdown, bibtex_entries, source_heading, source_origin
from ui.failures import show_failure
from ui.graph_buttons import render_definitions, render_statement_links
from ui.latex_display import link_citations, to_streamlit_markdown
from ui.library import LibraryStats, library_stats
from ui.resources import open_backend, open_rag
from ui.result_lines import render_result_list

SOURCE_LABELS = {"arxiv": "arXiv", "mse": "Math StackExchange", "local": "local"}
MODE_LABELS = {
    "hybrid": "hybrid (dense + BM25)",
    "hybrid-formula": "hybrid + formula matching",
    "dense": "dense only",
    "bm25": "BM25 only",
    "fusion": "formula-fusion",
    "fusion-maxsim": "formula-fusion + MaxSim rerank",
}
PREVIEW_CHARS = 400


@st.cache_data(show_spinner="Reading the library ...", max_entries=4)
def cached_library_stats(index_dir: str, updated: str, count: int) -> LibraryStats:
    """Library statistics, recomputed only when the index changes (its manifest's time or size)."""
    return library_stats(open_rag().index)


def current_library_stats(rag: MathRAG) -> LibraryStats:
    manifest = rag.index.manifest()
    return cached_library_stats(str(rag.index.directory), str(manifest.get("updated", "")), rag.index.count())


@dataclass(frozen=True)
class SearchControls:
    top_k: int
    mode: str
    where: SearchFilter


def sidebar_controls(rag: MathRAG, stats: LibraryStats, sources_slider: bool = True) -> SearchControls:
    """The sidebar: filters (source, kind, category, dates), retriever mode, number of sources (unless
    ``sources_slider`` is off: the Search page sets its own number of results), LLM status."""
    with st.sidebar:
        st.header("Search")
        sources = st.multiselect(
            "Sources", list(SOURCE_LABELS), format_func=SOURCE_LABELS.get, placeholder="all sources", key="sources"
        )
        kinds = st.multiselect("Kinds", stats.kinds(), placeholder="all kinds", key="kinds")
        categories = st.multiselect(
            "arXiv categories",
            [category for category, _ in stats.categories.most_common()],
            placeholder="all categories" if stats.categories else "no categories indexed",
            key="categories",
        )
        date_from = date_to = None
        if stats.first_date and stats.last_date:
            chosen = st.date_input(
                "Dates (arXiv first version, MSE post)",
                value=(stats.first_date, stats.last_date),
                min_value=stats.first_date,
                max_value=stats.last_date,
                key="dates",
            )
            if isinstance(chosen, tuple) and len(chosen) == 2:
                # Only a narrowed range filters: statements without a date stay in otherwise.
                date_from = chosen[0] if chosen[0] > stats.first_date else None
                date_to = chosen[1] if chosen[1] < stats.last_date else None
        modes = ["hybrid-formula", "hybrid", "dense", "bm25"]
        if rag.index.marf_index().exists():  # built by `rag-app build-fusion`
            modes += ["fusion", "fusion-maxsim"]
        configured = rag.settings.retrieval.mode
        mode = st.selectbox(
            "Retriever",
            modes,
            index=modes.index(configured) if configured in modes else 0,
            format_func=MODE_LABELS.get,
            key="mode",
        )
        top_k = rag.settings.retrieval.top_k
        if sources_slider:
            top_k = st.slider("Number of sources", 1, 15, top_k, key="top_k")
        st.divider()
        st.caption(f"Index: {stats.statements:,} statements from {stats.papers:,} papers and posts")
    where = SearchFilter(frozenset(sources), frozenset(kinds), frozenset(categories), date_from, date_to)
    return SearchControls(top_k, mode, where)


def render_llm_health(rag: MathRAG, slot: DeltaGenerator) -> LLMHealth:
    """The LLM's state in ``slot`` (a placeholder in the sidebar): drawn before a question and again after
    it, so that a server that died under the question is shown down at once, with why."""
    health = LLMHealth(**open_backend().llm_health())  # type: ignore[arg-type]
    icon = {"up": "🟢", "down": "🔴", "restarting": "🟠", "building": "🛠️"}.get(health.state, "⚪")
    box = slot.container()  # the placeholder holds one element: the line and, while building, its progress
    box.caption(f"{icon} LLM: {health.description}")
    if health.state == "building":  # llama.cpp is built in the background: its progress, redrawn per run
        done = re.search(r"(\d+)% done", health.description)
        box.progress(int(done.group(1)) / 100 if done else 0.0)
    return health


def render_source(
    hit: SearchHit, number: int | None, anchor: str | None, cited: bool = False, quoted: bool = False
) -> None:
    """One numbered source: heading, the statement rendered, where it comes from, its link.

    No score is shown: the ranker's scores are not on a scale a reader can use (they are often
    negative), and the order already says what they say. A source the answer quotes whole (``quoted``)
    is not repeated: its card keeps the heading, origin and link and says it is quoted above. The full
    statement and the proof (when ingested) expand on click.
    """
    record = hit.record
    with st.container(border=True):
        if anchor:
            st.markdown(f'<div id="{anchor}"></div>', unsafe_allow_html=True)
        prefix = f"[{number}] " if number is not None else ""
        mark = " · quoted above" if quoted else (" · ✓ cited" if cited else "")
        st.markdown(f"**{prefix}{source_heading(record)}**{mark}")
        preview, shortened = _preview(record.text)
        if not quoted:
            st.markdown(to_streamlit_markdown(preview))
        details = [source_origin(record)]
        if record.url:
            details.append(f"[{_link_label(record.url)}]({record.url})")
        st.caption(" · ".join(details))
        if hit.duplicates:  # the same statement elsewhere, collapsed into this source
            places = [
                f"[{p.title or p.paper_id}]({p.url})" if p.url else (p.title or p.paper_id) for p in hit.duplicates
            ]
            st.caption("also in: " + "; ".join(dict.fromkeys(places)))
        if shortened or record.proof:
            with st.expander("Full statement and proof" if record.proof else "Full statement"):
                st.markdown(to_streamlit_markdown(record.text))
                if record.proof:
                    st.markdown("*Proof.* " + to_streamlit_markdown(record.proof))
        if anchor:  # a source of an answer (its anchor keys its buttons apart from other answers')
            render_statement_links(open_rag(), hit, anchor)


def render_paper(paper: PaperHit) -> None:
    """One paper (or MSE thread) of a paper search: title, authors, link, and its best statements."""
    with st.container(border=True):
        known_as = paper.title or (paper.hits[0].record.source_title if paper.hits else paper.paper_id)
        title = to_streamlit_markdown(known_as)
        st.markdown(f"**{paper.rank}. {title}**")
        details = [SOURCE_LABELS.get(paper.source, paper.source), paper.paper_id]
        details += [text for text in (paper.authors, " ".join(paper.categories), paper.date) if text]
        if paper.url:
            details.append(f"[{_link_label(paper.url)}]({paper.url})")
        st.caption(" · ".join(details))
        for hit in paper.hits:
            preview, _ = _preview(hit.record.text)
            st.markdown(f"*{source_heading(hit.record)}*: " + to_streamlit_markdown(preview))


def render_sources(sources: list[SearchHit], cited: list[int], anchor: str | None, quoted: Sequence[int] = ()) -> None:
    """The numbered sources; those in ``quoted`` (quoted whole in the answer) as short cards."""
    if not sources:
        return
    st.markdown("**Sources**")
    for number, hit in enumerate(sources, start=1):
        render_source(hit, number, f"{anchor}-{number}" if anchor else None, number in cited, number in quoted)


def render_answer(answer: Answer, turn: int, latest: bool = True) -> None:
    """An answer with linked citations, its checks, its numbered sources, the next results and its exports.
    Under an earlier answer (not ``latest``) the next results wait behind a toggle: every line is a widget, and a
    long conversation would otherwise redraw twenty of them per answer at every click."""
    anchor = f"src-{turn}"
    if answer.search_query and answer.search_query != answer.question:
        st.caption(f"searched for: {answer.search_query}")
    if answer.llm_error:
        st.warning(answer.text)
    elif answer.not_found:
        st.info(answer.text)
    else:
        st.markdown(link_citations(to_streamlit_markdown(answer.text), anchor, len(answer.sources)))
        if answer.status is AnswerStatus.UNSUPPORTED and answer.style != "quote":
            st.warning("No sentence of this answer is supported by the sources: read it with care.")
        for sentence in answer.sentences:
            if sentence.claim and not sentence.supported:
                why = f" ({'; '.join(sentence.problems[:3])})" if sentence.problems else ""
                removed = "removed, " if sentence.text in answer.removed_sentences else ""
                st.caption(f"⚠ {removed}not stated by the sources it cites{why}: {sentence.text}")
        for number in answer.quoted_sources():  # what the quoted statement's terms mean
            render_definitions(open_rag(), answer.sources[number - 1], f"{anchor}-quoted-{number}")
        if answer.verdict in ("unsure", "not_found"):  # the doubt as plain as the answer
            st.warning(verdict_line(answer.verdict, answer.confidence))
        elif answer.verdict is not None:
            st.caption(verdict_line(answer.verdict, answer.confidence))
        if answer.style == "quote" and answer.chosen_by == "ranker":
            st.caption("The search's first result led clearly, so it is quoted without asking the language model.")
        elif answer.style == "quote" and answer.choice_confidence is not None:
            what = "this choice" if answer.status is AnswerStatus.ANSWERED else "no statement answering"
            st.caption(f"The model's confidence in {what}: {answer.choice_confidence:.0%}")
        if answer.invalid_citations:
            st.caption(f"Removed citations to sources that were not given: {answer.invalid_citations}")
    if answer.filter != "everything":
        st.caption(f"filter: {answer.filter}")
    render_sources(answer.sources, answer.cited, anchor, answer.quoted_sources())
    rag = open_rag()  # the same search's next results, one line each
    listed = answer.next_results
    if listed and (latest or st.toggle(f"Next results ({len(listed)})", key=f"next-{turn}-shown")):
        render_result_list(rag, listed, f"next-{turn}", rag.settings.ui.next_results_shown, "Next results")
    render_exports(answer, turn)


def render_exports(answer: Answer, turn: int) -> None:
    """Copy the answer as Markdown with its references; BibTeX for its arXiv sources."""
    markdown = answer_markdown(answer)
    bibtex = bibtex_entries(answer.sources)
    columns = st.columns(2)
    with columns[0].popover("Copy as Markdown"):
        st.code(markdown, language="markdown")  # the code block has a copy button
        st.download_button("Download .md", markdown, file_name=f"answer-{turn + 1}.md", key=f"md-{turn}")
    if bibtex:
        with columns[1].popover("BibTeX"):
            st.code(bibtex, language="latex")
            st.download_button("Download .bib", bibtex, file_name=f"sources-{turn + 1}.bib", key=f"bib-{turn}")


def offer_demo_corpus(rag: MathRAG) -> None:
    """The empty-index state: how to ingest, and one click for the demo corpus."""
    st.info(
        "The index is empty. Ingest LaTeX papers with `rag-app ingest PATH` (or an arXiv month with "
        "`rag-app ingest arxiv --month YYYY-MM`), upload sources on the Library page, or load the demo corpus."
    )
    if st.button("Ingest the demo corpus", type="primary"):
        try:
            with st.spinner("Ingesting the demo corpus ...", show_time=True):
                report = open_backend().ingest(rag.ingest_demo)
        except Exception as error:  # a message, never a traceback
            show_failure("The demo corpus could not be ingested", error)
            return
        # Shown by the chat page after the rerun that swaps this offer for the chat.
        st.session_state["ingest_message"] = report.summary()
        st.rerun()


def _preview(text: str) -> tuple[str, bool]:
    """The statement, or its first sentences when it is long (cut between sentences, never inside math)."""
    if len(text) <= PREVIEW_CHARS:
        return text, False
    kept = ""
    for sentence in split_sentences(text):
        if kept and len(kept) + len(sentence) > PREVIEW_CHARS:
            break
        kept += sentence + " "
    kept = kept.strip()
    return (kept + " …", True) if len(kept) < len(text.strip()) else (text, False)


def _link_label(url: str) -> str:
    if "arxiv.org" in url:
        return "arXiv"
    if "stacks.math.columbia.edu" in url:
        return "Stacks tag"
    if "stackexchange.com" in url:
        return "Math StackExchange"
    return "link"
