"""Old import paths of modules that moved (issue 49), kept as aliases until 2027-03-01.

``import rag_app.answerer`` or ``from retriever.bm25_index import BM25Index`` still work: the old name
becomes a plain ``sys.modules`` alias of the new module (the same object, so monkeypatching either name
patches both, and ``importlib.reload`` of either reloads the module), and a ``DeprecationWarning``
names the new path at the line that imported the old one. Each package lists its moves in its
``__init__``; the docs (README, "Layout") give the date the aliases go.

Why a finder makes the alias, not the package's ``__init__``: an alias needs its module imported, and
the moved modules include ``rag_app.search.llama_index_retriever`` (llama-index: 1.7 s). Made on first
use, an alias costs nothing to the programs that do not use the old path: every one of ours.
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

REMOVAL_DATE = "2027-03-01"


class MovedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Answers an import of an old name with its new module, once; ``sys.modules`` answers after."""

    def __init__(self, moved: Mapping[str, str]) -> None:
        self.moved = dict(moved)
        self._own_specs: dict[str, importlib.machinery.ModuleSpec] = {}

    def find_spec(
        self, fullname: str, path: object = None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in self.moved:
            return None
        # stacklevel 2 is the importing line: warnings skips importlib's own frames.
        warnings.warn(
            f"{fullname} moved to {self.moved[fullname]}; import it from there (the old path goes on {REMOVAL_DATE})",
            DeprecationWarning,
            stacklevel=2,
        )
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        module = importlib.import_module(self.moved[spec.name])
        self._own_specs[spec.name] = module.__spec__  # importlib sets the old name's spec on it next
        return module

    def exec_module(self, module: ModuleType) -> None:
        """The new module ran when it was imported; it gets its own spec back, so a reload reloads it."""
        old_name = module.__spec__.name
        module.__spec__ = self._own_specs.pop(old_name)


def keep_old_paths(moved: Mapping[str, str]) -> None:
    """Let the old names in ``moved`` (old -> new dotted path) import their new modules."""
    if not any(isinstance(finder, MovedModules) and finder.moved == dict(moved) for finder in sys.meta_path):
        # First: an old package name (rag_app.ingest) is an alias of a package whose folder holds the
        # modules, so the path finder would load rag_app.ingest.statement_writer again as a second module.
        sys.meta_path.insert(0, MovedModules(moved))
