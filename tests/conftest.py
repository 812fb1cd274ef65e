"""Shared fixtures: a demo-corpus index built once, and a real llama.cpp server on loopback."""

from __future__ import annotations

import os
import shutil

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

from collections.abc import Iterator
from pathlib import Path

import pytest

from rag_app import MathRAG, Settings
from rag_app.pipeline import demo_corpus_path
from rag_app.serving.llm_server import LLMServerProcess
from tests.llm_servers import TEST_CHAT_MODEL, make_test_server

__all__ = ["TEST_CHAT_MODEL", "make_settings"]

SHARED = Path(__file__).resolve().parents[2] / "shared"
# Fixtures that start the real local LLM server: a test using one is an `llm` test, marked or not.
LLM_FIXTURES = frozenset({"llm_server", "demo_rag"})


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The test tiers (README, "Tests"): `-m "not slow and not llm"` is the fast tier, for a change's
    first check; the default run, CI's, runs everything."""
    for item in items:
        if LLM_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.llm)


@pytest.fixture(autouse=True)
def _isolated_settings(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    """No test reads the developer's own settings file, environment or data directory."""
    for name in list(os.environ):
        if name.startswith("RAG_APP_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("RAG_APP_DATA_DIR", str(tmp_path_factory.getbasetemp() / "default-data"))
    # The query encoder exported for ONNX Runtime once per run, not once per test (about 2 s each)
    monkeypatch.setenv("RAG_APP_EMBEDDING__ONNX_DIR", str(tmp_path_factory.getbasetemp() / "onnx"))
    # `ingest` run in-process (CliRunner) would lower the test process's own priority for good.
    monkeypatch.setenv("RAG_APP_INGESTION__NICE", "0")
    monkeypatch.chdir(tmp_path_factory.getbasetemp())


def make_settings(tmp: Path, **overrides: object) -> Settings:
    # Papers parsed in this process: a worker pool costs seconds per ingest call, and
    # tests/rag_app/test_pipeline.py covers the isolated (default) path.
    # The tests of written answers (citations, attribution, the statement check) ask for them: the
    # default quoting answer has its own tests (tests/rag_app/test_quoted_answer*.py).
    values: dict[str, object] = {
        "data_dir": tmp / "data",
        "index_dir": tmp / "index",
        "ingestion": {"isolate_papers": False},
    }
    answers = overrides.pop("answers", {})
    values.update(overrides)
    values["answers"] = {"style": "synthesis", **answers}  # type: ignore[dict-item]
    return Settings(**values)


@pytest.fixture(scope="session")
def demo_index_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An index of the shipped demo corpus, built once per session. Tests must not modify it."""
    base = tmp_path_factory.mktemp("demo")
    rag = MathRAG(make_settings(base))
    report = rag.ingest_demo()
    assert report.errors == [], report.problems
    return base / "index"


@pytest.fixture(scope="session")
def demo_with_copy_index_dir(demo_index_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo index plus a renamed copy of one demo paper (a restated set of notes). Read-only too."""
    base = tmp_path_factory.mktemp("demo-copy")
    shutil.copytree(demo_index_dir, base / "index")
    copy = base / "papers" / "holomorphic-notes"
    copy.mkdir(parents=True)
    main = (demo_corpus_path() / "complex-analysis" / "main.tex").read_text()
    renamed = main.replace("\\title{Holomorphic Functions in One Variable}", "\\title{Notes on Holomorphy}")
    assert renamed != main
    (copy / "main.tex").write_text(renamed)
    report = MathRAG(make_settings(base)).ingest([copy])
    assert report.errors == [] and report.added > 0, report.problems
    return base / "index"


@pytest.fixture(scope="session")
def llm_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LLMServerProcess]:
    """A real OpenAI-compatible server with a packaged model on 127.0.0.1 (llama.cpp; vLLM when configured)."""
    server = make_test_server(tmp_path_factory.mktemp("llm"))
    server.start()
    yield server
    server.stop()


@pytest.fixture
def demo_rag(demo_index_dir: Path, tmp_path: Path, llm_server: LLMServerProcess) -> Iterator[MathRAG]:
    """MathRAG over the demo index, answering with the test server (short answers)."""
    settings = make_settings(tmp_path, index_dir=demo_index_dir)
    settings.llm.base_url = llm_server.base_url
    settings.llm.max_tokens = 48
    settings.llm.retries = 0
    with MathRAG(settings) as rag:
        yield rag


# Statements and made-up query words the tiny reranker is trained to connect (no base model knows them).
RERANK_FIXTURE_DOCS = (
    "Lemma. Every finite module over a ring has a filtration whose successive quotients are cyclic.",
    "Lemma. Directed colimits of modules are exact.",
    "Definition. A ring is Noetherian if every ideal is finitely generated.",
    "Theorem. The spectrum of a ring is quasi-compact.",
    "Lemma. Flat base change preserves the cohomology of quasi-coherent sheaves.",
)
RERANK_FIXTURE_QUERIES = {"zorblax quimby": 3, "flindertap": 1}  # query -> the statement it is trained to find


@pytest.fixture(scope="session")
def tiny_reranker_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A reranker trained for a few steps on the fixture above (a real `train rerank` adapter and card)."""
    from rag_app.settings import RerankTrainingSettings
    from rag_app.training.reranker_trainer import RerankerTrainer, RerankExample
    from rag_app.training.train_rerank import write_reranker
    from retriever.models.cross_encoder_reranker import KIND
    from retriever.models.embedding_registry import resolve_embedder

    docs = RERANK_FIXTURE_DOCS
    examples = []
    for query, gold in RERANK_FIXTURE_QUERIES.items():
        others = [d for i, d in enumerate(docs) if i != gold]
        examples += [RerankExample(query, (docs[gold], *others[:2])), RerankExample(query, (docs[gold], *others[2:]))]
    settings = RerankTrainingSettings(
        batch_size=2, max_steps=30, checkpoint_steps=10, learning_rate=3e-3, max_length=64, warmup_ratio=0.0
    )
    work = tmp_path_factory.mktemp("tiny-reranker")
    base = resolve_embedder("packaged:all-MiniLM-L6-v2", None).model_path
    run = RerankerTrainer(settings, base).train(examples, work)
    card = {"kind": KIND, "base_model": "packaged:all-MiniLM-L6-v2", "identity": "tiny-test-reranker",
            "training": settings.model_dump(mode="json")}  # fmt: skip
    return write_reranker(work / "model", run.adapter_dir, card)
