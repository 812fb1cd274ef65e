"""Every derived store in step with Chroma: crash windows, a rebuild beside a writer, damaged files.

The crash windows are injected in the process (the write stops where a kill -9 would stop it);
tests/rag_app/test_arxiv_month.py kills a real ingest with SIGKILL.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rag_app import MathRAG
from rag_app.cli import app
from rag_app.pipeline import demo_corpus_path
from retriever.storage.statement_graph import StatementGraph
from retriever.store.companion_index import CompanionIndex
from retriever.store.derived_stores import WordIndexStore
from retriever.store.duplicate_groups import DuplicateGroups
from retriever.store.index_health import IndexHealth
from retriever.store.statement_index import StatementIndex
from tests.conftest import make_settings

runner = CliRunner()
# The second model's vectors are a store too: the plain MiniLM stands in for it (mpnet reads 3 statements/s).
SECOND = {"model": "packaged:all-MiniLM-L6-v2"}
PAPERS = ("galois-theory", "graph-theory", "complex-analysis")


class InjectedCrashError(Exception):
    """Stands for a kill -9 at one point of a write."""


def corpus(tmp_path: Path) -> Path:
    root = tmp_path / "corpus"
    for paper in PAPERS:
        shutil.copytree(demo_corpus_path() / paper, root / paper)
    # the same statement in two papers: one duplicate group spans them
    (root / "copy").mkdir()
    (root / "copy" / "main.tex").write_text((root / "complex-analysis" / "main.tex").read_text())
    return root


def snapshot(rag: MathRAG) -> dict[str, object]:
    index = rag.index
    groups, second = index.duplicates, index.companion
    assert groups is not None and second is not None
    return {
        "second model": sorted(second.ids()),
        "chroma": sorted(index.store.all_ids()),
        "bm25": sorted(index.lexical_index().ids),
        "formula": sorted(index.formula_lexical_index().ids),
        "groups": sorted(groups.ids()),
        "grouped": sorted(sorted(p.id for p in places) for places in groups.places(sorted(groups.ids())).values()),
        "graph": sorted(index.graph.ids()),
        "edges": sorted(
            (edge.source_id, edge.label, edge.target_id) for i in index.graph.ids() for edge in index.graph.uses(i)
        ),
        "manifest": index.manifest()["statements"],
    }


WINDOWS = {
    "after the Chroma upsert": (DuplicateGroups, "add"),
    "after the duplicate groups": (CompanionIndex, "add"),
    "after the second model's vectors": (WordIndexStore, "add"),
    "after the lexical indexes": (StatementGraph, "add"),
    "after the statement graph": (StatementIndex, "_written"),
}


@pytest.fixture(scope="module")
def clean_ingest(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, object]]:
    """The corpus (read only) and the stores of one clean ingest of it, which every crash window's rerun must equal."""
    base = tmp_path_factory.mktemp("clean-ingest")
    papers = corpus(base)
    clean = MathRAG(make_settings(base / "clean", second_embedding=SECOND))
    clean.ingest([papers])
    expected = snapshot(clean)
    assert len(expected["chroma"]) > 40 and expected["grouped"] and expected["edges"]  # type: ignore[arg-type]
    return papers, expected


@pytest.mark.slow
@pytest.mark.parametrize("window", list(WINDOWS))
def test_a_crash_in_each_write_window_is_caught_up_by_the_rerun(
    tmp_path: Path, window: str, monkeypatch: pytest.MonkeyPatch, clean_ingest: tuple[Path, dict[str, object]]
) -> None:
    papers, expected = clean_ingest

    ingestion = {"batch_statements": 20, "isolate_papers": False}
    settings = make_settings(tmp_path / "crashed", ingestion=ingestion, second_embedding=SECOND)
    owner, method = WINDOWS[window]
    original = getattr(owner, method)
    calls = {"n": 0}

    def crash_on_the_second_write(*args: object, **kwargs: object) -> object:
        calls["n"] += 1
        if calls["n"] == 2:
            raise InjectedCrashError(window)
        return original(*args, **kwargs)

    monkeypatch.setattr(owner, method, crash_on_the_second_write)
    with pytest.raises(InjectedCrashError):
        MathRAG(settings).ingest([papers])
    monkeypatch.setattr(owner, method, original)

    behind = IndexHealth(MathRAG(settings).index).check()
    assert not all(state.in_step for state in behind) or window == "after the statement graph"
    rerun = MathRAG(settings)
    rerun.ingest([papers])
    assert snapshot(rerun) == expected  # nothing lost, nothing duplicated, in any store
    assert all(state.in_step for state in IndexHealth(rerun.index).check())
    hits = rerun.search("bounded entire function", k=5)
    assert len({hit.record.id for hit in hits}) == len(hits)


