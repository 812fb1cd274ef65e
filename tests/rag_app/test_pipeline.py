"""MathRAG end to end: real Chroma on disk, real embedder, real llama.cpp server on loopback."""

from __future__ import annotations

import asyncio
import gzip
import shutil
from pathlib import Path

import pytest

from rag_app import MathRAG
from rag_app.answering.answer import AnswerStatus
from rag_app.pipeline import demo_corpus_path
from rag_app.serving.llm_server import LLMServerProcess
from tests.conftest import TEST_CHAT_MODEL, make_settings
from tests.llm_servers import MalformedServer


def test_demo_search_finds_the_named_theorem(demo_rag: MathRAG) -> None:
    cases = {
        "bounded entire function is constant": "Liouville",
        "order of a subgroup divides the order of the group": "Lagrange",
        "IM = M finitely generated module Jacobson radical": "Nakayama's lemma",
        "sum of the reciprocals of the primes diverges": "Mertens",
        "matching covering one side of a bipartite graph": "Hall's marriage theorem",
    }
    for query, name in cases.items():
        hits = demo_rag.search(query, k=3)
        assert name in [hit.record.name for hit in hits], (query, [h.record.name for h in hits])


def test_ask_streams_an_answer_from_the_real_server(demo_rag: MathRAG) -> None:
    stream = demo_rag.ask_stream("What does Liouville's theorem say about bounded entire functions?", k=3)
    assert any(hit.record.name == "Liouville" for hit in stream.sources)  # known before generation
    chunks = list(stream)
    answer = stream.result()
    assert len(chunks) > 1 and answer.text.strip()
    assert answer.llm_error is None and answer.model == TEST_CHAT_MODEL
    assert all(1 <= n <= len(answer.sources) for n in answer.cited)


def test_llm_down_answer_says_so_and_keeps_the_sources(demo_index_dir: Path, tmp_path: Path) -> None:
    settings = make_settings(tmp_path, index_dir=demo_index_dir)
    settings.llm.base_url = "http://127.0.0.1:9/v1"
    settings.llm.retries = 0
    answer = MathRAG(settings).ask("What is the class equation?")
    assert answer.llm_error and "not available" in answer.text
    assert answer.sources and answer.sources[0].record.paper_id == "finite-groups"


