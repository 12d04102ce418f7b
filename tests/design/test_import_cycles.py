"""No import cycle between the modules of canning_tb: every `import` and `from ... import` of the
installed package's source, read with ast (nothing is imported or run), function-level imports
included (a lazy import still ties two modules together).

A package and the modules inside it are not a cycle: `pkg/__init__.py` re-exporting its children
while a child imports a sibling through `from . import x` is how packages work.
"""
import ast
import os
from pathlib import Path

import canning_tb

PACKAGE_ROOT = Path(canning_tb.__file__).resolve().parent


def module_files() -> dict[str, Path]:
    """{dotted module name: file} for every .py file of the package (generated *_pb2 included)."""
    out = {}
    for path in PACKAGE_ROOT.rglob("*.py"):
        parts = ["canning_tb", *path.relative_to(PACKAGE_ROOT).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def imported_names(module: str, path: Path) -> set[str]:
    """Every dotted name an import statement of the file can load: `from a.b import c` -> a.b, a.b.c."""
    is_package = path.name == "__init__.py"
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = module.split(".") if is_package else module.split(".")[:-1]
                parts = parts[: len(parts) - node.level + 1]
                base = ".".join(parts + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            names.add(base)
            names |= {f"{base}.{alias.name}" for alias in node.names}
    return names


def _related(a: str, b: str) -> bool:
    return a.startswith(b + ".") or b.startswith(a + ".")


def import_graph() -> dict[str, set[str]]:
    files = module_files()
    graph = {}
    for module, path in files.items():
        deps = {name for name in imported_names(module, path) if name in files}
        graph[module] = {d for d in deps if d != module and not _related(module, d)}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
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

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_import_cycle_in_the_package():
    graph = import_graph()
    assert "canning_tb.plugin.plugin" in graph and "canning_tb.cli.main" in graph  # the walk saw the package
    assert cycles(graph) == []


def test_the_cycle_finder_finds_cycles():
    """The checker itself: a direct cycle, a longer one, and parents and children that are not one."""
    graph = {"a": {"b"}, "b": {"a"}, "c": {"d"}, "d": {"e"}, "e": {"c", "f"}, "f": set()}
    assert sorted(cycles(graph)) == [["a", "b"], ["c", "d", "e"]]
    assert cycles({"a": {"b"}, "b": set()}) == []
    assert _related("canning_tb.store", "canning_tb.store.cache") and not _related("canning_tb.store", "canning_tb.storex")


def test_relative_imports_resolve(tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("from .a import x\n")
    (pkg / "a.py").write_text("from . import b\nfrom ..other import y\n\ndef f():\n    import json\n")
    assert imported_names("canning_tb.pkg", pkg / "__init__.py") == {"canning_tb.pkg.a", "canning_tb.pkg.a.x"}
    assert imported_names("canning_tb.pkg.a", pkg / "a.py") == {
        "canning_tb.pkg", "canning_tb.pkg.b", "canning_tb.other", "canning_tb.other.y", "json"}


def test_package_is_the_installed_one():
    """The walk reads the package Python imports, whatever PYTHONPATH points it to."""
    assert (PACKAGE_ROOT / "__init__.py").exists() and os.path.isdir(PACKAGE_ROOT / "plugin")


def package_of(module: str) -> str:
    """The feature a module belongs to: canning_tb.<first part> (canning_tb itself for its __init__)."""
    parts = module.split(".")
    return ".".join(parts[:2])


def package_graph() -> dict[str, set[str]]:
    """Imports between the features (collect, handler, capture, ingest, analysis, store, queries, plugin...):
    one edge per pair of packages that any of their modules ties together."""
    graph: dict[str, set[str]] = {}
    for module, deps in import_graph().items():
        mine = package_of(module)
        graph.setdefault(mine, set()).update(package_of(d) for d in deps if package_of(d) != mine)
    return graph


def test_no_import_cycle_between_packages():
    """The one-way design (DESIGN.md): no two features import each other, directly or through others;
    a lazy import inside a function counts too."""
    graph = package_graph()
    assert {"canning_tb.capture", "canning_tb.queries", "canning_tb.util", "canning_tb.collect"} <= set(graph)
    assert cycles(graph) == []


def test_the_util_package_imports_no_feature():
    """util/ holds what every part may use: it imports nothing else of canning_tb."""
    assert package_graph()["canning_tb.util"] == set()


def test_the_selections_know_no_front_door():
    """queries/ serves the plugin, the MCP server and the CLI alike: it imports none of them."""
    graph = package_graph()
    front_doors = {"canning_tb.plugin", "canning_tb.mcp", "canning_tb.cli"}
    assert not graph["canning_tb.queries"] & front_doors
    assert not graph["canning_tb.mcp"] & {"canning_tb.plugin"}


def test_the_package_cycle_finder_sees_a_cycle_through_lazy_imports(tmp_path):
    """The old collect <-> handler circle: a module-level import one way, a function-level import back."""
    graph = {"canning_tb.collect.a": {"canning_tb.handler.b"}, "canning_tb.handler.b": set(),
             "canning_tb.handler.c": {"canning_tb.collect.d"}, "canning_tb.collect.d": set()}
    packages: dict[str, set[str]] = {}
    for module, deps in graph.items():
        packages.setdefault(package_of(module), set()).update(package_of(d) for d in deps if package_of(d) != package_of(module))
    assert cycles(packages) == [["canning_tb.collect", "canning_tb.handler"]]
