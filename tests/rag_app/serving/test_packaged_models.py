from pathlib import Path

import pytest

from rag_app.serving.packaged_models import PACKAGED_GGUFS, PackagedGGUF, PackagedModelError, assemble, resolve_gguf


def test_single_file_packaged_model_is_found_and_checked(tmp_path: Path) -> None:
    path = resolve_gguf("smollm2-135m-instruct", tmp_path)
    assert path.stat().st_size == PACKAGED_GGUFS["smollm2-135m-instruct"].size
    assert path.read_bytes()[:4] == b"GGUF"


def test_split_model_parts_are_all_installed() -> None:
    # Assembling the 1.1 GB default takes seconds and disk; here we check every chunk is present.
    from rag_app.serving.packaged_models import _part_path

    spec = PACKAGED_GGUFS["qwen2.5-coder-1.5b-instruct"]
    sizes = [_part_path(module).stat().st_size for module in spec.parts]
    assert len(sizes) == 22 and sum(sizes) == spec.size


def test_assembly_concatenates_in_order_and_rejects_wrong_size(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    chunks = {"part_a": b"GGUF1234", "part_b": b"5678"}
    for name, data in chunks.items():
        (tmp_path / name).write_bytes(data)
    monkeypatch.setattr("rag_app.serving.packaged_models._part_path", lambda module: tmp_path / module)
    good = PackagedGGUF(name="tiny", file_name="tiny.gguf", size=12, parts=("part_a", "part_b"))
    target = assemble(good, tmp_path / "models", show_progress=False)
    assert target.read_bytes() == b"GGUF12345678"
    assert assemble(good, tmp_path / "models", show_progress=False) == target  # reused, not rebuilt
    bad = PackagedGGUF(name="bad", file_name="bad.gguf", size=99, parts=("part_a",))
    with pytest.raises(PackagedModelError, match="expected 99"):
        assemble(bad, tmp_path / "models", show_progress=False)
    assert not (tmp_path / "models" / "bad.gguf").exists()


def test_unknown_model_and_missing_gguf_path(tmp_path: Path) -> None:
    with pytest.raises(PackagedModelError, match="known:"):
        resolve_gguf("gpt-17", tmp_path)
    with pytest.raises(PackagedModelError, match="not found"):
        resolve_gguf(str(tmp_path / "absent.gguf"), tmp_path)


def test_local_server_alias_is_the_model_name_or_the_gguf_stem(tmp_path: Path) -> None:
    from rag_app.serving.llm_server import llama_cpp_server_from_settings
    from rag_app.settings import Settings

    settings = Settings(data_dir=tmp_path)
    # A packaged name keeps its dots ("qwen2.5-coder-1.5b-instruct" is not a file name).
    assert llama_cpp_server_from_settings(settings, "smollm2-135m-instruct").model_alias == "smollm2-135m-instruct"
    gguf = resolve_gguf("smollm2-135m-instruct", tmp_path)
    server = llama_cpp_server_from_settings(settings, str(gguf), port=0)
    assert server.model_alias == "SmolLM2-135M-Instruct.Q4_1" and server.model_path == gguf
    assert server.host == "127.0.0.1" and server.port > 0


def test_two_assemblies_at_once_each_write_their_own_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Both wrote one fixed ``.partial`` file: the second rename found it gone, or a reader a torn file."""
    import shutil
    import threading
    import time
    from concurrent.futures import ThreadPoolExecutor

    chunks = {"part_a": b"GGUF1234", "part_b": b"5678"}
    for name, data in chunks.items():
        (tmp_path / name).write_bytes(data)
    monkeypatch.setattr("rag_app.serving.packaged_models._part_path", lambda module: tmp_path / module)
    both_copying = threading.Barrier(2)
    copy = shutil.copyfileobj

    def slow_copy(source, target, length=0):  # type: ignore[no-untyped-def]
        copy(source, target)
        target.flush()
        if source.name.endswith("part_a"):
            both_copying.wait(timeout=10)  # the two writers are now both mid-file
        time.sleep(0.05)

    monkeypatch.setattr("rag_app.serving.packaged_models.shutil.copyfileobj", slow_copy)
    spec = PackagedGGUF(name="tiny", file_name="tiny.gguf", size=12, parts=("part_a", "part_b"))
    with ThreadPoolExecutor(2) as pool:
        targets = list(pool.map(lambda _: assemble(spec, tmp_path / "models", show_progress=False), range(2)))
    assert targets[0] == targets[1] and targets[0].read_bytes() == b"GGUF12345678"
    assert sorted(p.name for p in (tmp_path / "models").iterdir()) == ["tiny.gguf"]
