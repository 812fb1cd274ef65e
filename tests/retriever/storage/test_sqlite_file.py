"""The derived stores' SQLite files: a read connection kept per thread, and never one to a file that is gone."""

from __future__ import annotations

import os
import sqlite3
import threading
from contextlib import closing
from pathlib import Path

import pytest

from retriever.storage import sqlite_file
from retriever.storage.sqlite_file import ReadConnections, connect


def write_store(path: Path, *values: str) -> None:
    with closing(connect(path)) as db, db:
        db.execute("CREATE TABLE IF NOT EXISTS item (value TEXT)")
        db.executemany("INSERT INTO item VALUES (?)", [(value,) for value in values])


def read_store(reads: ReadConnections) -> list[str]:
    with reads.reading() as db:
        return sorted(row[0] for row in db.execute("SELECT value FROM item"))


def test_a_thread_reads_on_one_kept_connection_and_sees_every_commit(tmp_path: Path, monkeypatch) -> None:
    path = tmp_path / "store.sqlite"
    write_store(path, "a")
    opened: list[Path] = []
    real_connect = sqlite_file.connect
    monkeypatch.setattr(sqlite_file, "connect", lambda p: opened.append(p) or real_connect(p))
    reads = ReadConnections(path)
    assert read_store(reads) == ["a"]
    write_store(path, "b")  # another writer commits between two reads (WAL: the next read sees it)
    assert read_store(reads) == ["a", "b"]
    assert read_store(reads) == ["a", "b"]
    assert len(opened) == 1
    # another thread gets its own connection: sqlite3 connections belong to the thread that made them
    seen: list[list[str]] = []
    thread = threading.Thread(target=lambda: seen.append(read_store(reads)))
    thread.start()
    thread.join()
    assert seen == [["a", "b"]] and len(opened) == 2


def test_a_kept_connection_never_reads_a_file_removed_rebuilt_or_replaced(tmp_path: Path) -> None:
    path = tmp_path / "store.sqlite"
    write_store(path, "old")
    reads = ReadConnections(path)
    assert read_store(reads) == ["old"]
    # removed with its -wal and -shm and built again (`rag-app repair`)
    sqlite_file.remove_damaged(path)
    write_store(path, "rebuilt")
    assert read_store(reads) == ["rebuilt"]
    # another process writes a new file beside and renames it over this one
    other = tmp_path / "other.sqlite"
    write_store(other, "replaced")
    with closing(sqlite3.connect(other)) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    os.replace(other, path)
    for suffix in ("-wal", "-shm"):
        Path(f"{other}{suffix}").unlink(missing_ok=True)
    assert read_store(reads) == ["replaced"]


def test_an_error_drops_the_kept_connection(tmp_path: Path) -> None:
    path = tmp_path / "store.sqlite"
    write_store(path, "a")
    reads = ReadConnections(path)
    with pytest.raises(sqlite3.OperationalError), reads.reading() as db:
        db.execute("SELECT nothing FROM nowhere")
    with reads.reading() as again:
        assert again is not db
        assert again.execute("SELECT COUNT(*) FROM item").fetchone() == (1,)


def test_every_sqlite_file_of_the_index_is_opened_by_one_setup(tmp_path: Path) -> None:
    """Issue 93: the set-up (WAL, the busy wait) was written again in the BM25 catalogue and the paper manifest;
    ``connect`` is the one place, with what those two need (one connection shared by threads, durable commits)."""
    import ast
    import threading

    retriever_dir = Path(sqlite_file.__file__).resolve().parents[1]
    opened_elsewhere = [
        f"{file.relative_to(retriever_dir)}:{node.lineno}"
        for file in retriever_dir.rglob("*.py")
        if file.name != "sqlite_file.py"
        for node in ast.walk(ast.parse(file.read_text()))
        if isinstance(node, ast.Call)
        and ast.unparse(node.func) == "sqlite3.connect"
        and not (node.args and ast.unparse(node.args[0]) == "':memory:'")
    ]
    assert opened_elsewhere == []
    durable = sqlite_file.connect(tmp_path / "durable.sqlite", durable=True)
    assert durable.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
    assert durable.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    shared = sqlite_file.connect(tmp_path / "shared.sqlite", shared_by_threads=True)
    answers: list[int] = []
    thread = threading.Thread(target=lambda: answers.append(shared.execute("SELECT 1").fetchone()[0]))
    thread.start()
    thread.join()
    assert answers == [1]


def test_the_derived_sqlite_stores_share_one_setup() -> None:
    """Issue 93: open, read per thread and recreate-when-damaged were written out in three stores."""
    import ast

    from retriever.storage.statement_graph import StatementGraph
    from retriever.store.duplicate_groups import DuplicateGroups
    from retriever.store.ranking_profiles import RankingProfiles

    stores = (StatementGraph, DuplicateGroups, RankingProfiles)
    assert all(issubclass(store, sqlite_file.SqliteStore) for store in stores)
    retriever_dir = Path(sqlite_file.__file__).resolve().parents[1]
    written_again = [
        f"{file.relative_to(retriever_dir)}:{node.lineno}"
        for file in retriever_dir.rglob("*.py")
        if file.name != "sqlite_file.py"
        for node in ast.walk(ast.parse(file.read_text()))
        if isinstance(node, ast.Call) and ast.unparse(node.func) == "ReadConnections"
    ]
    assert written_again == [], "a store opens its own reads: make it a SqliteStore"
