"""Unpacking untrusted archives: nothing outside the target, no links or devices, bounded size.

arXiv e-prints are what their authors uploaded. A member with an absolute path or ``..``, a symbolic
or hard link, a device or FIFO, too many members, or more bytes than the limits allow (a
decompression bomb) refuses the whole archive with the reason; the paper is reported, never written.
"""

from __future__ import annotations

import gzip
import io
import shutil
import tarfile
import zipfile
from pathlib import Path, PurePosixPath
from typing import IO

from ingestion.ingest_limits import IngestLimits

_CHUNK = 1 << 20


class UnsafeArchiveError(ValueError):
    """An archive that must not be unpacked, and why."""


def content_type(head: bytes) -> str:
    """``gzip``, ``tar``, ``zip``, ``pdf``, ``postscript`` or ``text``, from a file's first bytes."""
    if head.startswith(b"\x1f\x8b"):
        return "gzip"
    if head.startswith(b"%PDF"):
        return "pdf"
    if head.startswith(b"%!PS"):
        return "postscript"
    if head.startswith(b"PK\x03\x04"):
        return "zip"
    if len(head) >= 262 and head[257:262] == b"ustar":
        return "tar"
    return "text"


def read_head(path: Path, size: int = 512) -> bytes:
    with path.open("rb") as handle:
        return handle.read(size)


def gunzip_bounded(path: Path, limit: int) -> bytes:
    """The decompressed bytes of a gzip file, refusing more than ``limit`` of them."""
    out = io.BytesIO()
    try:
        with gzip.open(path) as handle:
            _copy_bounded(handle, out, limit, path.name)
    except (OSError, EOFError, gzip.BadGzipFile) as error:
        raise UnsafeArchiveError(f"corrupt gzip data: {error}") from error
    return out.getvalue()


def _copy_bounded(source: IO[bytes], target: IO[bytes], limit: int, name: str) -> int:
    copied = 0
    while chunk := source.read(_CHUNK):
        copied += len(chunk)
        if copied > limit:
            raise UnsafeArchiveError(f"{name} unpacks to more than {limit:,} bytes (a decompression bomb?)")
        target.write(chunk)
    return copied


def _check_member_name(name: str) -> PurePosixPath:
    path = PurePosixPath(name.replace("\\", "/"))
    if path.is_absolute() or name.startswith(("/", "\\")) or (path.parts and ":" in path.parts[0]):
        raise UnsafeArchiveError(f"absolute path in archive: {name}")
    if ".." in path.parts:
        raise UnsafeArchiveError(f"path traversal in archive: {name}")
    return path


def unpack_tar(source: Path | bytes, target: Path, limits: IngestLimits) -> None:
    """Unpack a (possibly compressed) tar into ``target`` after checking every member."""
    try:
        tar = tarfile.open(fileobj=io.BytesIO(source)) if isinstance(source, bytes) else tarfile.open(source)  # noqa: SIM115
    except (tarfile.TarError, OSError, EOFError) as error:
        raise UnsafeArchiveError(f"corrupt tar archive: {error}") from error
    with tar:
        members = []
        total = 0
        try:
            for member in tar:
                _check_member_name(member.name)
                if member.issym() or member.islnk():
                    raise UnsafeArchiveError(f"link in archive: {member.name} -> {member.linkname}")
                if member.isdev() or member.isfifo():
                    raise UnsafeArchiveError(f"device or FIFO in archive: {member.name}")
                if not (member.isfile() or member.isdir()):
                    raise UnsafeArchiveError(f"unsupported member type in archive: {member.name}")
                if member.size > limits.max_file_bytes:
                    raise UnsafeArchiveError(
                        f"{member.name} is {member.size:,} bytes (limit {limits.max_file_bytes:,})"
                    )
                total += member.size
                if total > limits.max_unpacked_bytes:
                    raise UnsafeArchiveError(f"archive unpacks to more than {limits.max_unpacked_bytes:,} bytes")
                members.append(member)
                if len(members) > limits.max_archive_members:
                    raise UnsafeArchiveError(f"archive has more than {limits.max_archive_members:,} members")
            target.mkdir(parents=True, exist_ok=True)
            if hasattr(tarfile, "data_filter"):
                # The "data" filter is a second guard: it refuses anything unsafe the checks above missed.
                tar.extractall(target, members=members, filter="data")
            else:  # Python < 3.11.4 (Debian 12's 3.11.2) has no filters: the checks above stand alone
                for member in members:
                    member.mode = 0o755 if member.isdir() else 0o644  # as the filter would: no setuid, no odd modes
                tar.extractall(target, members=members)
        except (tarfile.TarError, OSError, EOFError) as error:
            raise UnsafeArchiveError(f"corrupt tar archive: {error}") from error


def unpack_zip(source: Path, target: Path, limits: IngestLimits) -> None:
    """Unpack a zip into ``target`` after checking names and copying with a byte bound."""
    try:
        with zipfile.ZipFile(source) as zipped:
            infos = zipped.infolist()
            if len(infos) > limits.max_archive_members:
                raise UnsafeArchiveError(f"archive has more than {limits.max_archive_members:,} members")
            total = 0
            for info in infos:
                relative = _check_member_name(info.filename)
                if (info.external_attr >> 16) & 0o170000 == 0o120000:
                    raise UnsafeArchiveError(f"link in archive: {info.filename}")
                if info.is_dir():
                    continue
                destination = target.joinpath(*relative.parts)
                destination.parent.mkdir(parents=True, exist_ok=True)
                with zipped.open(info) as member, destination.open("wb") as out:
                    # Declared sizes can lie; count what actually comes out.
                    total += _copy_bounded(
                        member, out, min(limits.max_file_bytes, limits.max_unpacked_bytes - total), info.filename
                    )
    except (zipfile.BadZipFile, OSError, EOFError) as error:
        raise UnsafeArchiveError(f"corrupt zip archive: {error}") from error


def reset_directory(directory: Path) -> Path:
    if directory.exists():
        shutil.rmtree(directory)
    directory.mkdir(parents=True)
    return directory
