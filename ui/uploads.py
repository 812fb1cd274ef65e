"""LaTeX sources uploaded from the browser: checked, saved under the data directory, then ingested.

Saved files stay (``DATA_DIR/uploads``) so that a later re-ingest or ``reindex`` can read them again;
uploading the same name again replaces the paper's statements, as re-ingesting a changed file does.
A file with a generic name (``main.tex``, ``paper.tex``, ``ms.tex``) names no paper: its paper id would be
the directory's, so every such upload would replace the one before. Each is saved in a folder of its own,
named by its content (``main-1a2b3c4d5e/main.tex``, paper ``main-1a2b3c4d5e``): the same file uploaded
again is the same paper, another file is another paper.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from ingestion.contained_paths import contained_path, safe_component
from ingestion.latex_sources import ARCHIVE_SUFFIXES, GENERIC_MAIN_STEMS

UPLOAD_SUFFIXES = (*ARCHIVE_SUFFIXES, ".tex", ".ltx")


class UploadError(ValueError):
    """An upload that is refused before ingestion: the message names the file and the reason."""


def save_upload(name: str, data: bytes, directory: Path, max_bytes: int) -> Path:
    """Write one uploaded file under ``directory`` with a safe name; refuse wrong types and sizes."""
    safe = safe_component(Path(name).name, fallback="upload")
    if not safe.lower().endswith(UPLOAD_SUFFIXES):
        raise UploadError(f"{name}: not a LaTeX source; upload {', '.join(UPLOAD_SUFFIXES)}")
    if len(data) > max_bytes:
        raise UploadError(f"{name}: {len(data) / 1e6:.1f} MB is over the limit of {max_bytes / 1e6:.0f} MB")
    if not data:
        raise UploadError(f"{name}: the file is empty")
    stem = Path(safe).stem
    if stem.lower() in GENERIC_MAIN_STEMS and safe.lower().endswith((".tex", ".ltx")):
        directory = contained_path(directory, f"{stem}-{hashlib.sha256(data).hexdigest()[:10]}")
    directory.mkdir(parents=True, exist_ok=True)
    path = contained_path(directory, safe)
    path.write_bytes(data)
    return path
