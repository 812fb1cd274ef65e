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
        package = name if file.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(file.read_text())):
            if isinstance(node, ast.ImportFrom):
                module = _absolute(node.module, node.level, package)
                targets = [module, *(f"{module}.{alias.name}" for alias in node.names)]
            elif isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                continue
            graph[name].update(target for target in targets if target in modules and target != name)
    return graph


def _absolute(module: str | None, level: int, package: str) -> str:
    """The absolute name of ``from <dots><module> import ...`` written in ``package`` (relative imports included)."""
    if level == 0:
        return module or ""
    base = package.split(".")[: len(package.split(".")) - (level - 1)]
    return ".".join([*base, *([module] if module else [])])


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


# Issue 93: retriever/ in one order, bottom to top. A module may import its own folder and any folder listed
# before it. The modules at its top (``types``, ``search_filter``, ``search_mode``, ``deadline``: the values every
# stage passes) are the floor.
RETRIEVER_LAYERS = ("text", "storage", "models", "store", "search")


def _layer_of(module: str) -> int | None:
    """The position of a ``retriever.*`` module's folder (or top-level module) in ``RETRIEVER_LAYERS``."""
    parts = module.split(".")
    if parts[0] != "retriever" or len(parts) < 2:
        return None  # ``retriever`` itself re-exports the public names from every layer
    if len(parts) == 2 and (ROOT / "retriever" / f"{parts[1]}.py").exists():
        return -1  # the floor
    return RETRIEVER_LAYERS.index(parts[1])


def _upward_imports(graph: dict[str, set[str]]) -> list[str]:
    return sorted(
        f"{name} -> {target}"
        for name, targets in graph.items()
        if _layer_of(name) is not None
        for target in targets
        if _layer_of(target) is not None and _layer_of(target) > _layer_of(name)
    )


def test_no_import_runs_up_inside_retriever() -> None:
    graph = _import_graph(_modules())
    layered = [name for name in graph if _layer_of(name) is not None]
    assert len(layered) > 70  # every folder is named in the order (an unknown one raises ValueError)
    assert _upward_imports(graph) == []


def test_the_layer_check_sees_an_import_that_runs_up() -> None:
    graph = {"retriever.storage.bm25_index": {"retriever.models.embedder", "retriever.text.math_tokenizer"},
             "retriever.models.embedder": {"retriever.text.unicode_math_text"}}  # fmt: skip
    assert _upward_imports(graph) == ["retriever.storage.bm25_index -> retriever.models.embedder"]


def test_no_rag_app_room_keeps_an_old_import_path() -> None:
    """Issue 93 removed the aliases: no package lists moved modules and nothing installs an import finder."""
    import sys

    import rag_app
    import retriever

    assert not hasattr(rag_app, "MOVED_MODULES") and not hasattr(retriever, "MOVED_MODULES")
    assert not any(type(finder).__module__.startswith(("rag_app", "retriever")) for finder in sys.meta_path)
    for old in ("rag_app.answerer", "retriever.bm25_index", "retriever.formulas.marf_index"):
        try:
            __import__(old)
        except ModuleNotFoundError:
            continue
        raise AssertionError(f"{old} still imports")


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


# rag_app/ in one order, bottom to top, as retriever/ is: a folder (or top-level module) may import its own and
# those listed before it. ``rag_app`` itself re-exports the public names.
RAG_APP_LAYERS = ("settings", "serving", "datasets", "search", "indexing", "answering", "pipeline", "known_errors",
                  "result_files", "training", "evaluation", "api", "cli")  # fmt: skip


def _rag_app_layer(module: str) -> int | None:
    parts = module.split(".")
    if parts[0] != "rag_app" or len(parts) < 2 or parts[1] in ("__main__", "demo_corpus"):
        return None
    return RAG_APP_LAYERS.index(parts[1])


def _rag_app_crossings(graph: dict[str, set[str]]) -> tuple[list[str], list[str]]:
    """The imports that run up the order, and the pairs of folders that import each other."""
    up, pairs = [], set()
    for name, targets in graph.items():
        for target in targets:
            here, there = _rag_app_layer(name), _rag_app_layer(target)
            if here is None or there is None or here == there:
                continue
            if there > here:
                up.append(f"{name} -> {target}")
            pairs.add((RAG_APP_LAYERS[here], RAG_APP_LAYERS[there]))
    mutual = sorted(f"{a} <-> {b}" for a, b in pairs if (b, a) in pairs and a < b)
    return sorted(up), mutual


def test_rag_app_is_held_to_one_order_with_relative_imports_read() -> None:
    graph = _import_graph(_modules())
    layered = [name for name in graph if _rag_app_layer(name) is not None]
    assert len(layered) > 130  # every folder is named in the order (an unknown one raises ValueError)
    assert _rag_app_crossings(graph) == ([], [])


def test_the_order_check_sees_a_relative_import_that_runs_up(tmp_path: Path) -> None:
    search = tmp_path / "rag_app" / "search"
    search.mkdir(parents=True)
    (search / "adapter.py").write_text("from ..pipeline import MathRAG\n")
    pipeline = tmp_path / "rag_app" / "pipeline.py"
    pipeline.write_text("from rag_app.search import adapter\n")
    modules = {"rag_app.search.adapter": search / "adapter.py", "rag_app.pipeline": pipeline}
    graph = _import_graph(modules)
    assert graph["rag_app.search.adapter"] == {"rag_app.pipeline"}
    assert _rag_app_crossings(graph) == (["rag_app.search.adapter -> rag_app.pipeline"], ["pipeline <-> search"])
