"""A failure in the chat is shown in words and logged whole (issue 93: the pages showed it, nothing was logged)."""

from __future__ import annotations

import ast
import logging
from pathlib import Path

import pytest

UI = Path(__file__).resolve().parents[2] / "ui"


def test_every_page_that_catches_any_error_logs_it() -> None:
    """Each ``except Exception`` of the chat's pages hands the error to ``show_failure``, which logs it."""
    silent = []
    for file in sorted(UI.glob("*.py")):
        for node in ast.walk(ast.parse(file.read_text())):
            if isinstance(node, ast.ExceptHandler) and isinstance(node.type, ast.Name) and node.type.id == "Exception":
                calls = {ast.unparse(call.func) for call in ast.walk(node) if isinstance(call, ast.Call)}
                if "show_failure" not in calls:
                    silent.append(f"{file.name}:{node.lineno}")
    assert silent == []


def test_a_failure_is_logged_with_its_traceback(caplog: pytest.LogCaptureFixture) -> None:
    from ui.failures import show_failure

    try:
        raise OSError("the index is on a disk that went away")
    except OSError as error:
        with caplog.at_level(logging.ERROR, logger="ui"):
            show_failure("The search failed", error)
    [record] = caplog.records
    assert record.getMessage() == "The search failed: the index is on a disk that went away"
    assert record.exc_info is not None and record.exc_info[1] is not None
