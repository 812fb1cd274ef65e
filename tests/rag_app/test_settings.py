import re
from pathlib import Path

import pytest

from rag_app.settings import Settings


def test_defaults_are_the_embedded_setup(tmp_path: Path) -> None:
    settings = Settings()
    assert settings.embedding.model == "packaged:all-MiniLM-L6-v2"
    assert settings.llm.base_url is None  # start the local llama.cpp server
    assert settings.llm.extra_body == {"repeat_penalty": 1.0}
    assert settings.retrieval.mode == "hybrid-formula" and settings.retrieval.fusion == "linear"
    assert settings.resolved_index_dir == settings.data_dir / "index"


def test_toml_file_then_environment_then_arguments(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "rag.toml"
    config.write_text(
        '[retrieval]\ntop_k = 9\nrrf_k = 10\n[llm]\nbase_url = "http://gpu:8000/v1"\nmodel = "Qwen/Qwen2.5-7B"\n'
    )
    monkeypatch.setenv("RAG_APP_RETRIEVAL__TOP_K", "7")
    settings = Settings.load(config)
    assert settings.retrieval.top_k == 7  # the environment beats the file
    assert settings.retrieval.rrf_k == 10
    assert settings.llm.base_url == "http://gpu:8000/v1"
    assert Settings.load(config, index_dir=tmp_path / "x").resolved_index_dir == tmp_path / "x"
    # The explicit file applies to that call only.
    assert Settings().llm.base_url is None


def test_config_file_from_environment_and_missing_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "rag.toml"
    config.write_text('data_dir = "/srv/rag"\n')
    monkeypatch.setenv("RAG_APP_CONFIG", str(config))
    monkeypatch.delenv("RAG_APP_DATA_DIR")
    assert Settings().data_dir == Path("/srv/rag")
    with pytest.raises(FileNotFoundError, match=r"nowhere\.toml"):
        Settings.load(tmp_path / "nowhere.toml")


def test_the_auto_device_is_the_gpu_only_when_torch_sees_one(monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    from rag_app.search.embedder_factory import resolve_device

    assert resolve_device("cpu") == "cpu" and resolve_device("cuda:1") == "cuda:1"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert resolve_device("auto") == "cpu"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert resolve_device("auto") == "cuda"


@pytest.mark.parametrize(
    ("toml", "env", "named"),
    [
        ("[query_adapter_training]\nepochs = 7\n", {}, "query_adapter_training: use training.query_adapter"),
        ("[rerank.training]\nmax_queries = 9\n", {}, "rerank.training: use training.rerank"),
        ("[ranker.training]\ntrees = 5\n", {}, "ranker.training: use training.ranker"),
        ("[training]\nepochs = 3\n", {}, "training.epochs: use training.embed.epochs"),
        ("[rerank]\nask = true\n", {}, "rerank.ask: use rerank.answer"),
        ("", {"RAG_APP_SECOND_EMBEDDING__CHAT": "false"}, "second_embedding.chat: use second_embedding.answer"),
        ("", {"RAG_APP_QUERY_ADAPTER_TRAINING__EPOCHS": "11"}, "query_adapter_training: use training.query_adapter"),
    ],
)
def test_a_removed_key_is_refused_with_its_new_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, toml: str, env: dict[str, str], named: str
) -> None:
    """Issue 93: the keys read as aliases (issues 77 and 86) are removed; a file or environment that still sets
    one fails with the key to use, rather than being read silently or ignored."""
    from rag_app.settings import RemovedSettingError

    config = tmp_path / "rag_app.toml"
    config.write_text(toml, encoding="utf-8")
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(RemovedSettingError, match=re.escape(named)):
        Settings.load(config)


def test_training_lives_under_one_key(tmp_path: Path) -> None:
    config = tmp_path / "rag_app.toml"
    config.write_text("[training.embed]\nmax_pairs = 100\n[training.ranker]\ntrees = 5\n", encoding="utf-8")
    settings = Settings.load(config)
    assert (settings.training.embed.max_pairs, settings.training.ranker.trees) == (100, 5)


def test_one_stack_per_task(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 86: `rerank.chat` and `second_embedding.chat` made the chat's Search page rank as no other search."""
    defaults = Settings()
    assert (defaults.rerank.search, defaults.rerank.answer) == (False, False)
    assert (defaults.second_embedding.search, defaults.second_embedding.answer) == (False, True)
    monkeypatch.setenv("RAG_APP_RERANK__ANSWER", "true")
    assert Settings().rerank.answer is True
    assert "ask" not in Settings().rerank.model_dump() and "chat" not in Settings().rerank.model_dump()
    # issue 93: PerTask read ``answer`` without declaring it; every stage switched per task declares both
    from rag_app.settings.retrieval import PerTask

    assert {"search", "answer"} <= set(PerTask.model_fields)


def test_overrides_are_validated_as_the_file_is(tmp_path: Path) -> None:
    """``model_copy(update=...)`` skipped validation: a learning rate of 0 trained with a rate of 0."""
    from rag_app.settings import SettingsOverrideError

    settings = Settings(data_dir=tmp_path)
    with pytest.raises(SettingsOverrideError, match=r"training\.embed\.learning_rate: .*greater than 0 \(got 0\)"):
        settings.with_overrides({"training.embed.learning_rate": 0})
    with pytest.raises(SettingsOverrideError, match=r"training\.embed\.learning_speed: no such setting"):
        settings.with_overrides({"training.embed.learning_speed": 1})
    with pytest.raises(SettingsOverrideError, match=r"max_pairs_per_kind must be at least 1"):
        settings.with_overrides({"training.embed.max_pairs_per_kind": {"section": 0}})
    changed = settings.with_overrides({"training.embed.learning_rate": 1e-4, "retrieval.top_k": None})
    assert changed.training.embed.learning_rate == 1e-4 and changed.retrieval.top_k == settings.retrieval.top_k
    assert settings.training.embed.learning_rate is None  # the original is untouched


def test_the_statement_rewrite_for_answers_is_named_answers() -> None:
    """Issue 93: ``statement_rewrite = "ask"`` read as the command; it means "for answers only"."""
    from rag_app.settings import SettingsOverrideError

    renamed = Settings().with_overrides({"retrieval.statement_rewrite": "answers"})
    assert renamed.retrieval.statement_rewrite == "answers"
    with pytest.raises(SettingsOverrideError, match='"ask" was renamed "answers"'):
        Settings().with_overrides({"retrieval.statement_rewrite": "ask"})
