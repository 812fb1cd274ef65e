"""MathRAG: ingestion, retrieval and generation behind one object (the Python API).

with MathRAG.open("~/my-index") as rag:
    rag.ingest(["paper.tar.gz"])
    hits = rag.search("Nakayama's lemma", k=5)
    answer = rag.ask("When is a finitely generated module zero?")
"""

from __future__ import annotations

import atexit
import os
import time
from collections.abc import Iterable, Iterator
from importlib import resources
from pathlib import Path

from tqdm import tqdm

from ingestion import LatexIngestor, StatementRecord, ingest_sources
from ingestion.parallel_latex_ingestor import ParallelLatexIngestor
from prompts import load_prompt
from rag_app.answer import Answer, AnswerStream
from rag_app.citations import check_citations
from rag_app.context import format_sources
from rag_app.ingest_report import IngestReport
from rag_app.llm_client import ChatClient, LLMUnavailableError
from rag_app.llm_server import (
    LLMServerError,
    LocalLLMServer,
    is_healthy,
    local_server_from_settings,
    running_server_url,
)
from rag_app.packaged_models import PackagedModelError
from rag_app.settings import Settings
from retriever import Embedder, SearchHit, SearchMode, StatementIndex
from retriever.formulas.fusion_index import FusionUpdate

# Papers are embedded in batches of about this many statements (one model call per batch).
_FLUSH_STATEMENTS = 512


def demo_corpus_path() -> Path:
    """The demo corpus of LaTeX papers shipped inside the package."""
    return Path(str(resources.files("rag_app") / "demo_corpus"))


