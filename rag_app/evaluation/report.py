"""Evaluation reports: a console table, JSON, markdown and a PNG bar chart.

A report records what is needed to rerun it: the command, the settings, the index manifest, the
query set files with their hashes, and the git commit.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from rag_app.evaluation.evaluate import SetEvaluation
from rag_app.evaluation.trec_files import write_run

SIGNIFICANCE_LEVEL = 0.05


@dataclass
class EvaluationReport:
    """Several query sets, each scored for the same retrievers."""

    evaluations: list[SetEvaluation]
    provenance: dict[str, Any] = field(default_factory=dict)

    # ----------------------------------------------------------------- writing
    def write(self, out_dir: Path, write_runs: bool = True) -> dict[str, Path]:
        """Write ``report.json``, ``report.md``, ``report.png`` and TREC runs under ``out_dir``."""
        out_dir.mkdir(parents=True, exist_ok=True)
        paths = {"json": out_dir / "report.json", "markdown": out_dir / "report.md", "png": out_dir / "report.png"}
        if write_runs:
            for evaluation in self.evaluations:
                for scores in evaluation.retrievers:
                    run_path = out_dir / "runs" / f"{evaluation.query_set.name}.{_slug(scores.name)}.trec"
                    write_run(scores.run, run_path, tag=_slug(scores.name))
            paths["runs"] = out_dir / "runs"
        paths["json"].write_text(json.dumps(self.to_dict(), indent=2, ensure_ascii=False) + "\n")
        paths["markdown"].write_text(self.to_markdown())
        self.plot(paths["png"])
        return paths

    def to_dict(self) -> dict[str, Any]:
        return {
            "provenance": self.provenance,
            "sets": [
                {
                    "query_set": e.query_set.header(),
                    "k": e.k,
                    "measures": e.measures,
                    "primary": e.primary,
                    "scored_queries": e.scored,
                    "skipped_queries": e.skipped,
                    "slice_sizes": e.slice_sizes,
                    "group_sizes": e.group_sizes,
                    "retrievers": [
                        {
                            "name": s.name,
                            "aggregate": _clean(s.aggregate),
                            "slices": {k: _clean(v) for k, v in s.slices.items()},
                            "groups": {k: _clean(v) for k, v in s.groups.items()},
                            "seconds": round(s.seconds, 3),
                            "ms_per_query": round(s.ms_per_query, 2),
                            "p50_ms": _round(s.latency_percentile(50)),
                            "p95_ms": _round(s.latency_percentile(95)),
                            "per_query": s.per_query,
                        }
                        for s in e.retrievers
                    ],
                    "significance": [t.to_dict() for t in e.significance],
                }
                for e in self.evaluations
            ],
        }

    # ----------------------------------------------------------------- markdown
    def to_markdown(self) -> str:
        lines = ["# Retrieval evaluation", ""]
        command = self.provenance.get("command")
        if command:
            lines += [f"Command: `{command}`", ""]
        facts = [
            f"{key}: {self.provenance[key]}"
            for key in ("date", "git_commit", "embedder", "embedders", "index")
            if key in self.provenance
        ]
        if facts:
            lines += ["- " + fact for fact in facts] + [""]
        lines += [
            f"A † marks a difference from the first retriever with paired randomization test p < {SIGNIFICANCE_LEVEL}"
            " (10,000 sign flips; p of the leading measure in its own column).",
            "",
        ]
        lines += index_size_markdown(self.provenance.get("indexes") or {})
        for evaluation in self.evaluations:
            lines += _set_markdown(evaluation)
        return "\n".join(lines)

    # ----------------------------------------------------------------- console
    def print(self, console: Console | None = None) -> None:
        if console is None:
            console = Console()
            if not console.is_terminal:  # piped to a file: don't squeeze the tables into 80 columns
                console = Console(width=200)
        for evaluation in self.evaluations:
            qs = evaluation.query_set
            table = Table(title=f"{qs.name} v{qs.version} · {qs.protocol.value} · {evaluation.scored} queries")
            table.add_column("retriever")
            for name in evaluation.measures:
                table.add_column(name, justify="right")
            table.add_column(f"p ({evaluation.primary})", justify="right")
            for scores in evaluation.retrievers:
                table.add_row(
                    scores.name, *_cells(evaluation, scores.name, scores.aggregate), _p_cell(evaluation, scores.name)
                )
            console.print(table)
            if len(evaluation.slice_sizes) > 1:
                slices = Table(title=f"{qs.name}: {evaluation.primary} by formula share of the query")
                slices.add_column("slice")
                slices.add_column("queries", justify="right")
                for scores in evaluation.retrievers:
                    slices.add_column(scores.name, justify="right")
                for slice_name, size in evaluation.slice_sizes.items():
                    values = [_fmt(s.slices.get(slice_name, {}).get(evaluation.primary)) for s in evaluation.retrievers]
                    slices.add_row(slice_name, str(size), *values)
                console.print(slices)
            if evaluation.skipped:
                console.print(f"[yellow]{len(evaluation.skipped)} queries without judgments skipped[/yellow]")

    # ----------------------------------------------------------------- chart
    def plot(self, path: Path) -> None:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        count = len(self.evaluations)
        figure, axes = plt.subplots(count, 1, figsize=(11, 3.2 * count), squeeze=False)
        for axis, evaluation in zip(axes[:, 0], self.evaluations, strict=True):
            names = evaluation.measures
            width = 0.8 / max(len(evaluation.retrievers), 1)
            for i, scores in enumerate(evaluation.retrievers):
                values = [0.0 if math.isnan(scores.aggregate[n]) else scores.aggregate[n] for n in names]
                positions = [j + (i - (len(evaluation.retrievers) - 1) / 2) * width for j in range(len(names))]
                axis.bar(positions, values, width, label=scores.name)
            axis.set_xticks(range(len(names)), names, fontsize=8)
            axis.set_ylim(0, 1)
            qs = evaluation.query_set
            axis.set_title(f"{qs.name} ({qs.protocol.value}, {evaluation.scored} queries)", fontsize=10)
            axis.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))  # outside: bars reach 1.0
            axis.grid(axis="y", alpha=0.3)
        figure.tight_layout()
        figure.savefig(path, dpi=110)
        plt.close(figure)


def _set_markdown(evaluation: SetEvaluation) -> list[str]:
    qs = evaluation.query_set
    tuning = " We tune on this set: its numbers are optimistic for questions we have not seen." if qs.tuning else ""
    lines = [
        f"## {qs.name} (v{qs.version}, {qs.protocol.value}, {evaluation.scored} queries, depth {evaluation.k})",
        "",
        f"{qs.description}{tuning}".strip(),
        "",
    ]
    header = ["retriever", *evaluation.measures, f"p ({evaluation.primary})", "ms/query", "p50 ms", "p95 ms"]
    lines += [_row(header), _row(["---"] + ["---:"] * (len(header) - 1))]
    for scores in evaluation.retrievers:
        cells = _cells(evaluation, scores.name, scores.aggregate)
        latency = [
            f"{scores.ms_per_query:.1f}",
            f"{scores.latency_percentile(50):.1f}",
            f"{scores.latency_percentile(95):.1f}",
        ]
        lines.append(_row([scores.name, *cells, _p_cell(evaluation, scores.name), *latency]))
    lines.append("")
    if evaluation.slice_sizes:
        lines += [f"{evaluation.primary} by formula share of the query (share of query tokens inside math):", ""]
        names = [s.name for s in evaluation.retrievers]
        lines += [_row(["slice", "queries", *names]), _row(["---", "---:"] + ["---:"] * len(names))]
        for slice_name, size in evaluation.slice_sizes.items():
            values = [_fmt(s.slices.get(slice_name, {}).get(evaluation.primary)) for s in evaluation.retrievers]
            lines.append(_row([slice_name, str(size), *values]))
        lines.append("")
    if evaluation.group_sizes:
        lines += ["By the query's place in the embedding's training (papers and statements seen or held out):", ""]
        header = ["group", "queries", "retriever", *evaluation.measures]
        lines += [_row(header), _row(["---", "---:", "---"] + ["---:"] * len(evaluation.measures))]
        for group, size in evaluation.group_sizes.items():
            for scores in evaluation.retrievers:
                values = [_fmt(scores.groups.get(group, {}).get(m)) for m in evaluation.measures]
                lines.append(_row([group, str(size), scores.name, *values]))
        lines.append("")
    if evaluation.skipped:
        shown = ", ".join(evaluation.skipped[:20]) + (" ..." if len(evaluation.skipped) > 20 else "")
        lines += [f"Skipped {len(evaluation.skipped)} queries without judgments: {shown}", ""]
    return lines


def index_size_markdown(indexes: dict[str, Any]) -> list[str]:
    """Bytes on disk of each part of each index, in all and per statement."""
    lines: list[str] = []
    for identity, info in indexes.items():
        sizes = info.get("index_bytes")
        if not sizes:
            continue
        statements = max(int(sizes.get("statements", 0)), 1)
        lines += [f"Index parts on disk ({identity}, {statements:,} statements):", ""]
        lines += [_row(["part", "MB", "bytes/statement"]), _row(["---", "---:", "---:"])]
        for part, size in sizes.items():
            if part != "statements":
                lines.append(_row([part, f"{size / 1e6:.1f}", f"{size / statements:,.0f}"]))
        lines.append("")
    return lines


def _round(value: float) -> float | None:
    return None if math.isnan(value) else round(value, 2)


def _cells(evaluation: SetEvaluation, name: str, aggregate: dict[str, float]) -> list[str]:
    cells = []
    for measure in evaluation.measures:
        test = evaluation.test(name, measure)
        mark = "†" if test is not None and test.randomization_p < SIGNIFICANCE_LEVEL else ""
        cells.append(_fmt(aggregate.get(measure)) + mark)
    return cells


def _p_cell(evaluation: SetEvaluation, name: str) -> str:
    test = evaluation.test(name, evaluation.primary)
    return "—" if test is None else f"{test.randomization_p:.3g}"


def _fmt(value: float | None) -> str:
    return "—" if value is None or math.isnan(value) else f"{value:.3f}"


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def _clean(values: dict[str, float]) -> dict[str, float | None]:
    return {k: None if math.isnan(v) else round(v, 4) for k, v in values.items()}


def _slug(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)
