from __future__ import annotations

from pathlib import Path

import pytest

from retriever.atomic_files import directory_written_whole, write_text_atomically


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
