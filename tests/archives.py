"""Building archives in tests: arXiv-style tars from in-memory files."""

from __future__ import annotations

import io
import tarfile


def tar_bytes(files: dict[str, bytes], mode: str = "w") -> bytes:
    """A tar (``mode`` "w:gz" for a .tar.gz) holding ``files``, name to content."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode=mode) as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()
