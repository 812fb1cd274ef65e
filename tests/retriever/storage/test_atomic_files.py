from __future__ import annotations

from pathlib import Path

import pytest

from retriever.storage.atomic_files import directory_written_whole, write_text_atomically


def test_a_text_file_is_replaced_whole_and_leaves_nothing_beside_it(tmp_path: Path) -> None:
    path = tmp_path / "manifest.json"
    write_text_atomically(path, "old")
    write_text_atomically(path, "new é")
    assert path.read_text(encoding="utf-8") == "new é" and sorted(p.name for p in tmp_path.iterdir()) == [path.name]


def test_a_directory_is_replaced_whole_or_left_as_it_was(tmp_path: Path) -> None:
    directory = tmp_path / "model"
    with directory_written_whole(directory) as partial:
        (partial / "weights").write_text("v1")
    with pytest.raises(RuntimeError), directory_written_whole(directory) as partial:
        (partial / "weights").write_text("half of v2")
        raise RuntimeError("killed while writing")
    assert (directory / "weights").read_text() == "v1"
    with directory_written_whole(directory) as partial:
        (partial / "card.json").write_text("v3")
    assert sorted(p.name for p in directory.iterdir()) == ["card.json"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model"]


def test_a_reader_never_finds_the_directory_missing_while_it_is_replaced(tmp_path: Path) -> None:
    """The old directory was deleted before the new one moved in: a reader could see neither."""
    import threading

    directory = tmp_path / "segment"
    with directory_written_whole(directory) as partial:
        (partial / "terms.npy").write_text("0")
    missing: list[int] = []
    done = threading.Event()

    def read() -> None:
        while not done.is_set():
            if not (directory / "terms.npy").exists():
                missing.append(1)

    reader = threading.Thread(target=read)
    reader.start()
    try:
        for version in range(1, 100):
            with directory_written_whole(directory) as partial:
                (partial / "terms.npy").write_text(str(version))
    finally:
        done.set()
        reader.join()
    assert missing == [] and (directory / "terms.npy").read_text() == "99"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["segment"]


def test_two_writers_of_one_file_each_stage_their_own(tmp_path: Path) -> None:
    """A fixed ``.partial`` name let two writers write into one staging file (a torn or lost file)."""
    from concurrent.futures import ThreadPoolExecutor

    path = tmp_path / "manifest.json"
    texts = [str(n) * 50_000 for n in range(8)]
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda text: write_text_atomically(path, text), texts * 4))
    assert path.read_text(encoding="utf-8") in texts
    assert sorted(p.name for p in tmp_path.iterdir()) == ["manifest.json"]
