"""The one settings object: defaults, then a TOML file, then ``RAG_APP_*`` environment variables.

Nested fields are set from the environment with a double underscore, for example
``RAG_APP_LLM__BASE_URL=http://gpu-box:8000/v1`` or ``RAG_APP_RETRIEVAL__TOP_K=8``.
The TOML file is ``$RAG_APP_CONFIG`` if set, else ``rag_app.toml`` in the working directory.

One module per stage: ``retrieval`` (embedders, channels, rankers), ``answering`` (what the model reads
and the checks), ``serving`` (the LLM server), ``store`` (Chroma), ``ingestion``, ``training`` (every
``train`` command under ``training``), ``evaluation``, ``chat``, ``api`` (the HTTP API and the MCP
server). Every class is importable from here.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, ValidationError
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from rag_app.settings.answering import AnswerSettings, QuoteSettings
from rag_app.settings.api import ApiSettings
from rag_app.settings.chat import ConversationSettings, UISettings
from rag_app.settings.evaluation import EvaluationSettings, default_shared_dir
from rag_app.settings.ingestion import ArxivSettings, DaskSettings, IngestionSettings
from rag_app.settings.retrieval import (
    DuplicateSettings,
    EmbeddingSettings,
    FormulaSettings,
    PaperSettings,
    RankerSettings,
    RerankSettings,
    RetrievalSettings,
    SecondEmbeddingSettings,
)
from rag_app.settings.serving import LlamaCppSettings, LLMSettings, VLLMSettings
from rag_app.settings.store import HNSWSettings, StoreSettings
from rag_app.settings.training import (
    EmbedTrainingSettings,
    QueryAdapterTrainingSettings,
    RankerTrainingSettings,
    RerankTrainingSettings,
    TrainingSettings,
)

__all__ = [
    "AnswerSettings", "ApiSettings", "ArxivSettings", "ConversationSettings", "DaskSettings", "DuplicateSettings",
    "EmbedTrainingSettings", "EmbeddingSettings", "EvaluationSettings", "FormulaSettings", "HNSWSettings",
    "IngestionSettings", "LLMSettings", "LlamaCppSettings", "PaperSettings", "QueryAdapterTrainingSettings",
    "QuoteSettings", "RankerSettings", "RankerTrainingSettings", "RerankSettings", "RerankTrainingSettings",
    "RetrievalSettings", "SecondEmbeddingSettings", "Settings", "SettingsOverrideError", "StoreSettings",
    "TrainingSettings", "UISettings", "VLLMSettings", "default_data_dir", "default_shared_dir",
]  # fmt: skip

CONFIG_ENV = "RAG_APP_CONFIG"
DEFAULT_CONFIG_FILE = "rag_app.toml"


class SettingsOverrideError(ValueError):
    """A setting given on the command line (or to ``with_overrides``) that its field refuses."""


def default_data_dir() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "rag-app"


class Settings(BaseSettings):
    """Everything configurable, grouped by stage."""

    model_config = SettingsConfigDict(env_prefix="RAG_APP_", env_nested_delimiter="__", extra="ignore")

    data_dir: Path = Field(default_factory=default_data_dir)
    index_dir: Path | None = Field(None, description="defaults to DATA_DIR/index")
    embedding: EmbeddingSettings = Field(default_factory=EmbeddingSettings)
    retrieval: RetrievalSettings = Field(default_factory=RetrievalSettings)
    rerank: RerankSettings = Field(default_factory=RerankSettings)
    ranker: RankerSettings = Field(default_factory=RankerSettings)
    second_embedding: SecondEmbeddingSettings = Field(default_factory=SecondEmbeddingSettings)
    papers: PaperSettings = Field(default_factory=PaperSettings)
    duplicates: DuplicateSettings = Field(default_factory=DuplicateSettings)
    llm: LLMSettings = Field(default_factory=LLMSettings)
    answers: AnswerSettings = Field(default_factory=AnswerSettings)
    conversation: ConversationSettings = Field(default_factory=ConversationSettings)
    ui: UISettings = Field(default_factory=UISettings)
    ingestion: IngestionSettings = Field(default_factory=IngestionSettings)
    arxiv: ArxivSettings = Field(default_factory=ArxivSettings)
    evaluation: EvaluationSettings = Field(default_factory=EvaluationSettings)
    training: TrainingSettings = Field(default_factory=TrainingSettings)
    # The old place of training.query_adapter: declared only so that the environment source reads it, and
    # refused with its new name (_removed_keys_refused), so it is always None here.
    query_adapter_training: dict[str, Any] | None = Field(
        None, exclude=True, description="removed (issue 93): training.query_adapter"
    )
    formula: FormulaSettings = Field(default_factory=FormulaSettings)
    store: StoreSettings = Field(default_factory=StoreSettings)
    api: ApiSettings = Field(default_factory=ApiSettings)

    def with_overrides(self, changes: Mapping[str, object]) -> Settings:
        """A copy with ``changes`` applied and validated, keys dotted (``{"training.embed.epochs": 2}``);
        a value of None leaves its key as it is. Unlike ``model_copy(update=...)``, a value the field refuses
        (a learning rate of 0) raises :class:`SettingsOverrideError` naming the key."""
        data = self.model_dump()
        applied = {key: value for key, value in changes.items() if value is not None}
        for key, value in applied.items():
            *path, last = key.split(".")
            section = data
            for part in path:
                if not isinstance(section.get(part), dict):
                    raise SettingsOverrideError(f"{key}: no such setting")
                section = section[part]
            if last not in section:
                raise SettingsOverrideError(f"{key}: no such setting")
            section[last] = value
        try:
            return type(self).model_validate(data)
        except ValidationError as error:
            raise SettingsOverrideError(_override_errors(error, applied)) from error

    @property
    def resolved_index_dir(self) -> Path:
        return self.index_dir if self.index_dir is not None else self.data_dir / "index"

    @property
    def resolved_registry_dir(self) -> Path:
        return self.embedding.registry_dir or self.data_dir / "models" / "embeddings"

    @property
    def resolved_onnx_dir(self) -> Path | None:
        """Where one query's encoder is exported for ONNX Runtime (None: queries run on torch). A cache,
        made again from the model when missing, so outside the data directory by default."""
        if self.embedding.query_runtime != "onnx":
            return None
        cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
        return self.embedding.onnx_dir or cache / "rag-app" / "onnx"

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # Precedence: explicit arguments, then the environment, then the TOML file. A removed key
        # (removed_keys) is refused in any of them, with its new name: never read as an alias, never ignored.
        toml = TomlConfigSettingsSource(settings_cls, toml_file=_config_file())
        return tuple(_RemovedKeysRefused(settings_cls, source) for source in (init_settings, env_settings, toml))

    @classmethod
    def load(cls, config_file: Path | None = None, **overrides: Any) -> Settings:
        """Settings from ``config_file`` (else the default file) and the environment."""
        if config_file is not None and not config_file.is_file():
            raise FileNotFoundError(f"settings file not found: {config_file}")
        token = _explicit_config_file.set(config_file)
        try:
            return cls(**overrides)
        finally:
            _explicit_config_file.reset(token)


class RemovedSettingError(SettingsOverrideError):
    """A removed settings key, found in a settings source: the message names the key to use."""


def removed_keys(data: Any) -> list[str]:
    """``data``'s removed keys, each with the key that replaced it."""
    if not isinstance(data, dict):
        return []
    found = []
    if data.get("query_adapter_training") is not None:
        found.append("query_adapter_training: use training.query_adapter")
    for stage in ("rerank", "ranker"):
        section = data.get(stage)
        if isinstance(section, dict) and "training" in section:
            found.append(f"{stage}.training: use training.{stage}")
    for stage in ("rerank", "second_embedding"):
        section = data.get(stage)
        section = section.model_dump() if isinstance(section, BaseModel) else section
        for key in ("ask", "chat"):
            if isinstance(section, dict) and key in section:
                found.append(f"{stage}.{key}: use {stage}.answer (every answer) or {stage}.search (every search)")
    training = data.get("training")
    if isinstance(training, dict):
        embed_keys = EmbedTrainingSettings.model_fields
        found += [f"training.{key}: use training.embed.{key}" for key in training if key in embed_keys]
    return found


