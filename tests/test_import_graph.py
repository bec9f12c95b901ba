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
    assert "cyxla._ffi.registry" in graph["cyxla._run.backend"]  # from cyxla._ffi import registry
    assert "cyxla._core" in graph["cyxla._abi"]  # a compiled module
    assert "cyxla._bench.paths" in graph["cyxla._cli.bench"]  # from cyxla._bench import paths
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
        "cyxla._lower.cache_key": {"cyxla._run.backend"},
        "cyxla._run.backend": {"cyxla._ffi.registry"},
        "cyxla._ffi.registry": {"cyxla._ffi.plugin"},
        "cyxla._ffi.plugin": {"cyxla._cache.store"},
        "cyxla._cache.store": {"cyxla._run.backend"},
    }
    merged = folder_graph(graph)
    assert merged["cyxla._ffi"] == {"cyxla._cache"}
    assert cycles(merged) == [["cyxla._cache", "cyxla._run", "cyxla._ffi", "cyxla._cache"]]


def test_folders_import_one_way() -> None:
    found = cycles(folder_graph(import_graph()))
    assert not found, "import cycles between the folders of python/cyxla:\n" + "\n".join(
        " -> ".join(cycle) for cycle in found
    )


#: JAX's packages, and the folders of cyxla's that import them when imported.
_JAX = frozenset({"jax", "jaxlib", "ml_dtypes"})
_JAX_FOLDERS = ("cyxla._jax", "cyxla._lower")
#: What a process that only loads and runs programs imports: the package, and the folders
#: of everything it runs (`tests/test_lean_runtime.py` checks such processes).
_RUN_SIDE = ("cyxla._cache", "cyxla._ffi", "cyxla._program", "cyxla._run", "cyxla._verify")


def _import_time_nodes(tree: ast.Module) -> Iterator[ast.Import | ast.ImportFrom]:
    """The import statements that run when the module is imported: outside functions and
    `if TYPE_CHECKING:` blocks."""
    pending: list[ast.AST] = list(tree.body)
    while pending:
        node = pending.pop()
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        elif isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            pending.extend(node.orelse)
        elif not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            pending.extend(ast.iter_child_nodes(node))


def import_time_graph(root: Path = PACKAGE) -> dict[str, set[str]]:
    """Module -> what importing it imports at once: the package's modules, and the
    top-level names of other packages (`jax`)."""
    known = modules(root)
    graph: dict[str, set[str]] = {}
    for module, path in known.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        edges = graph.setdefault(module, set())
        for node in _import_time_nodes(tree):
            edges.update(t for t in _imported(module, path, node, known) if t != module)
            if isinstance(node, ast.Import):
                edges.update(alias.name.split(".")[0] for alias in node.names)
            elif not node.level and node.module:
                edges.add(node.module.split(".")[0])
    return graph


def imported_at_once(graph: dict[str, set[str]], start: str) -> set[str]:
    """Everything that importing `start` imports, directly or not."""
    seen, pending = set(), [start]
    while pending:
        for target in graph.get(pending.pop(), ()):
            # `import a.b` runs `a` too: a module's packages are imported with it.
            parents = {".".join(target.split(".")[:end]) for end in range(1, target.count(".") + 1)}
            for name in {target} | parents:
                if name not in seen:
                    seen.add(name)
                    pending.append(name)
    return seen


def _reaches_jax(module: str, graph: dict[str, set[str]]) -> list[str]:
    return sorted(
        name
        for name in imported_at_once(graph, module)
        if name in _JAX or name.startswith(tuple(f + "." for f in _JAX_FOLDERS))
    )


def test_the_import_time_graph_leaves_out_functions_and_type_checking(tmp_path: Path) -> None:
    package = tmp_path / "cyxla"
    (package / "_run").mkdir(parents=True)
    (package / "_lower").mkdir()
    for init in (package, package / "_run", package / "_lower"):
        (init / "__init__.py").write_text("")
    (package / "_lower" / "lowering.py").write_text("import jax\n")
    (package / "_run" / "lazy.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import jax\n"
        "def f():\n    from cyxla._lower import lowering\n"
    )
    (package / "_run" / "eager.py").write_text("class C:\n    from cyxla._lower import lowering\n")
    graph = import_time_graph(package)
    assert _reaches_jax("cyxla._run.lazy", graph) == []
    assert _reaches_jax("cyxla._run.eager", graph) == ["cyxla._lower.lowering", "jax"]


def test_what_runs_programs_imports_no_jax_when_imported() -> None:
    """The lean rule: importing the package, or any module of the folders that load and
    run programs, imports neither JAX nor `cyxla._jax` / `cyxla._lower`; those are
    imported inside the functions that need them."""
    graph = import_time_graph()
    run_side = ["cyxla", *(m for m in graph if m.startswith(tuple(f + "." for f in _RUN_SIDE)))]
    found = {m: r for m in run_side if (r := _reaches_jax(m, graph))}
    assert not found, "imported when a run-side module is imported:\n" + "\n".join(
        f"{m}: {', '.join(r)}" for m, r in sorted(found.items())
    )
