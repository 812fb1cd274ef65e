"""The learned ranker's statement profiles, made at ingest and read by searches (issue 75)."""

from __future__ import annotations

import re
import sqlite3
from contextlib import closing
from dataclasses import replace
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rag_app import MathRAG
from rag_app.cli import app
from rag_app.pipeline import demo_corpus_path
from retriever.models.ranking_features import StatementProfile, StatementProfiles
from retriever.store.index_health import IndexHealth
from retriever.store.ranking_profiles import PROFILE_VERSION, PROFILES_DB, RankingProfiles
from tests.conftest import make_settings
from tests.retriever.storage.test_statement_graph import record


def test_a_kept_profile_is_the_one_made_from_the_statement(tmp_path: Path) -> None:
    statements = [
        replace(record("a", "paper", "lem:a"), text="Let $R$ be a Noetherian ring. Then $R[x]$ is Noetherian.",
                formulas=("R", "R[x]")),
        replace(record("b", "paper", "thm:b"), text="Every finite group of order $p^2$ is abelian.", formulas=("p^2",)),
    ]  # fmt: skip
    profiles = RankingProfiles(tmp_path)
    profiles.add(statements)
    kept = profiles.read(["a", "b", "unknown"])
    assert set(kept) == {"a", "b"} and profiles.count() == 2 and profiles.ids() == {"a", "b"}
    for statement in statements:
        assert kept[statement.id] == StatementProfile.of(statement)  # the same numbers and terms
    profiles.remove(["a"])
    assert set(profiles.read(["a", "b"])) == {"b"}


def test_profiles_in_memory_are_read_from_the_store_before_any_is_made(tmp_path: Path) -> None:
    statements = [
        replace(record(name, "paper", f"lem:{name}"), text=f"Statement {name} about rings.") for name in "abc"
    ]
    store = RankingProfiles(tmp_path)
    store.add(statements[:2])
    asked: list[list[str]] = []

    def kept(ids: list[str]) -> dict[str, StatementProfile]:
        asked.append(list(ids))
        return store.read(ids)

    in_memory = StatementProfiles(kept=kept)
    made = in_memory.of_many(statements)
    assert made == [StatementProfile.of(statement) for statement in statements]  # c made: the store lacks it
    assert asked == [["a", "b", "c"]]
    assert in_memory.of_many(statements[::-1]) == made[::-1] and asked == [["a", "b", "c"]], "kept in memory"


def test_a_file_of_another_version_is_emptied_and_a_damaged_one_costs_a_search_nothing(tmp_path: Path) -> None:
    store = RankingProfiles(tmp_path)
    store.add([record("a", "paper", "lem:a")])
    with closing(sqlite3.connect(tmp_path / PROFILES_DB)) as db:
        db.execute(f"PRAGMA user_version = {PROFILE_VERSION + 1}")
    assert RankingProfiles(tmp_path).count() == 0, "made by other rules: made again"
    (tmp_path / PROFILES_DB).write_bytes(b"not a database" * 100)
    damaged = RankingProfiles(tmp_path)
    assert damaged.read(["a"]) == {}  # the search makes what it cannot read
    with pytest.raises(sqlite3.DatabaseError, match=re.escape("ranking_profiles.sqlite is damaged")):
        damaged.ids()


def test_ingest_makes_them_status_compares_them_and_repair_rebuilds_them(tmp_path: Path) -> None:
    settings = make_settings(tmp_path)
    with MathRAG(settings) as rag:
        rag.ingest([demo_corpus_path() / "finite-groups"])
        index = rag.index
        statements = index.count()
        assert index.ranking_profiles.count() == statements > 0
        states = {state.name: state for state in IndexHealth(index).check()}
        assert states["ranking profiles"].in_step
        hits = rag.search("Sylow subgroups are conjugate", k=3)
        assert hits
        ranker = rag.search_stack.learned_ranker
        assert ranker.profiles.kept is not None  # the search read them, made none
    (settings.index_dir / PROFILES_DB).write_bytes(b"\0" * 4096)
    env = {"RAG_APP_DATA_DIR": str(settings.data_dir)}
    status = CliRunner().invoke(app, ["status", "--index", str(settings.index_dir)], env=env)
    assert status.exit_code != 0 and "ranking_profiles.sqlite" in status.output, status.output
    repaired = CliRunner().invoke(app, ["repair", "--index", str(settings.index_dir)], env=env)
    assert repaired.exit_code == 0, repaired.output
    assert RankingProfiles(settings.index_dir).count() == statements
