"""MathRAG: ingestion, retrieval and generation behind one object (the Python API).

with MathRAG.open("~/my-index") as rag:
    rag.ingest(["paper.tar.gz"])
    hits = rag.search("Nakayama's lemma", k=5)
    answer = rag.ask("When is a finitely generated module zero?")
"""

from __future__ import annotations

import dataclasses
import logging
import os
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from importlib import resources
from pathlib import Path

import numpy as np
from tqdm import tqdm

from ingestion import LatexIngestor, PaperStatements, StatementRecord, ingest_sources
from ingestion.arxiv_month_sources import month_prefix
from ingestion.mse_records import MseFilters
from ingestion.parallel_latex_ingestor import ParallelLatexIngestor
from ingestion.unreadable_text import check_readable
from prompts import load_prompt
from rag_app.answering.answer import Answer, AnswerStream
from rag_app.answering.answerer import Answerer
from rag_app.answering.conversation import QueryRewriter, RewrittenQuery, Turn
from rag_app.answering.question import Question
from rag_app.answering.stages import ModelCall, Retrieval
from rag_app.answering.verdict_stage import VerdictStage
from rag_app.indexing.arxiv_month import MonthReport, month_ingest
from rag_app.indexing.ingest_report import IngestReport
from rag_app.indexing.mse_ingest import MseIngest, MseReport
from rag_app.indexing.statement_writer import PendingPaper, StatementWriter
from rag_app.search.embedder_factory import resolve_device
from rag_app.search.opened_index import OpenedIndex
from rag_app.search.search_stack import SearchStack
from rag_app.search.statement_links import StatementLink, StatementLinks, StatementView
from rag_app.serving.llm_connection import LLMConnection
from rag_app.settings import IngestionSettings, Settings
from retriever import SearchFilter, SearchHit, SearchMode, StatementIndex
from retriever.search.paper_searcher import PaperHit
from retriever.store.derived_stores import DuplicateGroupsStore
from retriever.store.duplicate_groups import rebuild as rebuild_duplicates
from retriever.text.query_notation import read_typed_notation
from retriever.types import Query, VectorUpdate, run_search

logger = logging.getLogger(__name__)


def latex_ingestor(ingestion: IngestionSettings) -> LatexIngestor | ParallelLatexIngestor:
    """The LaTeX parser ``ingest`` and ``ingest --parse-only`` use: in worker processes, each paper
    under the per-paper time limit, unless ``ingestion.isolate_papers`` is off."""
    if ingestion.isolate_papers:
        return ParallelLatexIngestor(ingestion.limits, ingestion.workers or os.cpu_count() or 1)
    return LatexIngestor(ingestion.limits)


def demo_corpus_path() -> Path:
    """The demo corpus of LaTeX papers shipped inside the package."""
    return Path(str(resources.files("rag_app") / "demo_corpus"))


