"""Paths built from names found in input, kept inside a directory the run created for itself.

Every name that comes from input (an archive's file name, an archive member, an uploaded file, a
paper id from a listing) reaches the file system through here. A name becomes one plain path
component (no separators, no ``..``, no leading dots), and the joined path is checked, after
resolving links, to lie inside the directory: an archive named ``...tar.gz`` or a member named
``../../x`` can never make a run delete or write outside its own directories.
"""

from __future__ import annotations

import re
from pathlib import Path

# What a component keeps: letters, digits and . _ + - (arXiv ids, versions, ordinary file names).
_UNSAFE = re.compile(r"[^A-Za-z0-9._+-]+")
_MAX_COMPONENT = 200  # under every file system's 255-byte limit, with room for a suffix


class PathEscapeError(ValueError):
    """A path built from input would lie outside the directory it must stay in."""


def safe_component(name: str, fallback: str = "unnamed") -> str:
    """``name`` as one harmless path component: ``math/0501001`` is ``math_0501001``, ``...`` and ``..``
    are ``fallback``, ``.bashrc`` is ``bashrc``."""
    cleaned = _UNSAFE.sub("_", name).strip("._")[:_MAX_COMPONENT].strip("._")
    return cleaned or fallback


def contained_path(root: Path, *names: str) -> Path:
    """``root`` joined with each name made a :func:`safe_component`, proven to lie inside ``root``."""
    path = root.joinpath(*(safe_component(name) for name in names))
    return ensure_inside(root, path)


def ensure_inside(root: Path, path: Path) -> Path:
    """``path`` itself, after checking that it (links resolved) lies inside ``root``; else
    :class:`PathEscapeError`. For relative paths kept as written (an archive member's folders)."""
    resolved_root = root.resolve()
    target = (root / path).resolve() if not path.is_absolute() else path.resolve()
    if target == resolved_root or not target.is_relative_to(resolved_root):
        raise PathEscapeError(f"{path} is not inside {root}")
    return root / path if not path.is_absolute() else path
