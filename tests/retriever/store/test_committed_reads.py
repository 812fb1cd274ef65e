"""Readers in other processes see complete writes only (issue 99): the commit log and the generation they pin.

The fast test forces the window: a writer in another process has put a batch in Chroma, BM25, the statement graph
and the ranking profiles, and is held before its commit; a reader opened then (a new CLI process) lists ids Chroma
already has and whose vectors its own copy of the vector index lacks. Its searches must neither fail nor return
that batch; once the writer commits, the next search returns it.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest
from chromadb.api.client import SharedSystemClient

from ingestion.records import Source, StatementKind, StatementRecord, statement_id
from retriever import SearchMode, StatementIndex
from retriever.storage.commit_log import CommitLog
from tests.embedders import HashingEmbedder
from tests.searchers import first_stage

ROOT = Path(__file__).resolve().parents[3]
TOPICS = ["compact Hausdorff space", "Sylow subgroup of a finite group", "bounded entire function",
          "Noetherian local ring", "spanning tree of a graph"]  # fmt: skip


def records(paper: str, count: int) -> list[StatementRecord]:
    found = []
    for number in range(count):
        text = f"Lemma {number} of {paper}: every {TOPICS[number % len(TOPICS)]} has property {paper}{number}."
        found.append(StatementRecord(statement_id("local", paper, "lemma", text), Source.LOCAL, StatementKind.LEMMA,
                                     text, paper))  # fmt: skip
    return found


WRITER = """
import sys, time
from pathlib import Path
from retriever import StatementIndex
from retriever.store.derived_stores import RankingProfilesStore
from tests.embedders import HashingEmbedder
from tests.retriever.store.test_committed_reads import records

directory, ready, go = map(Path, sys.argv[1:4])
original = RankingProfilesStore.add

def add_then_wait(self, batch, vectors):  # the last store before the commit: the window a reader must not see
    original(self, batch, vectors)
    ready.touch()
    deadline = time.monotonic() + 120
    while not go.exists() and time.monotonic() < deadline:
        time.sleep(0.05)

RankingProfilesStore.add = add_then_wait
StatementIndex(directory, HashingEmbedder()).add(records("late", 40))
"""


def _wait_for(path: Path, writer: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 120
    while not path.exists():
        assert writer.poll() is None, writer.communicate()
        assert time.monotonic() < deadline, "the writer never reached its window"
        time.sleep(0.05)


@pytest.mark.parametrize("mode", [SearchMode.DENSE, SearchMode.BM25, SearchMode.HYBRID])
def test_a_reader_opened_mid_write_sees_neither_an_error_nor_the_unfinished_batch(
    tmp_path: Path, mode: SearchMode
) -> None:
    directory = tmp_path / "index"
    seed = records("seed", 30)
    StatementIndex(directory, HashingEmbedder()).add(seed)
    SharedSystemClient.clear_system_cache()  # from here on this process reads as a new one would
    ready, go = tmp_path / "ready", tmp_path / "go"
    writer = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(WRITER), str(directory), str(ready), str(go)],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        _wait_for(ready, writer)
        reader = StatementIndex(directory, HashingEmbedder())  # opened in the window, as a CLI search would be
        assert reader.store.count() == 70, "the batch is in Chroma already: the window is real"
        searcher = first_stage(reader)
        seen: set[str] = set()
        for topic in TOPICS:
            seen |= {hit.record.id for hit in searcher.search(f"every {topic} has property", 50, mode)}
        assert seen and seen <= {record.id for record in seed}, "a search returned a statement of the unfinished write"
    finally:
        go.touch()
        _out, errors = writer.communicate(timeout=120)
    assert writer.returncode == 0, errors
    after = {hit.record.id for hit in searcher.search("every compact Hausdorff space has property late", 50, mode)}
    assert after & {record.id for record in records("late", 40)}, "the committed batch is searched at once"


def test_a_reader_pinned_at_a_generation_sees_its_statements_and_vectors_only(tmp_path: Path) -> None:
    log = CommitLog(tmp_path)
    vectors = np.eye(4, dtype=np.float32)
    first = log.commit(["a", "b"], vectors[:2])
    second = log.commit(["c"], vectors[2:3], removed_ids=["a"])
    third = log.commit(["b"], vectors[3:4])  # b written again (a renamed theorem): its new vector from here on
    assert (first, second, third) == (1, 2, 3) == (1, 2, log.generation())
    assert log.visible(["a", "b", "c"], first) == {"a", "b"}
    assert log.visible(["a", "b", "c"], second) == {"b", "c"}
    ids, matrix = log.vectors_at(second)  # type: ignore[misc]
    assert ids == ["b", "c"] and np.array_equal(matrix, vectors[1:3])
    ids, matrix = log.vectors_at(third)  # type: ignore[misc]
    assert ids == ["b", "c"] and np.array_equal(matrix, vectors[[3, 2]])
    assert log.ids() == {"b", "c"} and log.count() == 2
    log.commit(["d"], None)  # the index outgrew the exact search: no vector kept
    assert log.vectors_at(log.generation()) is None and log.vectors_at(third) is not None


def test_a_write_killed_before_its_commit_is_committed_by_the_next_reader_when_no_writer_is_at_work(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    directory = tmp_path / "index"
    index = StatementIndex(directory, HashingEmbedder())
    index.add(records("seed", 5))
    monkeypatch.setattr(CommitLog, "commit", lambda *_args, **_kwargs: pytest.fail("killed"))
    with pytest.raises(pytest.fail.Exception):
        index.add(records("late", 5))
    monkeypatch.undo()
    reopened = StatementIndex(directory, HashingEmbedder())
    assert reopened.commits.log.count() == 5 and reopened.count() == 10
    hits = first_stage(reopened).search("every compact Hausdorff space has property late0", 3, SearchMode.BM25)
    assert hits[0].record.paper_id == "late", "the first search caught the commit log up"
    assert reopened.commits.log.count() == 10 and reopened.commits.pinned == reopened.commits.log.generation()


def test_an_index_made_before_the_commit_log_is_caught_up_and_searched_exactly(tmp_path: Path) -> None:
    directory = tmp_path / "index"
    StatementIndex(directory, HashingEmbedder()).add(records("seed", 12))
    for suffix in ("", "-wal", "-shm"):  # what an older version left: no commit log, no generation
        (directory / f"committed.sqlite{suffix}").unlink(missing_ok=True)
    manifest = directory / "manifest.json"
    manifest.write_text(manifest.read_text().replace('"generation"', '"older_field"'))
    SharedSystemClient.clear_system_cache()
    reader = StatementIndex(directory, HashingEmbedder())
    assert reader.commits.pinned is None
    hits = first_stage(reader).search("every Noetherian local ring has property", 5, SearchMode.DENSE)
    assert len(hits) == 5 and reader.commits.pinned == 1 and reader.commits.log.count() == 12
