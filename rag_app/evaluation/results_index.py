"""The committed evaluation results as summaries, and an index of them with the commands that rerun them.

``python -m rag_app.evaluation.results_index eval/runs`` writes, under the given folder:

- ``summary.json`` beside every ``report.json`` (the report without its per-query scores), and
- ``report.png`` again from each summary, with ``--redraw-charts``, and
- ``README.md``: one row per result folder with its sets, retrievers, leading measure and the command
  that regenerates it (the command each report records in its provenance).

The per-query ``report.json`` files and TREC runs are large and stay out of git (``.gitignore``);
the command in the index writes them again from the committed question sets.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

from rag_app.evaluation.report import plot_summary, summary_of
from rag_app.result_files import json_text

INDEX_NAME = "README.md"


def write_summaries(root: Path) -> list[Path]:
    """``summary.json`` beside each ``report.json`` under ``root``; returns the summaries written."""
    written = []
    for report_path in sorted(root.rglob("report.json")):
        report = json.loads(report_path.read_text(encoding="utf-8"))
        if "sets" not in report:  # another tool's report (a benchmark), not an evaluation
            continue
        target = report_path.with_name("summary.json")
        target.write_text(json_text(summary_of(report)), encoding="utf-8")
        written.append(target)
    return written


def redraw_charts(root: Path) -> int:
    """Draw ``report.png`` again from each ``summary.json`` under ``root``; returns how many."""
    summaries = sorted(root.rglob("summary.json"))
    for summary_path in summaries:
        plot_summary(json.loads(summary_path.read_text(encoding="utf-8")), summary_path.with_name("report.png"))
    return len(summaries)


def results_index(root: Path) -> str:
    """The Markdown index of every ``summary.json`` under ``root``."""
    lines = [
        "# Evaluation results",
        "",
        "Written by `python -m rag_app.evaluation.results_index eval/runs`. Each folder holds `summary.json`",
        "(measures per set and retriever, by slice and group, and the paired tests), `report.md` and `report.png`.",
        "The per-query `report.json` and the TREC runs are not in git: the command below writes them again",
        "(`eval/questions/` is committed; `eval/sets/` is rebuilt from `../shared` by `rag-app eval --dev`;",
        "an `--index` path names the index the run read, built as the docs section citing the folder says).",
        "",
    ]
    for summary_path in sorted(root.rglob("summary.json")):
        summary = json.loads(summary_path.read_text(encoding="utf-8"))
        folder = summary_path.parent.relative_to(root).as_posix()
        lines += [f"## `{folder}/`", ""]
        lines += _summary_table(summary)
        command = summary.get("provenance", {}).get("command")
        if command:
            lines += ["", f"Regenerate: `{_writing_here(command, root / folder)}`"]
        date = summary.get("provenance", {}).get("date")
        if date:
            lines += ["", f"Run on {date}, commit {summary['provenance'].get('git_commit', '?')}."]
        lines.append("")
    others = sorted(
        path.relative_to(root).as_posix()
        for path in root.rglob("*.md")
        if path.name not in {INDEX_NAME, "report.md"} and not path.with_name("summary.json").exists()
    )
    if others:
        lines += ["## Paired comparisons and tables written by hand from the runs above", ""]
        lines += [f"- [`{name}`]({name})" for name in others]
        lines.append("")
    return "\n".join(lines)


def _writing_here(command: str, folder: Path) -> str:
    """The recorded command, writing its report into ``folder`` (some ran with ``--out /tmp/...`` and were
    copied here afterwards)."""
    return re.sub(r"--out \S+", f"--out {folder.as_posix()}", command) if "--out " in command else command


def _summary_table(summary: dict[str, Any]) -> list[str]:
    lines = ["| set | queries | retriever | leading measure | value |", "| --- | ---: | --- | --- | ---: |"]
    for evaluation in summary["sets"]:
        primary = evaluation["primary"]
        for scores in evaluation["retrievers"]:
            value = scores["aggregate"].get(primary)
            shown = "—" if value is None else f"{value:.3f}"
            lines.append(
                f"| {evaluation['query_set']['name']} | {evaluation['scored_queries']} | {scores['name']} "
                f"| {primary} | {shown} |"
            )
    return lines


def main(argv: list[str]) -> int:
    redraw = "--redraw-charts" in argv
    argv = [arg for arg in argv if arg != "--redraw-charts"]
    if len(argv) != 1:
        print("usage: python -m rag_app.evaluation.results_index RESULTS_FOLDER [--redraw-charts]", file=sys.stderr)
        return 2
    root = Path(argv[0])
    if not root.is_dir():
        print(f"{root}: not a folder", file=sys.stderr)
        return 2
    summaries = write_summaries(root)
    if redraw:
        print(f"{redraw_charts(root)} charts drawn from their summaries")
    (root / INDEX_NAME).write_text(results_index(root), encoding="utf-8")
    print(f"{len(summaries)} summaries and {root / INDEX_NAME} written")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
