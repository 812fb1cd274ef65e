"""No module of the app imports, even inside a function, a module that imports it back."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("rag_app", "ingestion", "retriever", "ui", "prompts")


def _modules() -> dict[str, Path]:
    modules = {}
    for package in PACKAGES:
        for file in (ROOT / package).rglob("*.py"):
            name = ".".join(file.relative_to(ROOT).with_suffix("").parts)
            modules[name.removesuffix(".__init__")] = file
    return modules


def _import_graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, file in modules.items():
        for node in ast.walk(ast.parse(file.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets = [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
            elif isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                continue
            graph[name].update(target for target in targets if target in modules and target != name)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
            elif child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(graph[child]))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return found


def test_no_import_cycle() -> None:
    assert _cycles(_import_graph(_modules())) == []


def test_the_cycle_finder_finds_a_cycle_through_three_modules() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(graph) == [["a", "b", "c"]]


def test_what_stores_imports_nothing_that_searches() -> None:
    """The stores are written by ingest and read by searchers; a store that imports a searcher (the
    duplicate groups once imported paper search for ``paper_key``) ties the writer to the search stack."""
    graph = _import_graph(_modules())
    stores = [name for name in graph if name.startswith("retriever.store.")]
    assert len(stores) > 10
    searching = {
        name: sorted(t for t in graph[name] if t.startswith("retriever.search.") or t.endswith("_searcher"))
        for name in stores
    }
    assert {name: targets for name, targets in searching.items() if targets} == {}


def test_the_old_import_paths_import_the_moved_modules() -> None:
    """Every module that moved in issue 49 is importable by its old path, as the same module object."""
    import importlib
    import warnings

    import rag_app
    import retriever

    moved = {**rag_app.MOVED_MODULES, **retriever.MOVED_MODULES}
    assert len(moved) > 60
    for old, new in moved.items():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert importlib.import_module(old) is importlib.import_module(new), old
        assert not caught or f"{old} moved to {new}" in str(caught[0].message)
    from rag_app.answerer import Answerer  # the form code in the wild uses
    from retriever.bm25_index import BM25Index

    assert Answerer.__module__ == "rag_app.answering.answerer" and BM25Index.__module__ == "retriever.store.bm25_index"


def test_an_old_path_warns_at_the_importing_line_and_reloads_its_module(tmp_path, monkeypatch) -> None:
    """The alias is the module itself: reloading it runs the module again (it was a silent no-op), and
    the warning names the file that used the old path (it named importlib)."""
    import importlib
    import sys
    import warnings

    for name in ("rag_app.text_repair", "rag_app.answering.text_repair"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    caller = tmp_path / "old_caller.py"
    caller.write_text("import rag_app.text_repair as old\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "old_caller", raising=False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        import old_caller  # noqa: F401
    (warning,) = [w for w in caught if issubclass(w.category, DeprecationWarning) and "text_repair" in str(w.message)]
    assert warning.filename == str(caller) and warning.lineno == 1
    assert "rag_app.answering.text_repair" in str(warning.message) and "2027-03-01" in str(warning.message)

    module = sys.modules["rag_app.text_repair"]
    assert module is sys.modules["rag_app.answering.text_repair"]
    assert module.__spec__.name == "rag_app.answering.text_repair"
    original = module.repair
    assert importlib.reload(module) is module
    assert module.repair is not original  # a new function: the module's code ran again


def test_training_and_evaluation_do_not_import_each_other() -> None:
    """Issue 77: what both read (query sets, the paper split, statement names) lives in rag_app.datasets."""
    graph = _import_graph(_modules())

    def crossing(source: str, target: str) -> list[str]:
        return sorted(
            f"{name} -> {other}"
            for name, targets in graph.items()
            if name.startswith(source)
            for other in targets
            if other.startswith(target)
        )

    assert crossing("rag_app.evaluation", "rag_app.training") == []
    assert crossing("rag_app.training", "rag_app.evaluation") == []