@pytest.mark.slow
def test_rebuilding_the_groups_beside_a_writer_keeps_its_statements(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    papers = corpus(tmp_path)
    settings = make_settings(tmp_path / "index")
    rag = MathRAG(settings)
    rag.ingest([papers / "galois-theory", papers / "graph-theory"])
    original_clear = DuplicateGroups.clear

    def a_writer_commits_just_before_the_clear(groups: DuplicateGroups) -> None:
        MathRAG(settings).ingest([papers / "complex-analysis", papers / "copy"])  # another process's ingest
        original_clear(groups)

    monkeypatch.setattr(DuplicateGroups, "clear", a_writer_commits_just_before_the_clear)
    rag.rebuild_duplicates()
    fresh = MathRAG(settings)
    groups = fresh.index.duplicates
    assert groups is not None and groups.ids() == fresh.index.store.all_ids()
    assert all(state.in_step for state in IndexHealth(fresh.index).check())


def test_damaged_files_get_a_sentence_a_code_and_a_repair(tmp_path: Path) -> None:
    index = tmp_path / "index"
    env = {"RAG_APP_DATA_DIR": str(tmp_path / "data"), "RAG_APP_INGESTION__ISOLATE_PAPERS": "false"}
    assert runner.invoke(app, ["ingest", str(demo_corpus_path() / "complex-analysis"), "--index", str(index)],
                         env=env).exit_code == 0  # fmt: skip
    assert runner.invoke(app, ["status", "--index", str(index)], env=env).exit_code == 0

    # a truncated BM25 segment: status says which store, search names the file, repair rebuilds from Chroma
    rows = next((index / "bm25" / "segments").glob("*/rows.npy"))
    rows.write_bytes(rows.read_bytes()[: rows.stat().st_size // 2])
    status = runner.invoke(app, ["status", "--index", str(index)], env=env)
    assert status.exit_code == 3 and f"BEHIND bm25: {rows} is damaged" in status.output
    search = runner.invoke(app, ["search", "bounded entire", "--index", str(index), "--mode", "bm25"], env=env)
    assert search.exit_code == 3 and str(rows.parent) in search.output and "rag-app repair" in search.output
    repair = runner.invoke(app, ["repair", "--index", str(index)], env=env)
    assert repair.exit_code == 0 and "repaired  bm25: in step" in repair.output
    search = runner.invoke(app, ["search", "bounded entire", "--index", str(index), "--mode", "bm25"], env=env)
    assert search.exit_code == 0 and "Liouville" in search.output

    # a truncated manifest, a damaged Chroma database, an index path that is a file
    for damage, expected, code in (
        ("manifest", "manifest.json is damaged", 3),
        ("chroma", "chroma.sqlite3 cannot be opened", 3),
    ):
        broken = tmp_path / damage
        shutil.copytree(index, broken)
        if damage == "manifest":
            (broken / "manifest.json").write_text((index / "manifest.json").read_text()[:30])
        else:
            database = broken / "chroma" / "chroma.sqlite3"
            data = bytearray(database.read_bytes())
            data[100:8192] = b"\x00" * (8192 - 100)
            database.write_bytes(bytes(data))
        for command in (["search", "entire"], ["ingest", str(demo_corpus_path() / "graph-theory")], ["status"]):
            result = runner.invoke(app, [*command, "--index", str(broken)], env=env)
            assert result.exit_code == code, (damage, command, result.output)
            assert expected in result.output and str(broken) in result.output, (damage, command, result.output)
    a_file = tmp_path / "a-file"
    a_file.write_text("not an index")
    for command in (["search", "x"], ["ingest", str(demo_corpus_path() / "graph-theory")]):
        result = runner.invoke(app, [*command, "--index", str(a_file)], env=env)
        assert result.exit_code == 2 and "is a file" in result.output


def test_the_statement_graph_is_checked_and_repaired_like_every_store(tmp_path: Path) -> None:
    index = tmp_path / "index"
    env = {"RAG_APP_DATA_DIR": str(tmp_path / "data"), "RAG_APP_INGESTION__ISOLATE_PAPERS": "false"}
    ingest = ["ingest", str(demo_corpus_path() / "complex-analysis"), "--index", str(index)]
    assert runner.invoke(app, ingest, env=env).exit_code == 0
    graph = StatementGraph(index)
    edges = {i: graph.uses(i) for i in graph.ids()}
    assert sum(map(len, edges.values())) >= 2
    graph.remove(sorted(graph.ids())[:3])  # a kill between the Chroma write and the graph's
    status = runner.invoke(app, ["status", "--index", str(index)], env=env)
    assert status.exit_code == 1 and "BEHIND statement graph: behind (12 statements; 3 missing" in status.output
    assert runner.invoke(app, ["repair", "--index", str(index)], env=env).exit_code == 0
    assert {i: graph.uses(i) for i in graph.ids()} == edges
    (index / "graph.sqlite").write_bytes(b"not a database" * 100)  # a damaged file
    status = runner.invoke(app, ["status", "--index", str(index)], env=env)
    damaged = f"statement graph: {index / 'graph.sqlite'} is damaged (file is not a database); `rag-app repair`"
    assert status.exit_code == 3 and damaged in status.output
    # an ingest beside it goes on (the graph is left behind, and says so)
    other = ["ingest", str(demo_corpus_path() / "graph-theory"), "--index", str(index)]
    assert runner.invoke(app, other, env=env).exit_code == 0
    assert runner.invoke(app, ["repair", "--index", str(index)], env=env).exit_code == 0
    assert {i: StatementGraph(index).uses(i) for i in edges} == edges
    assert len(StatementGraph(index).ids()) > len(edges)  # the other paper's statements too
    assert runner.invoke(app, ["status", "--index", str(index)], env=env).exit_code == 0


@pytest.mark.slow
def test_a_long_lived_reader_sees_what_another_process_ingested_in_every_channel(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    settings = make_settings(tmp_path)
    reader = MathRAG(settings)
    reader.ingest([demo_corpus_path() / "complex-analysis"])
    assert reader.index.follow_other_writers() is False  # its own writes need no reload
    query = "every quimby zorblax is a flibbertigibbet"
    assert all(hit.record.name != "Zorblax" for hit in reader.search(query, k=3, mode="dense"))

    paper = tmp_path / "zorblax" / "main.tex"
    paper.parent.mkdir()
    paper.write_text("\\begin{document}\\begin{theorem}[Zorblax] Every quimby zorblax is a flibbertigibbet."
                     "\\end{theorem}\\end{document}")  # fmt: skip
    env = {**os.environ, "RAG_APP_DATA_DIR": str(settings.data_dir), "RAG_APP_INGESTION__ISOLATE_PAPERS": "false"}
    command = [sys.executable, "-m", "rag_app.cli", "ingest", str(paper.parent), "--index", str(settings.index_dir)]
    assert subprocess.run(command, env=env, capture_output=True, timeout=300).returncode == 0
    for mode in ("dense", "bm25", "hybrid-formula"):
        assert reader.search(query, k=1, mode=mode)[0].record.name == "Zorblax", mode
    assert reader.index.count() == MathRAG(settings).index.count()


def _ingested(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    index = tmp_path / "index"
    env = {"RAG_APP_DATA_DIR": str(tmp_path / "data"), "RAG_APP_INGESTION__ISOLATE_PAPERS": "false"}
    ingest = runner.invoke(
        app, ["ingest", str(demo_corpus_path() / "complex-analysis"), "--index", str(index)], env=env
    )
    assert ingest.exit_code == 0, ingest.output
    return index, env


def _damage(path: Path, how: str) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2] if how == "truncated" else bytes(range(256)) * 16 + data[4096:])


def _cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """``rag-app ARGS`` in a process of its own, as a user runs it."""
    command = [sys.executable, "-m", "rag_app.cli", *args]
    return subprocess.run(command, env={**os.environ, **env}, capture_output=True, text=True, timeout=600)


def _clis_side_by_side(env: dict[str, str], *commands: list[str]) -> list[subprocess.CompletedProcess[str]]:
    """``rag-app`` commands that only read, each in a process of its own, run at the same time (two users)."""
    running = [
        (arguments, subprocess.Popen([sys.executable, "-m", "rag_app.cli", *arguments], env={**os.environ, **env},
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
        for arguments in commands
    ]  # fmt: skip
    done = []
    for arguments, process in running:
        out, err = process.communicate(timeout=600)
        done.append(subprocess.CompletedProcess(arguments, process.returncode, out, err))
    return done


@pytest.mark.slow
@pytest.mark.parametrize("store", ["bm25", "formula_bm25"])
def test_a_damaged_lexical_catalogue_is_named_and_rebuilt_by_repair(tmp_path: Path, store: str) -> None:
    # Issue 48, point 7: a traceback on search and ask, a silent status, a repair that failed.
    index, env = _ingested(tmp_path)
    catalogue = index / store / "lexical.sqlite"
    for journal in catalogue.parent.glob("lexical.sqlite-*"):  # what SQLite has not yet written back
        journal.unlink()
    # Overwritten: a cut file this small reads as an empty catalogue ("behind", exit 1; repair rebuilds).
    catalogue.write_bytes(bytes(range(256)) * 16)
    status, search = _clis_side_by_side(
        env, ["status", "--index", str(index)],
        ["search", "bounded entire", "--index", str(index), "--mode", "hybrid-formula"],
    )  # fmt: skip
    assert status.returncode == 3 and f"{catalogue} is damaged" in status.stdout, status.stdout + status.stderr
    assert search.returncode == 3 and "Traceback" not in search.stderr, search.stderr
    assert f"{catalogue} is damaged" in search.stderr and "rag-app repair" in search.stderr
    repair = _cli(env, "repair", "--index", str(index))
    assert repair.returncode == 0, repair.stdout + repair.stderr
    status, search = _clis_side_by_side(
        env, ["status", "--index", str(index)], ["search", "bounded entire", "--index", str(index), "--mode", "bm25"]
    )
    assert status.returncode == 0, status.stdout + status.stderr
    assert search.returncode == 0 and "Liouville" in search.stdout


def test_a_damaged_segment_file_is_named_by_its_file(tmp_path: Path) -> None:
    index, env = _ingested(tmp_path)
    terms = next((index / "bm25" / "segments").glob("*/terms.npy"))
    _damage(terms, "overwritten")
    search = runner.invoke(app, ["search", "bounded entire", "--index", str(index), "--mode", "bm25"], env=env)
    assert search.exit_code == 3 and f"{terms} is damaged" in search.output


def test_a_damaged_vector_index_is_named_and_its_statements_embedded_again(tmp_path: Path) -> None:
    # Chroma fails every read over a damaged header.bin with an error naming no file (a traceback in
    # search and ask); the file is named, and repair embeds the statements again from their text.
    index, env = _ingested(tmp_path)
    [header] = list((index / "chroma").glob("*/header.bin"))
    header.write_bytes(bytes(range(100)))
    status = runner.invoke(app, ["status", "--index", str(index)], env=env)
    assert status.exit_code == 3 and f"{header} is damaged" in status.output, status.output
    search = runner.invoke(app, ["search", "bounded entire", "--index", str(index)], env=env)
    assert search.exit_code == 3 and f"{header} is damaged" in search.output and "rag-app repair" in search.output
    repair = runner.invoke(app, ["repair", "--index", str(index)], env=env)
    assert repair.exit_code == 0 and "repaired  chroma" in repair.output, repair.output
    assert not (index / "damaged").exists()  # the moved files are gone once the vectors are back
    status = runner.invoke(app, ["status", "--index", str(index), "--json"], env=env)
    assert status.exit_code == 0 and json.loads(status.stdout)["in_step"]
    search = runner.invoke(
        app, ["search", "bounded entire function", "--index", str(index), "--mode", "dense"], env=env
    )
    assert search.exit_code == 0 and "Liouville" in search.output


@pytest.mark.slow
def test_two_repairs_at_once_both_end_well(tmp_path: Path) -> None:
    index, env = _ingested(tmp_path)
    _damage(index / "bm25" / "lexical.sqlite", "overwritten")
    command = [sys.executable, "-m", "rag_app.cli", "repair", "--index", str(index)]
    environment = {**os.environ, **env, "HF_HUB_OFFLINE": "1"}
    repairs = [
        subprocess.Popen(command, env=environment, stdout=subprocess.PIPE, stderr=subprocess.STDOUT) for _ in "ab"
    ]
    outputs = [process.communicate(timeout=600)[0].decode() for process in repairs]
    assert [process.returncode for process in repairs] == [0, 0], outputs
    assert runner.invoke(app, ["status", "--index", str(index)], env=env).exit_code == 0


@pytest.mark.parametrize(
    "command", [["duplicates"], ["build-fusion"], ["build-dense2"], ["reindex"], ["train", "ranker"], ["repair"]]
)
def test_a_command_that_reads_an_index_never_creates_one_where_none_is(tmp_path: Path, command: list[str]) -> None:
    mistyped = tmp_path / "nope"
    result = runner.invoke(app, [*command, "--index", str(mistyped)])
    assert result.exit_code == 2 and "does not exist" in result.output, result.output
    assert not mistyped.exists()


@pytest.mark.parametrize("damage", ["truncated", "zeroed"])
def test_damaged_duplicate_groups_are_named_with_exit_3_and_repaired(tmp_path: Path, damage: str) -> None:
    """Issue 62, defect 3: `status` and `search` gave tracebacks (`file is not a database` from
    sqlite_file.connect) where every other damaged store is named with exit 3."""
    index = tmp_path / "index"
    env = {"RAG_APP_DATA_DIR": str(tmp_path / "data"), "RAG_APP_INGESTION__ISOLATE_PAPERS": "false"}
    ingest = ["ingest", str(demo_corpus_path() / "complex-analysis"), "--index", str(index)]
    assert runner.invoke(app, ingest, env=env).exit_code == 0
    path = index / "duplicates.sqlite"
    for suffix in ("-wal", "-shm"):
        path.with_name(path.name + suffix).unlink(missing_ok=True)
    size = path.stat().st_size
    path.write_bytes(path.read_bytes()[: size // 3] if damage == "truncated" else b"\0" * size)
    for command in (["status"], ["search", "bounded entire function"]):
        result = runner.invoke(app, [*command, "--index", str(index)], env=env)
        assert result.exit_code == 3, (command, result.output)
        assert f"{path} is damaged" in result.output and "rag-app repair" in result.output, result.output
        assert "Traceback" not in result.output
    assert runner.invoke(app, ["repair", "--index", str(index)], env=env).exit_code == 0
    assert runner.invoke(app, ["status", "--index", str(index)], env=env).exit_code == 0
    found = runner.invoke(app, ["search", "bounded entire function", "--index", str(index)], env=env)
    assert found.exit_code == 0 and "Liouville" in found.output


def test_a_store_file_another_process_holds_is_busy_not_damaged_and_repair_leaves_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 61, defect 12: "database is locked" (a writer past the 60 s wait) was taken for damage, and
    `repair` deleted graph.sqlite with its -wal and -shm under the process writing it."""
    import sqlite3

    from retriever.storage import sqlite_file

    index = tmp_path / "index"
    env = {"RAG_APP_DATA_DIR": str(tmp_path / "data"), "RAG_APP_INGESTION__ISOLATE_PAPERS": "false"}
    ingest = ["ingest", str(demo_corpus_path() / "complex-analysis"), "--index", str(index)]
    assert runner.invoke(app, ingest, env=env).exit_code == 0
    statements = len(StatementGraph(index).ids())
    monkeypatch.setattr(sqlite_file, "BUSY_TIMEOUT_S", 0.2)
    writer = sqlite3.connect(index / "graph.sqlite")  # another process's writer, holding the file
    writer.execute("PRAGMA locking_mode=EXCLUSIVE")
    writer.execute("BEGIN EXCLUSIVE")
    writer.execute("DELETE FROM statement WHERE 0")
    try:
        status = runner.invoke(app, ["status", "--index", str(index)], env=env)
        assert status.exit_code == 5, status.output
        assert f"{index / 'graph.sqlite'} is busy" in status.output and "not damaged" in status.output
        repair = runner.invoke(app, ["repair", "--index", str(index)], env=env)
        assert repair.exit_code == 5 and "STILL BEHIND  statement graph" in repair.output, repair.output
    finally:
        writer.rollback()
        writer.close()
    assert len(StatementGraph(index).ids()) == statements  # kept: nothing was deleted under the writer
    assert runner.invoke(app, ["status", "--index", str(index)], env=env).exit_code == 0


def test_the_quick_status_reads_each_stores_count_and_no_ids(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Issue 61: /v1/status scanned every id of Chroma and of every derived store on each call.
    settings = make_settings(tmp_path, second_embedding=SECOND)
    with MathRAG(settings) as rag:
        rag.ingest([demo_corpus_path() / "complex-analysis"])
        index = rag.index
        full = {state.name: state for state in IndexHealth(index).check()}
        graph = index.graph
        graph.remove(sorted(graph.ids())[:2])  # a kill between the Chroma write and the graph's

        def no_scan(*_: object) -> set[str]:
            raise AssertionError("an id scan")

        monkeypatch.setattr(type(index.store), "all_ids", no_scan)
        for store in index.derived:
            monkeypatch.setattr(type(store), "ids", no_scan)
        quick = {state.name: state for state in IndexHealth(index).counts()}
    assert set(quick) == set(full) - {"vector index"}  # the vector files are checked by `status` alone
    statements = full["chroma"].statements
    assert statements and quick["chroma"].statements == statements
    assert quick["statement graph"].missing == 2 and not quick["statement graph"].in_step
    assert quick["citing text"].missing == 2  # kept in the graph's file, with its statements
    graph_file = ("statement graph", "citing text")
    in_step = {name: state.statements for name, state in quick.items() if name not in graph_file}
    assert in_step == {name: statements for name in in_step}  # every other store: Chroma's count