class MathRAG:
    """The Python API: ingest, search, ask and the statement graph over one index. What it composes lives by
    job in the rooms below; the index's stores and search stack, opened once, are ``rag.indexes``."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.llm = LLMConnection(settings)  # the answering LLM's client and, if started here, its server
        self.indexes = OpenedIndex(settings, self.llm.client)
        self._answerer: _MadeAnswerer | None = None

    @classmethod
    def open(cls, index_dir: str | Path | None = None, settings: Settings | None = None) -> MathRAG:
        """The index in ``index_dir`` (else the configured one). Opening creates nothing: an ingest makes
        the directory; searching or asking an ``index_dir`` that holds no index raises
        :class:`IndexNotFoundError` (as the CLI's ``--index`` does), so a typo is not an empty index."""
        settings = settings or Settings.load()
        if index_dir is not None:
            settings = settings.with_overrides({"index_dir": Path(index_dir).expanduser()})
        rag = cls(settings)
        rag.indexes.must_exist = index_dir is not None
        return rag

    # ------------------------------------------------------------------ index
    @property
    def index(self) -> StatementIndex:
        """The index's stores. Opened by :meth:`open` on a directory that holds no index, reading it raises
        :class:`IndexNotFoundError` and creates nothing (a status on a mistyped path reports the missing index,
        not an empty one in a new directory); an ingest builds it."""
        return self.indexes.index

    @property
    def search_stack(self) -> SearchStack:
        """This index's searchers, composed from the settings once (see ``rag_app.search.search_stack``)."""
        return self.indexes.search_stack

    @property
    def statement_links(self) -> StatementLinks:
        return self.indexes.statement_links

    def build_companion(self, rebuild: bool = False, show_progress: bool = False) -> VectorUpdate:
        """Embed the statements the companion model's vectors lack (``rag-app build-dense2``)."""
        second = self.indexes.companion_index()
        if second is None:
            raise ValueError("the second embedding model is off (second_embedding.model = none)")
        return second.update(self.index.store.iter_records(), show_progress=show_progress, rebuild=rebuild)

    def rebuild_duplicates(self, show_progress: bool = False) -> int:
        """Recompute every duplicate group from the stored statements (an index ingested before groups
        existed, or after a change of threshold); returns how many statements joined a group."""
        store = self.index.store
        ids = sorted(store.all_ids())

        def batches() -> Iterator[tuple[list[StatementRecord], np.ndarray]]:
            for start in tqdm(range(0, len(ids), 1000), desc="duplicates", unit="batch", disable=not show_progress):
                records = store.get(ids[start : start + 1000])
                vectors = store.vectors([r.id for r in records])
                yield records, np.stack([vectors[r.id] for r in records])

        joined = rebuild_duplicates(self.indexes.duplicate_groups(), batches(), store)
        # An ingest running beside the rebuild may have written between the read of the ids and the
        # groups' clearing: its statements are caught up from the store, never dropped.
        groups = DuplicateGroupsStore(self.index, self.indexes.duplicate_groups())
        groups.catch_up(quick=False, show_progress=show_progress)
        return joined

    def ingest(self, paths: Iterable[str | Path], show_progress: bool = False) -> IngestReport:
        """Ingest LaTeX files, directories, archives and statement CSVs; problems are reported, not raised.

        Re-ingesting unchanged sources adds nothing; a changed paper's statements are replaced.
        """
        started = time.perf_counter()
        report = IngestReport()
        latex = latex_ingestor(self.settings.ingestion)
        with self.indexes.one_writer():
            writer = StatementWriter(self.index, self.settings.ingestion.batch_statements, show_progress=show_progress)
            papers = ingest_sources((Path(p).expanduser() for p in paths), latex)
            _write_papers(writer, tqdm(papers, desc="ingesting", unit="paper", disable=not show_progress), report)
        report.seconds = time.perf_counter() - started
        return report

    def ingest_demo(self, show_progress: bool = False) -> IngestReport:
        return self.ingest([demo_corpus_path()], show_progress)

    def ingest_arxiv_months(
        self,
        months: Sequence[str],
        source: str | Path,
        metadata: str | Path | None = None,
        show_progress: bool = False,
        on_cluster: Callable[[str], None] | None = None,
    ) -> Iterator[MonthReport]:
        """Ingest months of arXiv e-prints from ``source`` (bulk tars or per-paper files), yielding
        each month's report as it finishes (``ingest arxiv --month ... --json`` prints them): resumable,
        in parser processes or on the Dask cluster of ``ingestion.dask``. Nothing runs until iterated."""
        source, metadata = Path(source).expanduser(), Path(metadata).expanduser() if metadata else None
        for month in months:
            month_prefix(month)  # a malformed month fails before any work
        if not source.is_dir():
            raise NotADirectoryError(f"{source}: not a directory of arXiv e-prints")
        if metadata is not None and not metadata.is_file():
            raise FileNotFoundError(f"{metadata}: no such metadata file")
        with self.indexes.one_writer(), month_ingest(self.index, self.settings, metadata, on_cluster) as run:
            for month in months:
                yield run.run(month, source, show_progress)

    def ingest_arxiv_month(
        self, month: str, source: str | Path, metadata: str | Path | None = None, show_progress: bool = False
    ) -> MonthReport:
        """One month of arXiv e-prints (see :meth:`ingest_arxiv_months`)."""
        [report] = self.ingest_arxiv_months([month], source, metadata, show_progress)
        return report

    def ingest_mse(self, dump: str | Path, filters: MseFilters | None = None, show_progress: bool = False) -> MseReport:
        """Ingest a Math StackExchange ``Posts.xml`` (plain, ``.gz`` or ``.7z``) as a stream
        (``ingest mse ... --json`` prints the report)."""
        dump = Path(dump).expanduser()
        if not dump.is_file():
            raise FileNotFoundError(f"{dump}: no such file")
        with self.indexes.one_writer():
            return MseIngest(self.index, self.settings.ingestion.batch_statements).run(dump, filters, show_progress)

    def search(
        self,
        query: str,
        k: int | None = None,
        mode: SearchMode | str | None = None,
        where: SearchFilter | None = None,
        rerank: bool | None = None,
        second_embedding: bool | None = None,
        rewrite: bool | None = None,
    ) -> list[SearchHit]:
        """The best statements for ``query``; ``where`` restricts sources, kinds, categories or dates.

        ``rerank``: rescore the fused top N with the cross-encoder (unset: ``rerank.search``).
        ``second_embedding``: fuse in the second embedding model (unset: ``second_embedding.search``).
        ``rewrite``: fuse in the search of the LLM's statement rewrite (unset: ``retrieval.statement_rewrite``
        is ``always``).
        """
        query = check_readable(query, "the query")  # one bad character is the client's to mend, not a crash
        rerank = self.settings.rerank.search if rerank is None else rerank
        second = self.settings.second_embedding.search if second_embedding is None else second_embedding
        rewrite = self.settings.retrieval.statement_rewrite == "always" if rewrite is None else rewrite
        searcher = self.search_stack.statements(rerank=rerank, second_embedding=second, rewrite=rewrite)
        k, mode = k or self.settings.retrieval.top_k, mode or self.settings.retrieval.mode
        return self.indexes.counted(searcher.search(query, k, mode, where))

    def search_formula(self, formula: str, k: int | None = None, where: SearchFilter | None = None) -> list[SearchHit]:
        """Statements holding the formula, an equivalent one or a similar one (delimiters optional)."""
        formula = check_readable(formula, "the formula")
        k = k or self.settings.retrieval.top_k
        return self.indexes.counted(self.search_stack.statements().search(formula, k, SearchMode.FORMULA, where))

    def search_papers(
        self,
        query: str,
        k: int | None = None,
        where: SearchFilter | None = None,
        mode: SearchMode | str | None = None,
        formula: bool = False,
        rerank: bool | None = None,
    ) -> list[PaperHit]:
        """The papers (MSE: threads) whose statements best match ``query``, each with its best statements.

        ``formula``: the query is one formula (as :meth:`search_formula`). A filter that leaves nothing,
        or a formula found nowhere, gives an empty list.
        """
        query = check_readable(query, "the query")
        rerank = self.settings.rerank.search if rerank is None else rerank
        second = self.settings.second_embedding.search
        searcher = self.search_stack.papers(rerank=rerank, second_embedding=second)
        k = k or self.settings.retrieval.top_k
        return searcher.search(query, k, SearchMode.FORMULA if formula else mode or self.settings.retrieval.mode, where)

    # ------------------------------------------------------------------ answers
    def rewrite_query(self, question: str, history: Sequence[Turn] = ()) -> RewrittenQuery:
        """The retrieval query for ``question`` in a conversation (the question itself when there is none)."""
        conversation = self.settings.conversation
        rewriter = QueryRewriter(
            load_prompt("query_rewrite"),
            self.llm.client if conversation.rewrite_with_llm else None,
            conversation.max_turns,
            conversation.rewrite_max_tokens,
        )
        return rewriter.rewrite(question, history)

    def build_marf(self, rebuild: bool = False, show_progress: bool = False) -> VectorUpdate:
        """Embed the statements the MaRF vectors lack (``rag-app build-fusion``)."""
        return self.index.build_marf(rebuild=rebuild, show_progress=show_progress)

    def ask(
        self,
        question: str,
        k: int | None = None,
        mode: SearchMode | str | None = None,
        history: Sequence[Turn] = (),
        where: SearchFilter | None = None,
        rerank: bool | None = None,
        second_embedding: bool | None = None,
    ) -> Answer:
        return self.ask_stream(question, k, mode, history, where, rerank, second_embedding).result()

    def ask_stream(
        self,
        question: str,
        k: int | None = None,
        mode: SearchMode | str | None = None,
        history: Sequence[Turn] = (),
        where: SearchFilter | None = None,
        rerank: bool | None = None,
        second_embedding: bool | None = None,
    ) -> AnswerStream:
        """Retrieve, check that something relevant was found, then stream the LLM's answer.

        With ``history`` (the earlier turns of a conversation) the retrieval query is rewritten from it
        first. Nothing is generated when no source is similar enough to the question (the answer says
        so and the closest statements are kept). When the LLM is down, the answer says so and keeps the
        sources. After generation, citations are validated and each sentence is attributed to its sources.
        ``rerank``: rescore the sources with the cross-encoder (unset: ``rerank.answer``).
        ``second_embedding``: fuse in the second embedding model (unset: ``second_embedding.answer``).
        """
        started = time.perf_counter()
        question = check_readable(question, "the question")
        search = self.rewrite_query(question, history)
        calls = (ModelCall("query rewrite", (time.perf_counter() - started) * 1000),) if search.asked_llm else ()
        if self.settings.retrieval.typed_notation:
            # read here, not only inside the search, so that "searched for" shows the query searched
            search = dataclasses.replace(search, query=read_typed_notation(search.query))
        rerank = self.settings.rerank.answer if rerank is None else rerank
        second = self.settings.second_embedding.answer if second_embedding is None else second_embedding
        rewrite = self.settings.retrieval.statement_rewrite != "off"
        searcher = self.search_stack.statements(rerank=rerank, second_embedding=second, rewrite=rewrite)
        mode = mode or self.settings.retrieval.mode
        # unless k is asked for, as many as the model may read: answers.quote.max_sources above retrieval.top_k (a
        # deeper reading) would otherwise read only top_k of them
        answers = self.settings.answers
        reads = answers.quote.max_sources if answers.style == "quote" else answers.max_sources
        k = k or max(self.settings.retrieval.top_k, reads)
        # The next results come from this same search, as deep as it ranks its first k the same.
        depth = self.search_stack.stable_depth(
            mode, rerank=rerank, second_embedding=second, where=where, rewrite=rewrite
        )
        more = min(self.settings.retrieval.next_results, max(depth - k, 0))
        # one pass: the hits, their vectors and the question's embedding come back together
        notation_read = self.settings.retrieval.typed_notation  # read above: the search does not read it again
        result = run_search(searcher, Query(search.query, notation_read), k + more, mode, where)
        hits = self.indexes.counted(result.hits)  # each result shows what it uses and what uses it
        result, next_hits = result.with_hits(hits[:k]), tuple(hits[k:])
        filter_ = where.describe() if where is not None else "everything"
        retrieval = Retrieval(search, result, filter_, str(mode), calls, next_hits)
        asked = Question.read(question, search)  # read once: every stage after the search reads this record
        return self.answerer.stream(asked, retrieval, started)

    @property
    def answerer(self) -> Answerer:
        """The stages after the search (:mod:`rag_app.answering.answerer`), made once over this index's current
        embedder and statement graph (made again where a reindex swapped them); ``answerer.verdict`` is the verdict
        stage (``answers.verdict``; None where it is off)."""
        index = self.index
        made = self._answerer
        if made is None or made.embedder is not index.embedder or made.index is not index:
            links = self.statement_links
            # the verdict's cross-encoder is loaded once (by the first answer that reads it), whatever the index
            if made is not None:
                verdict = made.answerer.verdict
            else:
                verdict = VerdictStage.of(self.settings.answers.verdict, resolve_device(self.settings.embedding.device))
            answerer = Answerer(
                self.settings, index.embedder, self.indexes.stored_vectors, self.llm.client,
                lambda statement_id, limit: links.definition_records(statement_id, depth=1, limit=limit),
                links.citing_sentences, verdict,
            )  # fmt: skip
            made = self._answerer = _MadeAnswerer(answerer, index.embedder, index)
        return made.answerer

    # ------------------------------------------------------------------ the statement graph
    def statement(self, id_or_label: str, depth: int = 2) -> StatementView:
        """The statement an id or label names (``PAPER#LABEL``, a Stacks project label such as
        ``algebra-lemma-NAK``, or a label one paper defines), with what it ``uses`` (each resolved to a
        statement or section, or not), what it is ``used_by``, and the definitions it depends on up to
        ``depth`` (nearest first)."""
        id_or_label = check_readable(id_or_label, "the id or label")
        links = self.statement_links
        with self.index.reads.reading():  # not while a reload replaces the Chroma client
            return links.view(id_or_label, depth)

    def definitions_for(self, id_or_label: str, depth: int = 2) -> list[StatementLink]:
        """The definitions a statement depends on: those it references, then through the statements it
        references, up to ``depth``; nearest first."""
        return self.statement_links.definitions_for(id_or_label, depth)

    # ------------------------------------------------------------------ LLM: ``rag.llm`` (client, status, health)
    def close(self) -> None:
        """Stop the LLM server if this object started it."""
        self.llm.close()

    def __enter__(self) -> MathRAG:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


@dataclasses.dataclass(frozen=True, slots=True)
class _MadeAnswerer:
    """The answerer, and the index and embedder it was made over."""

    answerer: Answerer
    embedder: object
    index: StatementIndex


def _write_papers(writer: StatementWriter, papers: Iterable[PaperStatements], report: IngestReport) -> None:
    """Each parsed paper's statements to ``writer`` (in batches), its problems and counts to ``report``."""
    for paper in papers:
        report.problems.extend(paper.problems)
        if not paper.records:
            continue
        report.papers += 1
        report.statements += len(paper.records)
        report.references += paper.references
        report.unresolved_references += paper.unresolved_references
        report.citations += paper.citations
        report.arxiv_citations += paper.arxiv_citations
        writer.add(PendingPaper(paper.paper_id, paper.records))
    written = writer.finish()
    report.added, report.unchanged, report.removed = written.added, written.unchanged, written.removed
    report.updated = written.updated
