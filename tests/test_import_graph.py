"""The package's imports run one way: the import graph of python/cyxla, built from the
source of every module (function-local imports included), has no cycle."""

from __future__ import annotations

import ast
import importlib.util
from collections.abc import Iterator
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "python" / "cyxla"


def modules(root: Path = PACKAGE) -> dict[str, Path]:
    """Every module of the package under `root` by dotted name; a package by its name."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _is_module(name: str, known: dict[str, Path]) -> bool:
    """Whether `name` is a module of the package: a source file, or compiled (`_core`)."""
    if name in known:
        return True
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):  # a parent that is not a package
        return False


def _imported(module: str, path: Path, node: ast.AST, known: dict[str, Path]) -> Iterator[str]:
    """The package's modules that the import statement `node` in `module` imports."""
    package = PACKAGE.name
    if isinstance(node, ast.Import):
        for alias in node.names:
            parts = alias.name.split(".")
            # `import a.b.c` runs a, a.b and a.b.c; the deepest module is the edge.
            for end in range(len(parts), 0, -1):
                if ".".join(parts[:end]) in known:
                    yield ".".join(parts[:end])
                    break
        return
    assert isinstance(node, ast.ImportFrom)
    if node.level:
        # A relative import, from the module's own package (`.`) or the ones above it.
        base = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
        base = base[: len(base) - node.level + 1]
        source = ".".join(base + ([node.module] if node.module else []))
    else:
        source = node.module or ""
    if source != package and not source.startswith(package + "."):
        return
    for alias in node.names:
        # `from pkg import submodule` imports the submodule; `from module import name`
        # imports the module that defines the name.
        submodule = f"{source}.{alias.name}"
        if alias.name != "*" and _is_module(submodule, known):
            yield submodule
        elif source in known:
            yield source


def import_graph(root: Path = PACKAGE) -> dict[str, set[str]]:
    """Module -> the package's modules it imports anywhere in its source."""
    known = modules(root)
    graph: dict[str, set[str]] = {name: set() for name in known}
    for module, path in known.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import | ast.ImportFrom):
                # An edge to a package is an import of a name its __init__ defines
                # (`from cyxla import __version__`), which runs into the same trouble as
                # any cycle when that __init__ is still importing the module.
                graph[module].update(t for t in _imported(module, path, node, known) if t != module)
    for compiled in set().union(*graph.values()) - set(graph):  # `_core`: imports nothing here
        graph[compiled] = set()
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Each strongly connected component of more than one module, as one cycle through
    it (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            for target in edges:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(graph[target]))))
                    break
                if target in on_stack:
                    low[node] = min(low[node], index[target])
            else:
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
                        components.append(_cycle_in(sorted(component), graph))
    return components


def _cycle_in(component: list[str], graph: dict[str, set[str]]) -> list[str]:
    """One cycle through the first module of a strongly connected `component`."""
    members = set(component)
    start = component[0]
    paths = {start: [start]}
    frontier = [start]
    while frontier:  # breadth first: the shortest way back to `start`
        following = []
        for node in frontier:
            for target in sorted(graph[node] & members):
                if target == start:
                    return [*paths[node], start]
                if target not in paths:
                    paths[target] = [*paths[node], target]
                    following.append(target)
        frontier = following
    raise AssertionError(f"{component} is not strongly connected")


def test_the_graph_sees_every_kind_of_import() -> None:
    """The instrument first: it finds module-level, function-local, relative and
    `from package import submodule` imports, and a cycle made of them."""
    graph = import_graph()
    assert "cyxla._ffi.registry" in graph["cyxla._backend"]  # from cyxla._ffi import registry
    assert "cyxla._core" in graph["cyxla._abi"]  # a compiled module
    assert "cyxla._cli.bench" in graph["cyxla.__main__"]  # from cyxla._cli import bench
    assert "cyxla.plugins._jax_plugin" in graph["cyxla.plugins.cuda12"]
    assert "cyxla" in graph["cyxla._cli.demo"]  # import cyxla
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c", "a"]]


def test_the_graph_resolves_relative_and_local_imports(tmp_path: Path) -> None:
    package = tmp_path / "cyxla"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "low.py").write_text("def f():\n    from .sub import high\n")
    (package / "sub" / "__init__.py").write_text("")
    (package / "sub" / "high.py").write_text("from .. import low\nfrom ..low import f\n")
    graph = import_graph(package)
    assert graph["cyxla.low"] == {"cyxla.sub.high"}
    assert graph["cyxla.sub.high"] == {"cyxla.low"}
    assert cycles(graph) == [["cyxla.low", "cyxla.sub.high", "cyxla.low"]]


def test_imports_run_one_way() -> None:
    found = cycles(import_graph())
    assert not found, "import cycles in python/cyxla:\n" + "\n".join(
        " -> ".join(cycle) for cycle in found
    )


def folder_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """The graph with each subpackage's modules merged into the subpackage (the folder):
    the layers are folders, so imports between them must run one way too."""

    def folder(module: str) -> str:
        parts = module.split(".")
        inside = len(parts) > 2 and (PACKAGE / parts[1]).is_dir()
        return ".".join(parts[:2]) if inside else module

    merged: dict[str, set[str]] = {}
    for module, targets in graph.items():
        edges = merged.setdefault(folder(module), set())
        edges.update(folder(t) for t in targets if folder(t) != folder(module))
    for target in set().union(*merged.values()) - set(merged):
        merged[target] = set()
    return merged


def test_the_folder_graph_merges_a_subpackage() -> None:
    graph = {
        "cyxla._cache.keys": {"cyxla._backend"},
        "cyxla._backend": {"cyxla._ffi.registry"},
        "cyxla._ffi.registry": {"cyxla._ffi.plugin"},
        "cyxla._ffi.plugin": {"cyxla._cache.probes"},
        "cyxla._cache.probes": set(),
    }
    merged = folder_graph(graph)
    assert merged["cyxla._ffi"] == {"cyxla._cache"}
    assert cycles(merged) == [["cyxla._backend", "cyxla._ffi", "cyxla._cache", "cyxla._backend"]]


def test_folders_import_one_way() -> None:
    found = cycles(folder_graph(import_graph()))
    assert not found, "import cycles between the folders of python/cyxla:\n" + "\n".join(
        " -> ".join(cycle) for cycle in found
    )
