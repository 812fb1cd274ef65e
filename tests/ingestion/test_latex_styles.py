"""The variety of real papers, one small paper per style (issue 26), each with its expected statements.

Each directory of ``tests/fixtures/latex_styles`` is what a user would point ``rag-app ingest`` at: an
arXiv-like paper folder in one document class, theorem package or file layout. ``expected.json`` lists,
per paper, every statement in order (kind, name, label, number, text) and the files skipped as fragments;
the whole list must match, so a statement lost, invented, or of the wrong kind fails the test.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ingestion import LatexIngestor, Severity

STYLES = Path(__file__).resolve().parents[1] / "fixtures" / "latex_styles"


def _statement(record) -> dict[str, object]:
    statement = {
        "kind": record.kind.value,
        "name": record.name,
        "label": record.label,
        "number": record.metadata.get("number", ""),
        "text": record.text,
    }
    if len(record.labels) > 1:
        statement["labels"] = list(record.labels)
    return statement


@pytest.mark.parametrize("style", sorted(p.name for p in STYLES.iterdir() if p.is_dir()))
def test_every_style_gives_exactly_its_expected_statements(style: str) -> None:
    expected = json.loads((STYLES / style / "expected.json").read_text())
    results = list(LatexIngestor().ingest([STYLES / style]))
    papers = {r.paper_id: [_statement(record) for record in r.records] for r in results if r.paper_id}
    if "numbers_not_checked" in expected:
        for found in papers.values():
            for statement in found:
                statement.pop("number")
    assert papers == expected["papers"]
    problems = [p for r in results for p in r.problems]
    assert [p for p in problems if p.severity is Severity.ERROR] == []
    skipped = sorted(Path(p.path).relative_to(STYLES / style).as_posix() for p in problems if "fragment" in p.reason)
    assert skipped == expected.get("fragments", [])
    warnings = sorted(p.reason for p in problems if "fragment" not in p.reason)
    assert all(any(part in w for w in warnings) for part in expected.get("warnings", [])) and len(warnings) == len(
        expected.get("warnings", [])
    )


def test_the_style_set_covers_the_layouts_it_promises() -> None:
    styles = {p.name for p in STYLES.iterdir() if p.is_dir()}
    assert len(styles) >= 25  # issue 26's styles and issue 38's mechanisms
