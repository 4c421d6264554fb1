"""The import graph of customobj/ and adapters/ has no cycle, at import time or through the imports
made inside functions (adapters/ installs as ``customobj.adapters``).

The graph is read from the source (``ast``), not by importing: an edge ``a -> b`` for every
``import`` / ``from ... import`` of ``a`` naming module ``b`` (importing ``x.y.z`` runs ``x``, ``x.y``
and ``x.y.z``); imports under ``if TYPE_CHECKING:`` never run and are left out. A module never depends
on its own ancestor packages through this graph: Python runs them before it anyway, and an import of an
ancestor's *names* (``from . import f``) counts as an edge to that package, so an ancestor that
imports the module closes a cycle.
"""
from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TOPS = (("customobj", "customobj"), ("adapters", "customobj.adapters"))


def _modules() -> dict[str, Path]:
    found = {}
    for folder, package in TOPS:
        for path in (REPO / folder).rglob("*.py"):
            parts = list(path.relative_to(REPO / folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join([package] + parts)] = path
    return found


def _imports(tree: ast.Module, import_time: bool) -> list[ast.Import | ast.ImportFrom]:
    """The import statements that run at import time (module body, ``if``/``try``/``with`` blocks, not
    ``if TYPE_CHECKING:``), or with ``import_time=False`` also those inside functions."""
    out: list[ast.Import | ast.ImportFrom] = []

    def walk(body: list[ast.stmt]) -> None:
        for st in body:
            if isinstance(st, (ast.Import, ast.ImportFrom)):
                out.append(st)
            elif isinstance(st, ast.If):
                test = st.test
                if (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
                        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"):
                    walk(st.orelse)
                else:
                    walk(st.body)
                    walk(st.orelse)
            elif isinstance(st, ast.Try):
                for block in (st.body, st.orelse, st.finalbody, *(h.body for h in st.handlers)):
                    walk(block)
            elif isinstance(st, ast.With):
                walk(st.body)
            elif not import_time and isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                walk(st.body)

    walk(tree.body)
    return out


def import_graph(import_time: bool) -> dict[str, set[str]]:
    """module -> the modules of this tree its imports run (its ancestor packages left out)."""
    mods = _modules()
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for name, path in mods.items():
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        for st in _imports(ast.parse(path.read_text()), import_time):
            if isinstance(st, ast.Import):
                targets = [alias.name for alias in st.names]
            else:
                base = st.module or ""
                if st.level:
                    up = package.split(".")[:len(package.split(".")) - st.level + 1]
                    base = ".".join(up + ([st.module] if st.module else []))
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in st.names]
            for target in targets:
                parts = target.split(".")
                for k in range(1, len(parts) + 1):
                    dep = ".".join(parts[:k])
                    if dep in mods and dep != name and (k == len(parts) or not name.startswith(dep + ".")):
                        graph[name].add(dep)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), or with a self-edge."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1 or v in graph[v]:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_graph_sees_the_tree():
    graph = import_graph(import_time=True)
    assert {"customobj", "customobj.objectives.base", "customobj.adapters.lightgbm", "customobj.ole.grower"} <= set(graph)
    assert "customobj.objectives.base" in graph["customobj.objectives.pairwise"]
    assert "customobj.adapters._data" in graph["customobj.adapters.lightgbm"]


def test_cycles_are_found():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"a"}, "b": set()}) == [["a"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle_at_import_time():
    assert cycles(import_graph(import_time=True)) == []


def test_no_import_cycle_through_imports_inside_functions():
    assert cycles(import_graph(import_time=False)) == []


def test_the_device_seam_is_a_plain_import_the_graph_sees():
    """Issue 31 item 2: base reached objectives.devices through ``import_module(".devices")``, an edge
    this graph could not see (and a cycle it hid: devices imported base); now a plain import, and
    devices reads Objective only for annotations."""
    graph = import_graph(import_time=True)
    assert "customobj.objectives.devices" in graph["customobj.objectives.base"]
    assert "customobj.objectives.base" not in graph["customobj.objectives.devices"]
