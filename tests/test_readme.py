"""The README is the first thing a new user reads: it must say what the tool does today."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def _section(title: str) -> str:
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## )", README, re.MULTILINE | re.DOTALL)
    assert match, f"README has no '## {title}' section"
    return match.group(1)


def test_opening_names_every_implemented_source_as_present() -> None:
    opening = README.split("\n## ", 1)[0]
    assert "LaTeX" in opening and "arXiv" in opening and "Math StackExchange" in opening
    # Both sources are ingested today (`ingest`, `ingest arxiv`, `ingest mse`): nothing is "next".
    assert not re.search(r"\b(next|coming|soon|planned|will support)\b", opening, re.IGNORECASE), opening


def test_quick_start_is_two_commands_and_ci_runs_the_second() -> None:
    [block] = re.findall(r"```bash\n(.*?)```", _section("Quick start"), re.DOTALL)
    commands = [line.split("#", 1)[0].strip() for line in block.splitlines() if line.split("#", 1)[0].strip()]
    assert len(commands) == 2, commands
    assert commands[1] in (ROOT / ".ci" / "run").read_text()
