"""Prompt templates, kept as TOML files beside this module and loaded by name and version.

A template lives in ``NAME.vN.toml``. ``load_prompt("NAME")`` gives its latest version and
``load_prompt("NAME@vN")`` a pinned one; a template's ``identity`` (``NAME@vN``) goes into every
answer record and cache key, so results say which prompt made them.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from functools import cache
from importlib import resources

_FILE = re.compile(r"(?P<name>[a-z0-9_]+)\.v(?P<version>\d+)\.toml")
_PINNED = re.compile(r"(?P<name>[a-z0-9_]+)@v(?P<version>\d+)")


@dataclass(frozen=True, slots=True)
class PromptTemplate:
    """A chat prompt: a system message and a user message with ``{placeholders}``."""

    name: str
    version: int
    system: str
    user: str
    # How the sources are laid out for this prompt (rag_app/answering/context.py): "fenced", each source in
    # its own keyed fence with a heading; "lines", one fence around all, each source on one line.
    layout: str = "fenced"

    @property
    def identity(self) -> str:
        return f"{self.name}@v{self.version}"

    def messages(self, **values: str) -> list[dict[str, str]]:
        return [
            {"role": "system", "content": self.system.format(**values).strip()},
            {"role": "user", "content": self.user.format(**values).strip()},
        ]


def _versions() -> dict[str, list[int]]:
    found: dict[str, list[int]] = {}
    for path in resources.files(__name__).iterdir():
        match = _FILE.fullmatch(path.name)
        if match:
            found.setdefault(match["name"], []).append(int(match["version"]))
    return {name: sorted(versions) for name, versions in found.items()}


def available_prompts() -> list[str]:
    return sorted(_versions())


@cache
def load_prompt(name: str) -> PromptTemplate:
    """The template ``NAME`` (latest version) or ``NAME@vN``; unknown names list the known ones."""
    pinned = _PINNED.fullmatch(name)
    base = pinned["name"] if pinned else name
    versions = _versions().get(base)
    if not versions:
        raise KeyError(f"no prompt named {base!r}; available: {', '.join(available_prompts())}")
    version = int(pinned["version"]) if pinned else versions[-1]
    if version not in versions:
        raise KeyError(f"prompt {base!r} has no version {version}; it has {', '.join(f'v{v}' for v in versions)}")
    data = tomllib.loads((resources.files(__name__) / f"{base}.v{version}.toml").read_text(encoding="utf-8"))
    if int(data["version"]) != version:
        raise ValueError(f"prompts/{base}.v{version}.toml says version {data['version']}")
    layout = data.get("layout", "fenced")
    if layout not in ("fenced", "lines"):
        raise ValueError(f"prompts/{base}.v{version}.toml: layout {layout!r} is neither 'fenced' nor 'lines'")
    return PromptTemplate(name=base, version=version, system=data["system"], user=data["user"], layout=layout)
