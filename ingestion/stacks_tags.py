"""Public URLs of Stacks project statements, from the project's ``tags/tags`` file.

Each line is ``TAG,full_label`` where the full label is the chapter's file stem, a dash, and the
label inside the chapter (``00DV,algebra-lemma-NAK``). The tag page is the statement's stable URL.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

STACKS_TAG_URL = "https://stacks.math.columbia.edu/tag/{tag}"


def tags_file_for(directory: Path) -> Path | None:
    """``directory/tags/tags`` when ``directory`` is a checkout of the Stacks project."""
    candidate = directory / "tags" / "tags"
    return candidate if candidate.is_file() else None


@lru_cache(maxsize=4)
def read_tags(path: Path) -> dict[str, str]:
    """Full label to tag; comment lines (``#``) and malformed lines are skipped."""
    tags: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        if not line or line.startswith("#") or "," not in line:
            continue
        tag, label = line.split(",", 1)
        tags[label.strip()] = tag.strip()
    return tags


def stacks_url(tags: dict[str, str], paper_id: str, label: str) -> str:
    tag = tags.get(f"{paper_id}-{label}") if label else None
    return STACKS_TAG_URL.format(tag=tag) if tag else ""