def test_ask_searches_once_reads_the_store_once_and_embeds_the_question_once(
    demo_index_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = make_settings(tmp_path, index_dir=demo_index_dir)
    settings.llm.base_url, settings.llm.retries = "http://127.0.0.1:9/v1", 0  # the answer stops at the sources
    rag = MathRAG(settings)
    calls: list[str] = []

    def counted(owner: object, name: str) -> None:
        method = getattr(owner, name)
        monkeypatch.setattr(owner, name, lambda *args, **kwargs: calls.append(name) or method(*args, **kwargs))

    counted(rag.index.embedder, "embed_query")
    for name in ("get", "vectors", "get_with_vectors"):
        counted(rag.index.store, name)
    counted(rag.search_stack.first_stage(), "run")
    answer = rag.ask("What is the class equation?", k=3)
    assert answer.sources and answer.relevance is not None and answer.relevance >= answer.relevance_threshold
    # one search; the hits' records and vectors in one read; the relevance check reads the search's embedding
    assert sorted(calls) == ["embed_query", "get_with_vectors", "run"]
    assert answer.to_dict()["reranker"] == "" and answer.to_dict()["second_embedding"] == ""
    # where no channel embeds the question (BM25 alone), the relevance check embeds it: once
    calls.clear()
    rag.ask("What is the class equation?", k=3, mode="bm25")
    assert sorted(calls) == ["embed_query", "get_with_vectors", "run"]


@pytest.mark.parametrize(
    ("html_models", "html_reply"), [(True, False), (False, False), (False, True)],
    ids=["models-as-html", "stream-not-json", "reply-an-html-page"],
)  # fmt: skip
def test_a_malformed_llm_reply_says_so_and_keeps_the_sources(
    demo_index_dir: Path, tmp_path: Path, html_models: bool, html_reply: bool
) -> None:
    server = MalformedServer(html_models, html_reply)
    try:
        settings = make_settings(tmp_path, index_dir=demo_index_dir)
        settings.llm.base_url, settings.llm.retries = server.url, 0
        settings.answers.quote.ranker_sure_margin = None  # the model is asked (a clear lead would skip it)
        settings.answers.quote.chooser = "none"  # the model's way of choosing: the quote needs the model
        expected = "not an OpenAI-compatible" if html_models else "malformed answer"
        if html_reply:  # issue 62, defect 5: a JSONDecodeError traceback; now what the server sent
            expected = "502 Bad Gateway"
        for style in ("synthesis", "quote"):
            settings.answers.style = style
            answer = MathRAG(settings).ask("What is the class equation?")
            assert answer.status is AnswerStatus.LLM_UNAVAILABLE, (style, answer.text)
            assert answer.llm_error and expected in answer.llm_error and server.url in answer.llm_error
            assert answer.sources and answer.sources[0].record.paper_id == "finite-groups"
        # the learned chooser's quote needs no model: it stands (where the chooser was unsure enough to ask the model,
        # the record says why nothing was added)
        settings.answers.quote.chooser = "packaged"
        chosen = MathRAG(settings).ask("What is the class equation?")
        assert chosen.status is AnswerStatus.ANSWERED and chosen.llm_error is None, chosen.text
        shown = chosen.generation.shown_first
        assert shown is None or expected in shown.notice
    finally:
        server.close()


@pytest.mark.slow
def test_ingest_is_idempotent_and_replaces_a_changed_paper(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    shutil.copytree(demo_corpus_path() / "galois-theory", corpus / "galois-theory")
    shutil.copytree(demo_corpus_path() / "graph-theory", corpus / "graph-theory")
    rag = MathRAG(make_settings(tmp_path, ingestion={"isolate_papers": True, "workers": 2}))  # the default path
    first = rag.ingest([corpus])
    assert first.papers == 2 and first.added == first.statements == rag.index.count()
    second = rag.ingest([corpus])
    assert (second.added, second.removed, second.unchanged) == (0, 0, first.statements)
    assert rag.index.count() == first.statements
    main = corpus / "galois-theory" / "main.tex"
    main.write_text(main.read_text().replace("is simple: $L = K(\\alpha)$", "is generated by one element"))
    third = rag.ingest([corpus / "galois-theory"])
    assert (third.added, third.removed) == (1, 1)
    assert rag.index.count() == first.statements
    hit = rag.search("primitive element generated by one element", k=1, mode="bm25")[0]
    assert "generated by one element" in hit.record.text

    # only a name and a label change: the statement keeps its id, and shows (and is found by) the new ones
    main.write_text(main.read_text().replace("[Tower law]\\label{thm:tower}", "[Degree formula]\\label{thm:degrees}"))
    fourth = rag.ingest([corpus / "galois-theory"])
    assert (fourth.added, fourth.updated, fourth.removed) == (0, 1, 0) and rag.index.count() == first.statements
    names = {r.label: r.name for r in rag.index.store.iter_records() if r.paper_id == "galois-theory"}
    assert names.get("thm:degrees") == "Degree formula" and "thm:tower" not in names
    assert any(h.record.label == "thm:degrees" for h in rag.search("degree formula tower", k=5, mode="bm25"))


def test_bad_input_is_reported_and_the_rest_is_ingested(tmp_path: Path) -> None:
    unreadable = tmp_path / "garbage.tex"
    unreadable.write_bytes(b"\x00\xff\x00")
    no_statements = tmp_path / "notes.tex"
    no_statements.write_text("\\begin{document}Just prose.\\end{document}")
    rag = MathRAG(make_settings(tmp_path))
    report = rag.ingest([unreadable, no_statements, demo_corpus_path() / "markov-chains"])
    # A file without statements is a note, not an error (issue 48): only the unreadable one was refused.
    assert {p.path for p in report.errors} == {str(unreadable)}
    assert [p.path for p in report.no_statements] == [str(no_statements)]
    assert report.papers == 1 and rag.index.count() == report.statements > 10


@pytest.mark.llm
def test_local_server_is_started_when_needed_and_stopped_on_close(demo_index_dir: Path, tmp_path: Path) -> None:
    settings = make_settings(tmp_path, index_dir=demo_index_dir)
    settings.llm.local_model = TEST_CHAT_MODEL
    settings.llm.max_tokens = 16
    rag = MathRAG(settings)
    answer = rag.ask("What is a Markov chain?", k=2)
    assert answer.llm_error is None and answer.text
    server: LLMServerProcess | None = rag.llm.server
    assert server is not None and server.running and server.host == "127.0.0.1"
    rag.close()
    assert not server.running


def test_a_paper_over_the_time_limit_is_reported_and_the_others_ingested(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    shutil.copytree(demo_corpus_path() / "galois-theory", corpus / "galois-theory")
    lemmas = "".join(f"\\begin{{lemma}} Claim ${i} + {i} = {2 * i}$ holds. \\end{{lemma}}" for i in range(8000))
    huge = corpus / "huge.tex"
    huge.write_text(
        f"\\documentclass{{article}}\\newtheorem{{lemma}}{{Lemma}}\\begin{{document}}{lemmas}\\end{{document}}"
    )
    settings = make_settings(tmp_path, ingestion={"isolate_papers": True, "limits": {"paper_timeout_s": 0.3}})
    report = MathRAG(settings).ingest([corpus])
    assert report.papers == 1 and report.statements > 5
    assert [(p.path, p.reason) for p in report.errors] == [(str(huge), "parsing took longer than 0.3 s")]


def test_a_new_arxiv_version_replaces_the_old_one_and_is_not_its_duplicate(tmp_path: Path) -> None:
    def paper(version: str, word: str) -> Path:
        path = tmp_path / version / f"2501.00001{version}.gz"  # an e-print: the name gives id and version
        path.parent.mkdir()
        latex = (
            "\\documentclass{article}\\newtheorem{theorem}{Theorem}\\begin{document}"
            "\\begin{theorem}Every compact metric space is complete.\\end{theorem}"
            f"\\begin{{theorem}}Every {word} subgroup of a cyclic group is cyclic.\\end{{theorem}}\\end{{document}}"
        )
        path.write_bytes(gzip.compress(latex.encode()))
        return path

    rag = MathRAG(make_settings(tmp_path))
    assert rag.ingest([paper("v1", "proper")]).added == 2
    second = rag.ingest([paper("v2", "nontrivial")])
    assert (second.added, second.removed) == (1, 1) and rag.index.count() == 2
    assert list(rag.indexes.duplicate_groups().groups()) == [] and rag.indexes.duplicate_groups().count() == 2
    hits = rag.search("subgroup of a cyclic group", k=2)
    assert "nontrivial" in hits[0].record.text and all(hit.duplicates == () for hit in hits)


@pytest.mark.slow
def test_ingest_embeds_and_commits_in_batches_of_ingestion_batch_statements(tmp_path: Path) -> None:
    # Issue 39, point 3: the pipeline's flush size is the setting, not a constant of its own.
    def add_calls(batch: int, where: Path) -> list[int]:
        rag = MathRAG(make_settings(where, ingestion={"isolate_papers": False, "batch_statements": batch}))
        sizes: list[int] = []
        add = rag.index.add

        def counting_add(records, *args, **kwargs):
            sizes.append(len(records))
            return add(records, *args, **kwargs)

        rag.index.add = counting_add
        rag.ingest_demo()
        return sizes

    one_batch = add_calls(10_000, tmp_path / "one")
    per_paper = add_calls(1, tmp_path / "each")
    assert len(one_batch) == 1 and len(per_paper) == 16 and sum(per_paper) == sum(one_batch) == 246


def test_opening_a_mistyped_index_creates_nothing_and_searching_it_says_so(
    demo_index_dir: Path, tmp_path: Path
) -> None:
    """``MathRAG.open("typo")`` created directories and answered "no statements"; only the CLI guarded it."""
    from rag_app.api.serving_backend import ServingBackend
    from retriever.store.statement_index import IndexNotFoundError

    settings = make_settings(tmp_path)
    typo = tmp_path / "mtah-index"
    rag = MathRAG.open(typo, settings)
    with pytest.raises(IndexNotFoundError, match=r"mtah-index does not exist; MathRAG\.open"):
        rag.search("Nakayama")
    with pytest.raises(IndexNotFoundError):
        rag.ask("What is Nakayama's lemma?")
    # Issue 86: `rag.index` and `duplicate_groups()` made the directory, so a status read an empty index.
    with pytest.raises(IndexNotFoundError):
        rag.index  # noqa: B018 - reading the property is the test
    with pytest.raises(IndexNotFoundError):
        rag.indexes.duplicate_groups()
    with pytest.raises(IndexNotFoundError):
        asyncio.run(ServingBackend(rag).status())
    assert not typo.exists()
    with MathRAG.open(demo_index_dir, settings) as opened:  # an index there: searched as before
        assert opened.search("Cauchy integral formula", k=1)[0].record.name == "Cauchy's integral formula"
    new = MathRAG.open(tmp_path / "new-index", settings)  # a new index is made by ingesting into it
    report = new.ingest([demo_corpus_path() / "complex-analysis"])
    assert report.statements > 0 and new.search("Cauchy integral formula", k=1)
