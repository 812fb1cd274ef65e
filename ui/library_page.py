"""The library: what is indexed, with which models, and an upload to ingest LaTeX sources."""

from __future__ import annotations

import functools

import pandas as pd
import streamlit as st

from prompts import load_prompt
from rag_app.pipeline import MathRAG
from rag_app.settings import Settings
from retriever.models.cross_encoder_reranker import RerankerModel, RerankerModelError
from ui.components import SOURCE_LABELS, current_library_stats, offer_demo_corpus
from ui.failures import show_failure
from ui.resources import open_backend, open_rag
from ui.uploads import UPLOAD_SUFFIXES, UploadError, save_upload


def _reranker_description(settings: Settings) -> str:
    """Which cross-encoder orders the chat's sources, or why none does."""
    rerank = settings.rerank
    if not rerank.answer:
        return "off for answers (rerank.answer = false)"
    try:
        model = RerankerModel.locate(rerank.model)
    except RerankerModelError as error:
        return f"unavailable: {error}"
    return f"{model.identity} (top {rerank.candidates}, weight {rerank.weight})"


def _second_embedding_description(rag: MathRAG) -> str:
    """Which second embedding model the chat fuses in, or why none is."""
    second = rag.indexes.companion_index()
    if second is None or not rag.settings.second_embedding.answer:
        return "off for answers (second_embedding.model = none, or .answer = false)"
    if not second.built_by_configured_model():
        return f"{second.embedder.model_name}: vectors not built (`rag-app build-dense2`)"
    return f"{second.embedder.identity} ({second.statements():,} statements)"


def render_contents() -> None:
    rag = open_rag()
    stats = current_library_stats(rag)
    columns = st.columns(4)
    columns[0].metric("Statements", f"{stats.statements:,}")
    columns[1].metric("Papers and posts", f"{stats.papers:,}")
    columns[2].metric("Kinds", len(stats.statements_by_kind))
    columns[3].metric("Last ingest", stats.last_ingest[:16].replace("T", " ") or "never")
    if stats.statements == 0:
        offer_demo_corpus(rag)
        return
    by_source = pd.DataFrame(
        {
            "source": [SOURCE_LABELS.get(s, s) for s in stats.statements_by_source],
            "statements": list(stats.statements_by_source.values()),
            "papers or posts": [stats.papers_by_source[s] for s in stats.statements_by_source],
        }
    )
    left, right = st.columns(2)
    with left:
        st.subheader("Sources")
        st.dataframe(by_source, hide_index=True)
        if stats.categories:
            st.subheader("arXiv categories")
            top = stats.categories.most_common(20)
            st.dataframe(pd.DataFrame(top, columns=["category", "statements"]), hide_index=True)
        if stats.first_date:
            st.caption(f"Dates from {stats.first_date} to {stats.last_date}")
    with right:
        st.subheader("Statements by kind")
        kinds = stats.kinds()
        st.bar_chart(
            pd.DataFrame({"kind": kinds, "statements": [stats.statements_by_kind[k] for k in kinds]}),
            x="kind",
            y="statements",
            horizontal=True,
        )
    st.subheader("Models")
    settings = rag.settings
    llm = settings.llm
    fusion = "built" if rag.index.marf_index().exists() else "not built (`rag-app build-fusion`)"
    models = {
        "embedder (vectors in the index)": stats.embedder,
        "embedder (settings)": settings.embedding.model,
        "formula-fusion index": fusion,
        "formula models": settings.formula.models,
        "second embedding (chat)": _second_embedding_description(rag),
        "reranker": _reranker_description(settings),
        "LLM model (settings)": llm.model or (llm.vllm.model if llm.server == "vllm" else llm.local_model),
        "LLM server": open_backend().llm_health()["description"],
        "answer prompt": load_prompt(llm.prompt).identity,
        "index directory": str(settings.resolved_index_dir),
        "vector store": settings.store.connection().describe(settings.resolved_index_dir / "chroma"),
    }
    st.dataframe(pd.DataFrame(list(models.items()), columns=["", "version"]), hide_index=True)


def render_upload() -> None:
    """Upload LaTeX archives or .tex files; each is saved, ingested, and its problems listed."""
    rag = open_rag()
    limit_mb = rag.settings.ui.max_upload_mb
    st.subheader("Add LaTeX sources")
    files = st.file_uploader(
        f"A LaTeX archive (arXiv e-print) or .tex file, up to {limit_mb} MB each",
        type=[suffix.rsplit(".", 1)[-1] for suffix in UPLOAD_SUFFIXES],
        accept_multiple_files=True,
        key="uploads",
    )
    if not files or not st.button("Ingest", type="primary"):
        return
    progress = st.progress(0.0, text="Ingesting ...")
    for done, uploaded in enumerate(files):
        progress.progress(done / len(files), text=f"Ingesting {uploaded.name} ({done + 1} of {len(files)}) ...")
        try:
            path = save_upload(uploaded.name, uploaded.getvalue(), rag.settings.data_dir / "uploads", limit_mb * 10**6)
            report = open_backend().ingest(functools.partial(rag.ingest, [path]))
        except UploadError as error:
            st.error(str(error))
            continue
        except Exception as error:  # a message, never a traceback
            show_failure(f"{uploaded.name}: ingestion failed", error)
            continue
        if report.errors:
            st.error(f"{uploaded.name}: {report.summary()}")
        elif report.statements == 0:
            st.warning(f"{uploaded.name}: no statements found ({report.summary()})")
        else:
            st.success(f"{uploaded.name}: {report.summary()}")
        for problem in report.problems:
            st.caption(f"⚠ {problem}")
    progress.progress(1.0, text=f"Done: {len(files)} file(s)")


def main() -> None:
    st.title("Library")
    try:
        render_contents()
        render_upload()
    except Exception as error:  # a message, never a traceback
        show_failure("The library could not be read", error)


main()