class MathRAG:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._index: StatementIndex | None = None
        self._server: LocalLLMServer | None = None
        self._client: ChatClient | None = None

    @classmethod
    def open(cls, index_dir: str | Path | None = None, settings: Settings | None = None) -> MathRAG:
        settings = settings or Settings.load()
        if index_dir is not None:
            settings = settings.model_copy(update={"index_dir": Path(index_dir).expanduser()})
        return cls(settings)

    # ------------------------------------------------------------------ index
    @property
    def index(self) -> StatementIndex:
        if self._index is None:
            retrieval = self.settings.retrieval
            embedder = make_embedder(self.settings)
            self._index = StatementIndex(
                self.settings.resolved_index_dir,
                embedder,
                candidates=retrieval.candidates,
                rrf_k=retrieval.rrf_k,
                weights={
                    "dense": retrieval.dense_weight,
                    "bm25": retrieval.bm25_weight,
                    "formula": retrieval.formula_weight,
                },
                fusion=retrieval.fusion,
                formula_models=self.settings.formula.models,
                token_dim=self.settings.formula.token_dim,
                maxsim_candidates=self.settings.formula.maxsim_candidates,
            )
        return self._index

    def ingest(self, paths: Iterable[str | Path], show_progress: bool = False) -> IngestReport:
        """Ingest LaTeX files, directories, archives and statement CSVs; problems are reported, not raised.

        Re-ingesting unchanged sources adds nothing; a changed paper's statements are replaced.
        """
        started = time.perf_counter()
        report = IngestReport()
        pending: dict[str, list[StatementRecord]] = {}
        ids_by_paper: dict[str, set[str]] = {}
        ingestion = self.settings.ingestion
        latex: LatexIngestor | ParallelLatexIngestor = LatexIngestor(ingestion.limits)
        if ingestion.isolate_papers:
            latex = ParallelLatexIngestor(ingestion.limits, ingestion.workers or os.cpu_count() or 1)
        papers = ingest_sources((Path(p).expanduser() for p in paths), latex)
        for paper in tqdm(papers, desc="ingesting", unit="paper", disable=not show_progress):
            report.problems.extend(paper.problems)
            if not paper.records:
                continue
            report.papers += 1
            report.statements += len(paper.records)
            pending.setdefault(paper.paper_id, []).extend(paper.records)
            ids_by_paper.setdefault(paper.paper_id, set()).update(r.id for r in paper.records)
            if sum(len(records) for records in pending.values()) >= _FLUSH_STATEMENTS:
                self._flush(pending, report, show_progress)
        self._flush(pending, report, show_progress)
        report.removed = self.index.remove_stale(ids_by_paper)
        if report.added or report.removed or self.index.lexical_stale:
            self.index.rebuild_lexical()
        report.seconds = time.perf_counter() - started
        return report

    def _flush(self, pending: dict[str, list[StatementRecord]], report: IngestReport, show_progress: bool) -> None:
        if pending:
            result = self.index.add([r for records in pending.values() for r in records], show_progress)
            report.added += result.added
            report.unchanged += result.unchanged
            pending.clear()

    def ingest_demo(self, show_progress: bool = False) -> IngestReport:
        return self.ingest([demo_corpus_path()], show_progress)

    def search(self, query: str, k: int | None = None, mode: SearchMode | str | None = None) -> list[SearchHit]:
        return self.index.search(query, k or self.settings.retrieval.top_k, mode or self.settings.retrieval.mode)

    # ------------------------------------------------------------------ answers
    def search_formula(self, formula: str, k: int | None = None) -> list[SearchHit]:
        """Statements holding the formula, an equivalent one or a similar one (delimiters optional)."""
        return self.index.search_formula(formula, k or self.settings.retrieval.top_k)

    def build_fusion(self, rebuild: bool = False, show_progress: bool = False) -> FusionUpdate:
        """Embed the statements the formula-fusion index lacks (see ``rag-app build-fusion``)."""
        return self.index.build_fusion(rebuild=rebuild, show_progress=show_progress)

    def ask(self, question: str, k: int | None = None, mode: SearchMode | str | None = None) -> Answer:
        return self.ask_stream(question, k, mode).result()

    def ask_stream(self, question: str, k: int | None = None, mode: SearchMode | str | None = None) -> AnswerStream:
        """Retrieve, then stream the LLM's answer; when the LLM is down, say so and keep the sources."""
        hits = self.search(question, k, mode)
        llm = self.settings.llm
        prompt = load_prompt(llm.prompt)
        budget = max(256, llm.context_window - llm.max_tokens - 400)
        messages = prompt.messages(sources=format_sources(hits, budget), question=question)
        state: dict[str, str | None] = {"error": None, "model": None}

        def chunks() -> Iterator[str]:
            try:
                client = self.llm_client()
                state["model"] = client.model
                yield from client.stream_chat(messages)
            except (LLMUnavailableError, LLMServerError, PackagedModelError) as error:
                state["error"] = str(error)

        def finish(text: str) -> Answer:
            if state["error"] is not None:
                notice = f"The language model is not available ({state['error']})."
                if hits:
                    notice += " The statements retrieved for your question are listed below."
                return Answer(question, notice, hits, llm_error=state["error"])
            checked = check_citations(text.strip(), len(hits))
            return Answer(question, checked.text, hits, checked.cited, checked.invalid, model=state["model"])

        return AnswerStream(hits, chunks(), finish)

    # ------------------------------------------------------------------ LLM
    def llm_client(self) -> ChatClient:
        """A client for the configured server, starting the local one if none is configured."""
        if self._client is None:
            llm = self.settings.llm
            base_url = llm.base_url or running_server_url(self.settings.data_dir) or self._start_local_server()
            self._client = ChatClient(
                base_url,
                api_key=llm.api_key,
                model=llm.model,
                timeout_s=llm.timeout_s,
                retries=llm.retries,
                temperature=llm.temperature,
                max_tokens=llm.max_tokens,
                extra_body=llm.extra_body,
            )
        return self._client

    def llm_status(self) -> str:
        """A one-line description of where answers come from, for the UI and ``llm status``."""
        llm = self.settings.llm
        if llm.base_url:
            state = "up" if is_healthy(llm.base_url) else "down"
            return f"{llm.base_url} ({state})"
        if self._server is not None and self._server.running:
            return f"local llama.cpp server at {self._server.base_url} ({llm.local_model})"
        running = running_server_url(self.settings.data_dir)
        if running:
            return f"local server at {running} (started by `llm serve`)"
        return f"local llama.cpp server, started on first question ({llm.local_model})"

    def _start_local_server(self) -> str:
        server = local_server_from_settings(self.settings)
        server.start()
        self._server = server
        atexit.register(server.stop)
        return server.base_url

    def close(self) -> None:
        """Stop the LLM server if this object started it."""
        if self._server is not None:
            self._server.stop()
            self._server = None
        self._client = None

    def __enter__(self) -> MathRAG:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def make_embedder(settings: Settings, spec: str | None = None) -> Embedder:
    """The configured embedder, or ``spec`` (another embedder spec) with the same device and batching."""
    embedding = settings.embedding
    return Embedder(
        spec or embedding.model,
        embedding.device,
        embedding.batch_size,
        embedding.max_seq_length,
        registry_dir=settings.resolved_registry_dir,
    )
