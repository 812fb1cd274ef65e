"""Files and directories written whole or not at all: written beside their place, then renamed over it,
so that a crash or a concurrent reader never sees half of one."""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterator
from pathlib import Path


def write_text_atomically(path: Path, text: str) -> None:
    """``path`` holds ``text`` whole, or keeps what it held."""
    partial = path.with_name(path.name + ".partial")
    partial.write_text(text, encoding="utf-8")
    os.replace(partial, path)


@contextlib.contextmanager
def directory_written_whole(directory: Path) -> Iterator[Path]:
    """An empty directory beside ``directory`` to fill; when the block ends it replaces ``directory``
    (readers see the old one or the new one). If the block raises, ``directory`` is left as it was."""
    partial = directory.with_name(directory.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    try:
        yield partial
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    shutil.rmtree(directory, ignore_errors=True)
    os.replace(partial, directory)
