"""The house rules a newcomer relies on to read the code (issue 49): no module over 500 lines, no class
with over 25 methods. Generated and data files are not Python here, so every module counts."""

from __future__ import annotations

import ast
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