class _RemovedKeysRefused(PydanticBaseSettingsSource):
    """A settings source that refuses the removed keys (``removed_keys``), naming their new place."""

    def __init__(self, settings_cls: type[BaseSettings], source: PydanticBaseSettingsSource) -> None:
        super().__init__(settings_cls)
        self.source = source

    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:
        return self.source.get_field_value(field, field_name)

    def __call__(self) -> dict[str, Any]:
        data = self.source()
        removed = removed_keys(data)
        if removed:
            raise RemovedSettingError(f"settings keys removed in issue 93 (CHANGELOG.md): {'; '.join(removed)}")
        return data


def _override_errors(error: ValidationError, applied: Mapping[str, object]) -> str:
    """One line per refused value: its dotted key, why, and the value given."""
    lines = []
    for problem in error.errors():
        key = ".".join(str(part) for part in problem["loc"])
        given = f" (got {applied[key]!r})" if key in applied else ""
        lines.append(f"{key}: {problem['msg']}{given}")
    return "; ".join(lines)


# Set only for the duration of Settings.load(config_file=...), so construction can see it.
_explicit_config_file: ContextVar[Path | None] = ContextVar("explicit_config_file", default=None)


def _config_file() -> Path | None:
    explicit = _explicit_config_file.get()
    if explicit is not None:
        return explicit
    configured = os.environ.get(CONFIG_ENV)
    if configured:
        return Path(configured)
    default = Path(DEFAULT_CONFIG_FILE)
    return default if default.is_file() else None
