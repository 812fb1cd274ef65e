"""A slow second model's vectors built in the background (`second_embedding.at_ingest = false`): ingest
leaves them, `build-dense2 --background` embeds them detached and niced, `status` counts what is left."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rag_app.cli import app
from rag_app.pipeline import demo_corpus_path

# A background process and two ingests (about 30 s): out of the fast tier; tests/retriever/store/
# test_companion_index.py covers the same rules in a unit test.
pytestmark = pytest.mark.slow
runner = CliRunner()


def test_ingest_leaves_the_vectors_and_a_background_build_catches_up(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    for paper in ("complex-analysis", "finite-groups"):
        shutil.copytree(demo_corpus_path() / paper, corpus / paper)
    index = tmp_path / "index"
    env = {
        "RAG_APP_DATA_DIR": str(tmp_path / "data"),
        # the packaged MiniLM reading LaTeX: another identity than the first model's, and fast
        "RAG_APP_SECOND_EMBEDDING__MODEL": "packaged:all-MiniLM-L6-v2",
        "RAG_APP_SECOND_EMBEDDING__AT_INGEST": "false",
        "RAG_APP_INGESTION__ISOLATE_PAPERS": "false",
    }
    ingested = runner.invoke(app, ["ingest", str(corpus), "--index", str(index), "--json"], env=env)
    assert ingested.exit_code == 0, ingested.output
    assert not (index / "dense2" / "manifest.json").exists()  # nothing embedded by the second model

    started = runner.invoke(app, ["build-dense2", "--index", str(index), "--background", "--json"],
                            env={**env, "PATH": os.environ["PATH"]})  # fmt: skip
    assert started.exit_code == 0, started.output
    job = json.loads(started.stdout.strip().splitlines()[-1])
    assert job["background"] is True and Path(job["log"]) == index / "dense2" / "build.log"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:  # the detached build is this process's child: wait for it
        try:
            if os.waitpid(job["pid"], os.WNOHANG)[0]:
                break
        except ChildProcessError:  # reaped already
            break
        time.sleep(0.5)
    log = Path(job["log"]).read_text()
    assert "second-model vectors" in log, log

    status = runner.invoke(app, ["status", "--index", str(index), "--json"], env=env)
    assert status.exit_code == 0, status.output
    stores = {store["store"]: store for store in json.loads(status.stdout)["stores"]}
    second = stores["second model's vectors"]
    assert second["statements"] == stores["chroma"]["statements"] > 0 and second["missing"] == 0
    assert second["in_background"] is True

    # A new paper: ingest leaves its statements to the next background build, and status says so (exit 0).
    shutil.copytree(demo_corpus_path() / "galois-theory", corpus / "galois-theory")
    again = runner.invoke(app, ["ingest", str(corpus), "--index", str(index), "--json"], env=env)
    assert again.exit_code == 0, again.output
    status = runner.invoke(app, ["status", "--index", str(index)], env=env)
    assert status.exit_code == 0, status.output
    assert "second model's vectors: built in the background" in status.output
    assert "to embed: `rag-app build-dense2 --background`" in status.output
