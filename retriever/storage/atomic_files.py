"""Files and directories written whole or not at all: written beside their place, then renamed over it,
so that a crash or a concurrent reader never sees half of one.

Each write stages under a name of its own (``tempfile``), so two processes writing the same file at once
never write into one staging file: the last rename wins and each reader sees one whole version.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

# renameat2(2)'s flag that swaps two paths in one step (Linux 3.15+, glibc 2.28+).
_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def staging_path(path: Path, suffix: str = ".partial") -> Path:
    """A new, empty file beside ``path`` that no other writer uses (created here, so the name is taken)."""
    handle, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=suffix, dir=path.parent)
    os.close(handle)
    return Path(name)


def write_text_atomically(path: Path, text: str) -> None:
    """``path`` holds ``text`` whole, or keeps what it held."""
    partial = staging_path(path)
    try:
        partial.write_text(text, encoding="utf-8")
        os.replace(partial, path)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise


@contextlib.contextmanager
def directory_written_whole(directory: Path) -> Iterator[Path]:
    """An empty directory beside ``directory`` to fill; when the block ends it replaces ``directory``.
    Readers see the old one or the new one, never neither: the two are swapped in one step
    (``renameat2(RENAME_EXCHANGE)``) and the old one is deleted afterwards. If the block raises,
    ``directory`` is left as it was."""
    directory.parent.mkdir(parents=True, exist_ok=True)
    partial = Path(tempfile.mkdtemp(prefix=f".{directory.name}.", suffix=".partial", dir=directory.parent))
    try:
        yield partial
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    if not directory.exists():
        os.replace(partial, directory)
        return
    if _exchange(partial, directory):
        shutil.rmtree(partial, ignore_errors=True)  # now the old directory
        return
    # No atomic swap here (not Linux, or an old kernel or libc): the old directory is renamed aside first,
    # so the gap a reader can fall into is between two renames, not a whole recursive delete.
    old = Path(tempfile.mkdtemp(prefix=f".{directory.name}.", suffix=".old", dir=directory.parent))
    os.replace(directory, old / directory.name)
    os.replace(partial, directory)
    shutil.rmtree(old, ignore_errors=True)


def _exchange(first: Path, second: Path) -> bool:
    """Swap two paths in one step; False where the system cannot."""
    renameat2 = _renameat2()
    if renameat2 is None:
        return False
    result = renameat2(_AT_FDCWD, os.fsencode(first), _AT_FDCWD, os.fsencode(second), _RENAME_EXCHANGE)
    if result == 0:
        return True
    error = ctypes.get_errno()
    if error in (38, 22, 95):  # ENOSYS, EINVAL, EOPNOTSUPP: this kernel or file system cannot swap
        return False
    raise OSError(error, os.strerror(error), str(second))


@functools.cache
def _renameat2():  # a ctypes function, or None
    """libc's ``renameat2``, looked up once (every BM25 segment write swaps a directory)."""
    function = getattr(ctypes.CDLL(None, use_errno=True), "renameat2", None)  # the symbols of this process
    if function is None:
        return None
    function.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    function.restype = ctypes.c_int
    return function


def file_stamp(path: Path) -> tuple[int, int]:
    """A file's modification time and size: what changes when another process rewrites it; (0, 0) for none."""
    try:
        stat = path.stat()
    except FileNotFoundError:
        return (0, 0)
    return (stat.st_mtime_ns, stat.st_size)
