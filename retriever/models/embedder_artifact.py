"""Where a small model trained for one embedder lives, and how a setting names it.

Query adapters and learned rankers are both trained against one embedder's vectors and shipped inside
the package, one directory per embedder identity. A setting names one as ``packaged`` (the one shipped
for the embedder in use), ``auto`` (that one when it exists, else none), ``none``, or a directory
written by its training command.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from retriever.models.embedder import identity_directory_name

Loaded = TypeVar("Loaded")


@dataclass(frozen=True)
class EmbedderArtifact:
    """One kind of per-embedder model: ``what`` it is called, where the packaged ones live, the files a
    directory must hold, the command that trains one, how to turn it off, and the error it raises."""

    what: str
    packaged_root: Path
    files: tuple[str, ...]
    build_command: str
    turn_off: str
    error: type[Exception]

    def packaged_directory(self, embedder_identity: str) -> Path:
        """Where the packaged one for an embedder lives (one directory per embedder identity)."""
        return self.packaged_root / identity_directory_name(embedder_identity)

    def locate(self, spec: str, embedder_identity: str | None) -> tuple[Path, str]:
        """The directory ``spec`` names and how to name it in messages; ``error`` when a file is missing."""
        if spec != "packaged":
            directory, described = Path(spec).expanduser(), f"{self.what} {spec!r}"
        elif embedder_identity is None:
            raise self.error(f"the packaged {self.what} is chosen by the embedder: name the embedder")
        else:
            directory = self.packaged_directory(embedder_identity)
            described = f"the packaged {self.what} for {embedder_identity}"
        if not all((directory / name).is_file() for name in self.files):
            expected = " and ".join(self.files)
            raise self.error(
                f"{described} is missing ({expected} expected in {directory}); build one with "
                f"`{self.build_command}` or turn it off ({self.turn_off})"
            )
        return directory, described

    def check_embedder(self, described: str, trained_for: str, embedder_identity: str | None) -> None:
        if embedder_identity is not None and trained_for != embedder_identity:
            raise self.error(
                f"{described} was trained for the embedder {trained_for!r}, but the index uses "
                f"{embedder_identity!r}; train one for it with `{self.build_command}`"
            )

    def configured(self, spec: str | None, embedder_identity: str, load: Callable[[str, str], Loaded]) -> Loaded | None:
        """What a setting names: unset or ``none``, nothing; ``auto``, the packaged one when it was
        trained for this embedder (another embedder goes without); else that one, which must fit."""
        if not spec or spec == "none":
            return None
        if spec == "auto":
            try:
                return load("packaged", embedder_identity)
            except self.error:
                return None
        return load(spec, embedder_identity)
