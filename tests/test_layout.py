"""The house rules a newcomer relies on to read the code (issue 49): no module over 500 lines, no class
with over 25 methods. Generated and data files are not Python here, so every module counts."""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("rag_app", "ingestion", "retriever", "ui", "prompts")
MAX_MODULE_LINES = 500
MAX_CLASS_METHODS = 25


def _modules() -> list[Path]:
    return sorted(file for package in PACKAGES for file in (ROOT / package).rglob("*.py"))


def test_no_module_is_over_500_lines() -> None:
    lines = {str(file.relative_to(ROOT)): len(file.read_text().splitlines()) for file in _modules()}
    assert {name: count for name, count in lines.items() if count > MAX_MODULE_LINES} == {}


def test_no_class_has_over_25_methods() -> None:
    crowded = {}
    for file in _modules():
        for node in ast.walk(ast.parse(file.read_text())):
            if isinstance(node, ast.ClassDef):
                methods = [n for n in node.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
                if len(methods) > MAX_CLASS_METHODS:
                    crowded[f"{file.relative_to(ROOT)}:{node.name}"] = len(methods)
    assert crowded == {}


# Issue 77: a clone travels light. Model weights ship in the repository (the embedded default runs
# without a hub), so they are counted apart; everything else stays small and readable in a diff.
# Issue 83 raised the cap from 8.0 to 8.25 MB: the code and its tests grow with each feature (that issue
# added 70 KB of modules, tests and a question set); results still come in as summaries, not per-query reports.
# Issue 84 raised it to 8.4 MB for its 60 KB research-claims set and the claims package (its new results are kept
# as Markdown summaries only).
# Issue 85 raised it to 8.45 MB: the hostile-client guards, their tests and probe (about 45 KB of code and tests;
# the probe's and the second round's results are Markdown summaries only).
# Issue 86 raised it to 8.5 MB: the answer record's schema in docs/openapi.json, exact search, its bench and tests
# (about 20 KB; the bench's result is one Markdown summary).
# Issue 92 raised it to 8.65 MB: the set written apart, the split record, the chooser and its bench.
MAX_TRACKED_BYTES = 9_300_000  # issue 93: the changelog, the lexicon, one test per defect; issue 94: the build;
# issue 94 the benches; issues 99-100: the commit log and its tests, the no-answer set, the verdict reader, its pairs;
# issue 100 again: the verdict's measurements through ask and its reliability plots (about 250 KB)
MAX_FILE_BYTES = 1_000_000
WEIGHT_FOLDERS = ("retriever/models/formula_weights/", "retriever/models/", "rag_app/answering/verdict_weights/")


def _tracked_files() -> list[Path]:
    import shutil
    import subprocess

    import pytest

    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout: nothing is tracked")
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    return [ROOT / name for name in listed.decode().split("\0") if name]


def test_tracked_files_other_than_weights_are_under_8_mb_and_none_over_1_mb() -> None:
    sizes = {
        str(path.relative_to(ROOT)): path.stat().st_size
        for path in _tracked_files()
        if path.is_file() and not str(path.relative_to(ROOT)).startswith(WEIGHT_FOLDERS)
    }
    assert {name: size for name, size in sizes.items() if size > MAX_FILE_BYTES} == {}
    assert sum(sizes.values()) < MAX_TRACKED_BYTES, f"{sum(sizes.values()):,} bytes tracked"


def test_every_benchmark_has_a_line_in_bench_readme_and_every_experiment_names_its_decision() -> None:
    readme = (ROOT / "bench" / "README.md").read_text(encoding="utf-8")
    unlisted = [path.name for path in (ROOT / "bench").glob("*.py") if f"| `{path.name}` |" not in readme]
    assert unlisted == []
    for path in (ROOT / "bench" / "experiments").glob("*.py"):
        assert f"| `{path.name}` |" in readme, f"{path.name} missing from bench/README.md"
        docstring = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
        assert "Decision recorded in" in docstring and "docs/" in docstring, f"{path.name}: which doc records it?"


ISSUE_NUMBER = re.compile(r"\b[Ii]ssues? ?#?\d+")


def _comments_and_docstrings(source: str) -> list[tuple[int, str]]:
    """Each comment and docstring of a module, with its line (string literals the program uses are not read)."""
    found = [(token.start[0], token.string) for token in tokenize.generate_tokens(io.StringIO(source).readline)
             if token.type == tokenize.COMMENT]  # fmt: skip
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            docstring = ast.get_docstring(node, clean=False)
            if docstring:
                found.append((node.body[0].lineno, docstring))
    return found


def test_no_comment_or_docstring_tells_issue_history() -> None:
    """What the code does and the measured reason belong in the code; which issue changed it, in CHANGELOG.md."""
    told = [
        f"{file.relative_to(ROOT)}:{line}"
        for package in ("rag_app", "retriever", "ingestion", "ui", "prompts", "scripts")
        for file in sorted((ROOT / package).rglob("*.py"))
        for line, text in _comments_and_docstrings(file.read_text(encoding="utf-8"))
        if ISSUE_NUMBER.search(text)
    ]
    assert told == []
    example = '"""Issue 7: moved."""\nx = "issue 8"  # issue 9\n'
    assert _comments_and_docstrings(example) == [(2, "# issue 9"), (1, "Issue 7: moved.")]
