"""LaTeX sources uploaded from the browser: checked, saved under the data directory, then ingested.

Saved files stay (``DATA_DIR/uploads``) so that a later re-ingest or ``reindex`` can read them again;
uploading the same name again replaces the paper's statements, as re-ingesting a changed file does.
"""

from __future__ import annotations

import re
from pathlib import Path

from ingestion.latex_sources import ARCHIVE_SUFFIXES

UPLOAD_SUFFIXES = (*ARCHIVE_SUFFIXES, ".tex", ".ltx")
_UNSAFE = re.compile(r"[^A-Za-z0-9._+-]+")


class UploadError(ValueError):
    """An upload that is refused before ingestion: the message names the file and the reason."""


def save_upload(name: str, data: bytes, directory: Path, max_bytes: int) -> Path:
    """Write one uploaded file under ``directory`` with a safe name; refuse wrong types and sizes."""
    safe = _UNSAFE.sub("_", Path(name).name).strip("._") or "upload"
    if not safe.lower().endswith(UPLOAD_SUFFIXES):
        raise UploadError(f"{name}: not a LaTeX source; upload {', '.join(UPLOAD_SUFFIXES)}")
    if len(data) > max_bytes:
        raise UploadError(f"{name}: {len(data) / 1e6:.1f} MB is over the limit of {max_bytes / 1e6:.0f} MB")
    if not data:
        raise UploadError(f"{name}: the file is empty")
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / safe
    path.write_bytes(data)
    return path
