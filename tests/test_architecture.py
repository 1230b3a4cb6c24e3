"""The folder shape of DESIGN.md, checked on the source: imports run one way, each library has one home.

Read from the source with ``ast`` (nothing is imported), so the rules hold for every module, loaded or not:
no import cycle (inside ``app/`` too, and none through imports inside functions but the facade's), no stage below the ``Trace`` facade imports it, only
``trace/`` imports torch, only ``layout/`` starts processes (Graphviz), only ``render/`` imports plotly and
only ``app/`` imports dash.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "torchvista_dash"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for p in PACKAGE.rglob("*.py")}


def _imports(path: Path, *, module_level_only: bool) -> set[str]:
    """Absolute names of everything ``path`` imports (``TYPE_CHECKING`` blocks left out)."""
    mod = _module_name(path)
    package = mod.split(".") if path.name == "__init__.py" else mod.split(".")[:-1]
    found: set[str] = set()

    class Visitor(ast.NodeVisitor):
        def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
            if not module_level_only:
                self.generic_visit(node)

        visit_AsyncFunctionDef = visit_FunctionDef  # noqa: N815 - ast.NodeVisitor's naming

        def visit_If(self, node: ast.If) -> None:
            if isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
                for child in node.orelse:
                    self.visit(child)
                return
            self.generic_visit(node)

        def visit_Import(self, node: ast.Import) -> None:
            found.update(a.name for a in node.names)

        def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
            if node.level:
                base = package[: len(package) - node.level + 1]
                name = ".".join(base + ([node.module] if node.module else []))
            else:
                name = node.module or ""
            subs = {f"{name}.{a.name}" for a in node.names if f"{name}.{a.name}" in MODULES}
            found.update(subs if len(subs) == len(node.names) else subs | {name})

    Visitor().visit(ast.parse(path.read_text(encoding="utf-8")))
    return found


FACADE = ("torchvista_dash", "torchvista_dash.traced")   # on top: it calls down into every stage, app included


def _internal_graph(*, module_level_only: bool = True) -> dict[str, set[str]]:
    """Module → the package's modules it imports. A module's own packages are left out (they are already being
    imported when it runs); with function-level imports, the facade's own (it calls down, lazily) too."""
    return {m: set() if not module_level_only and m in FACADE else
            {i for i in _imports(p, module_level_only=module_level_only)
             if i in MODULES and not (m + ".").startswith(i + ".")}
            for m, p in MODULES.items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_the_checker_sees_the_package() -> None:
    graph = _internal_graph()
    assert len(MODULES) > 30
    assert "torchvista_dash.app.callbacks" in graph["torchvista_dash.app.aio"]
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_cycles() -> None:
    assert _cycles(_internal_graph()) == []


def test_no_cycles_through_lazy_imports_either() -> None:
    """An import inside a function is still a dependency: only the facade may reach down lazily (``show()``)."""
    assert _cycles(_internal_graph(module_level_only=False)) == []


BELOW_THE_FACADE = ("graph", "graph_checks", "options", "view", "view_types", "repeats", "iogroups", "layout",
                    "render", "trace", "nx_export")


@pytest.mark.parametrize("stage", BELOW_THE_FACADE)
def test_no_stage_calls_back_into_the_facade(stage: str) -> None:
    prefix = f"torchvista_dash.{stage}"
    for mod, path in MODULES.items():
        if mod == prefix or mod.startswith(prefix + "."):
            ups = {i for i in _imports(path, module_level_only=False)
                   if i in ("torchvista_dash", "torchvista_dash.traced", "torchvista_dash.pipeline")
                   or i.startswith("torchvista_dash.app")}
            assert not ups, f"{mod} imports {sorted(ups)}: stages take plain data and never call up"


# Beside trace/, torch is imported by the models themselves (the demos) and by the CLI's check of what a
# user's model function returned, before it is traced: never by a stage after the trace.
ALSO_TORCH = ("torchvista_dash.demos", "torchvista_dash.cli")


@pytest.mark.parametrize(("library", "home", "also"), [("torch", "trace", ALSO_TORCH), ("plotly", "render", ()),
                                                       ("dash", "app", ()), ("subprocess", "layout", ())])
def test_each_library_has_one_home(library: str, home: str, also: tuple[str, ...]) -> None:
    strays = sorted(mod for mod, path in MODULES.items()
                    if not (mod.startswith(f"torchvista_dash.{home}.") or mod == f"torchvista_dash.{home}")
                    and mod not in also
                    and any(i == library or i.startswith(library + ".")
                            for i in _imports(path, module_level_only=False)))
    assert strays == [], f"only {home}/ may import {library}"
