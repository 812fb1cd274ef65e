"""Prompt templates, kept as TOML files beside this module and loaded by name."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import cache
from importlib import resources


@dataclass(frozen=True, slots=True)
class PromptTemplate:
    """A chat prompt: a system message and a user message with ``{placeholders}``."""

    name: str
    version: int
    system: str
    user: str

    def messages(self, **values: str) -> list[dict[str, str]]:
        return [
            {"role": "system", "content": self.system.format(**values).strip()},
            {"role": "user", "content": self.user.format(**values).strip()},
        ]


def available_prompts() -> list[str]:
    return sorted(p.name.removesuffix(".toml") for p in resources.files(__name__).iterdir() if p.name.endswith(".toml"))


@cache
def load_prompt(name: str) -> PromptTemplate:
    """The template ``prompts/NAME.toml``; unknown names list the known ones."""
    path = resources.files(__name__) / f"{name}.toml"
    if not path.is_file():
        raise KeyError(f"no prompt named {name!r}; available: {', '.join(available_prompts())}")
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    return PromptTemplate(name=name, version=int(data["version"]), system=data["system"], user=data["user"])
