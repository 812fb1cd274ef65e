"""``[n]`` citations in generated answers: found, checked against the sources, cleaned."""

from __future__ import annotations

import re
from dataclasses import dataclass

# [3], [1, 2], [1; 4], [2-4]; not LaTeX's \[ (display math) nor optional arguments like [a].
CITATION_PATTERN = re.compile(r"(?<!\\)\[(\s*\d+\s*(?:(?:[,;]|[-–])\s*\d+\s*)*)\]")


@dataclass(frozen=True, slots=True)
class CitationCheck:
    """The answer text with invalid citations removed, and which numbers were cited."""

    text: str
    cited: list[int]
    invalid: list[int]


def _numbers(group: str) -> list[int]:
    numbers: list[int] = []
    for part in re.split(r"[,;]", group):
        bounds = [int(n) for n in re.split(r"[-–]", part) if n.strip()]
        if len(bounds) == 2 and bounds[0] <= bounds[1] and bounds[1] - bounds[0] < 50:
            numbers.extend(range(bounds[0], bounds[1] + 1))
        else:
            numbers.extend(bounds)
    return numbers


def citation_numbers(text: str) -> list[int]:
    """Every number cited in ``text``, in order (``[1-3]`` is 1, 2, 3)."""
    return [n for match in CITATION_PATTERN.finditer(text) for n in _numbers(match.group(1))]


def check_citations(text: str, source_count: int) -> CitationCheck:
    """Keep citations to sources 1..``source_count``; drop (and report) the others."""
    cited: list[int] = []
    invalid: list[int] = []

    def replace(match: re.Match[str]) -> str:
        numbers = _numbers(match.group(1))
        valid = [n for n in numbers if 1 <= n <= source_count]
        invalid.extend(n for n in numbers if not 1 <= n <= source_count)
        cited.extend(n for n in valid if n not in cited)
        return "".join(f"[{n}]" for n in valid)

    cleaned = CITATION_PATTERN.sub(replace, text)
    cleaned = re.sub(r"[ \t]+([.,;:])", r"\1", cleaned) if invalid else cleaned
    return CitationCheck(text=cleaned, cited=cited, invalid=sorted(set(invalid)))
