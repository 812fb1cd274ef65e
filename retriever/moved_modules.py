"""Old import paths of modules that moved, kept working for one release.

``import rag_app.answerer`` or ``from retriever.bm25_index import BM25Index`` still work: the old name
is the new module itself (the same object, so monkeypatching either name patches both), with a
``DeprecationWarning`` naming the new path. Each package lists its moves in its ``__init__``.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import warnings
from collections.abc import Mapping
from types import ModuleType


class MovedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds each old module name and loads it as its new module."""

    def __init__(self, moved: Mapping[str, str]) -> None:
        self.moved = dict(moved)

    def find_spec(
        self, fullname: str, path: object = None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in self.moved:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        new = self.moved[spec.name]
        warnings.warn(f"{spec.name} moved to {new}; import it from there", DeprecationWarning, stacklevel=3)
        return importlib.import_module(new)

    def exec_module(self, module: ModuleType) -> None:
        """The new module ran when it was imported."""


def keep_old_paths(moved: Mapping[str, str]) -> None:
    """Let the old names in ``moved`` (old -> new dotted path) import their new modules."""
    if not any(isinstance(finder, MovedModules) and finder.moved == dict(moved) for finder in sys.meta_path):
        sys.meta_path.append(MovedModules(moved))
