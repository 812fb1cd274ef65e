"""`ingest arxiv --dask`: parsing and embedding on a real Dask LocalCluster, the driver the only writer."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from rag_app import MathRAG
from rag_app.indexing.arxiv_month import ArxivMonthIngest
from rag_app.indexing.dask_ingest import ClusterError, DaskEprintParser
from tests.conftest import make_settings
from tests.rag_app.indexing.test_arxiv_month import paper, write_month, write_month_with_a_slow_paper

# Trains, starts a server or browser, or reads real corpora: out of the fast tier.
pytestmark = pytest.mark.slow

pytest.importorskip("distributed")


def write_two_months(source: Path) -> None:
    write_month(source)  # 2023-01: four papers, a PDF-only one, a binary one in a bulk tar
    for number in range(1, 4):
        (source / f"2302.{number:05d}v1.gz").write_bytes(gzip.compress(paper(100 + number)))


def ingest_clis(source: Path, *runs: tuple[Path, list[str]]) -> list[list[dict[str, object]]]:
    """``ingest arxiv`` of both months into each ``(index, extra arguments)``, the processes side by side."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "ANONYMIZED_TELEMETRY": "False"}
    running = []
    for index, extra in runs:
        command = [
            sys.executable, "-m", "rag_app.cli", "ingest", "arxiv", "--month", "2023-01", "--month", "2023-02",
            "--source", str(source), "--index", str(index), "--json", *extra,
        ]  # fmt: skip
        running.append(subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    all_reports = []
    for process in running:
        out, err = process.communicate(timeout=600)
        reports = [json.loads(line) for line in out.splitlines() if line.strip()]
        refused = any(report["failed"] for report in reports)  # 2023-01 holds a binary paper, refused when first met
        assert process.returncode == (1 if refused else 0), err[-3000:]
        all_reports.append(reports)
    return all_reports


def snapshot(index: Path) -> dict[str, tuple[str, str, np.ndarray]]:
    store = MathRAG(make_settings(index.parent, index_dir=index)).index.store
    records = list(store.iter_records())
    vectors = store.vectors([r.id for r in records])
    return {r.id: (r.text, json.dumps(dict(r.metadata), sort_keys=True), vectors[r.id]) for r in records}


def test_two_months_on_a_local_dask_cluster_equal_a_local_run(tmp_path: Path) -> None:
    source = tmp_path / "src"
    write_two_months(source)
    reports, local = ingest_clis(
        source, (tmp_path / "dask-index", ["--dask", "--workers", "2"]), (tmp_path / "local-index", ["--workers", "1"])
    )
    assert [r["month"] for r in reports] == ["2023-01", "2023-02"]
    assert [(r["papers_ok"], r["added"]) for r in reports] == [(4, 12), (3, 9)]
    assert [f["paper"] for f in reports[0]["failed"]] == ["2301.00099"]  # the binary one, reported as locally
    assert "PDF-only" in reports[0]["skipped"][0]["reason"]
    assert [(r["papers_ok"], r["added"]) for r in local] == [(4, 12), (3, 9)]
    on_cluster, here = snapshot(tmp_path / "dask-index"), snapshot(tmp_path / "local-index")
    assert on_cluster.keys() == here.keys() and len(here) == 21
    for statement_id, (text, metadata, vector) in here.items():
        assert on_cluster[statement_id][:2] == (text, metadata)
        assert float(on_cluster[statement_id][2] @ vector) > 0.9999  # same model, batches composed differently

    rag = MathRAG(make_settings(tmp_path, index_dir=tmp_path / "dask-index"))
    assert rag.index.count() == 21 and not rag.index.lexical.stale
    assert rag.search("module finite over the ring R_{102}", 1, "bm25")[0].record.paper_id == "2302.00002"


def test_on_the_cluster_a_paper_over_the_time_limit_fails_alone(tmp_path: Path) -> None:
    write_month_with_a_slow_paper(tmp_path / "src")
    rag = MathRAG(make_settings(tmp_path))
    limits = replace(rag.settings.ingestion.limits, paper_timeout_s=0.3)
    with DaskEprintParser(rag.index.embedder, limits, workers=1, chunk_papers=2) as cluster:
        report = ArxivMonthIngest(rag.index, limits, 1, cluster=cluster).run("2023-01", tmp_path / "src")
    assert report.papers_ok == 1 and report.added == 3
    assert report.failed == [("2301.00002", "parsing took longer than 0.3 s")]


def test_an_unreachable_scheduler_is_a_clear_error(tmp_path: Path) -> None:
    rag = MathRAG(make_settings(tmp_path))
    limits = rag.settings.ingestion.limits
    cluster = DaskEprintParser(rag.index.embedder, limits, scheduler="tcp://127.0.0.1:9", connect_timeout_s=2)
    with pytest.raises(ClusterError, match=r"tcp://127\.0\.0\.1:9"), cluster:
        pass


def test_a_failed_cluster_task_leaves_its_papers_for_the_next_run(tmp_path: Path) -> None:
    source = tmp_path / "src"
    source.mkdir()
    for number in (1, 2):
        (source / f"2301.{number:05d}.gz").write_bytes(gzip.compress(paper(number)))
    rag = MathRAG(make_settings(tmp_path))
    limits = rag.settings.ingestion.limits
    with DaskEprintParser(rag.index.embedder, limits, workers=1) as cluster:
        cluster.recipe = replace(cluster.recipe, model="packaged:no-such-model")  # every task fails on a worker
        failed = ArxivMonthIngest(rag.index, limits, 1, cluster=cluster).run("2023-01", source)
    assert failed.papers_ok == 0 and len(failed.failed) == 2
    assert "retried on the next run" in failed.failed[0][1]
    with DaskEprintParser(rag.index.embedder, limits, workers=1) as cluster:
        again = ArxivMonthIngest(rag.index, limits, 1, cluster=cluster).run("2023-01", source)
        # a rerun on the cluster adds nothing and sends it nothing (the month ingest decides what is unchanged)
        rerun = ArxivMonthIngest(rag.index, limits, 1, cluster=cluster).run("2023-01", source)
    assert (again.papers_ok, again.unchanged, again.added) == (2, 0, 6)
    assert (rerun.papers_ok, rerun.unchanged, rerun.added, rerun.removed) == (0, 2, 0, 0)
