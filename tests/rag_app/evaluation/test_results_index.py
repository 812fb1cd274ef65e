"""The committed evaluation results: summaries without per-query scores, and their index."""

from __future__ import annotations

import json
from pathlib import Path

from rag_app.evaluation.report import summary_of
from rag_app.evaluation.results_index import main, results_index, write_summaries

REPORT = {
    "provenance": {
        "command": "rag-app eval --dev -r bm25 --out eval/runs/x",
        "date": "2026-11-28",
        "git_commit": "abc",
    },
    "sets": [
        {
            "query_set": {"name": "stacks-names"},
            "primary": "MRR@10",
            "scored_queries": 2,
            "retrievers": [
                {
                    "name": "bm25",
                    "aggregate": {"MRR@10": 0.75},
                    "per_query": {"MRR@10": {"q1": 1.0, "q2": 0.5}},
                }
            ],
            "significance": [{"baseline": "bm25", "candidate": "dense", "measure": "MRR@10"}],
        }
    ],
}


def test_summary_drops_only_the_per_query_scores() -> None:
    summary = summary_of(REPORT)
    (scores,) = summary["sets"][0]["retrievers"]
    assert "per_query" not in scores and scores["aggregate"] == {"MRR@10": 0.75}
    assert summary["sets"][0]["significance"] == REPORT["sets"][0]["significance"]
    assert summary["provenance"] == REPORT["provenance"]
    assert "per_query" in REPORT["sets"][0]["retrievers"][0]  # the report itself is untouched


def test_index_names_each_folder_its_measure_and_command(tmp_path: Path) -> None:
    folder = tmp_path / "results" / "x"
    folder.mkdir(parents=True)
    (folder / "report.json").write_text(json.dumps(REPORT))
    (tmp_path / "results" / "paired.md").write_text("| a | b |\n")
    (tmp_path / "results" / "bench").mkdir()
    (tmp_path / "results" / "bench" / "report.json").write_text(json.dumps({"rows": []}))  # not an evaluation

    assert write_summaries(tmp_path / "results") == [folder / "summary.json"]
    index = results_index(tmp_path / "results")
    assert "## `x/`" in index
    assert "| stacks-names | 2 | bm25 | MRR@10 | 0.750 |" in index
    # the recorded command, writing into the folder the summary is in (it ran with --out /tmp/x1)
    assert f"Regenerate: `rag-app eval --dev -r bm25 --out {(tmp_path / 'results' / 'x').as_posix()}`" in index
    assert "[`paired.md`](paired.md)" in index


def test_main_writes_the_index_and_refuses_a_missing_folder(tmp_path: Path, capsys) -> None:
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "report.json").write_text(json.dumps(REPORT))
    assert main([str(tmp_path)]) == 0
    assert (tmp_path / "README.md").read_text().startswith("# Evaluation results")
    assert main([str(tmp_path / "absent")]) == 2
    assert "not a folder" in capsys.readouterr().err


def test_the_committed_results_have_a_summary_for_every_report_md() -> None:
    root = Path(__file__).resolve().parents[3] / "eval" / "runs"
    for report_md in root.rglob("report.md"):
        if "latest" in report_md.parts:
            continue
        assert report_md.with_name("summary.json").exists(), f"{report_md.parent}: summary.json missing"
    index = (root / "README.md").read_text(encoding="utf-8")
    for summary in root.rglob("summary.json"):
        assert f"## `{summary.parent.relative_to(root).as_posix()}/`" in index, f"{summary} not in eval/runs/README.md"
