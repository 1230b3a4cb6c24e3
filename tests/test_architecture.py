"""The folder shape of docs/architecture.md, checked on the source: imports run down the layers, each library
has one home, and the document's folder map is the package's.

Read from the source with ``ast`` (nothing is imported), so the rules hold for every module, loaded or not:
no import cycle (and none through imports inside functions but the facade's), no import up a layer, only
``frontends/`` imports torch, only ``layout/graphviz/`` starts processes, only ``render/`` imports plotly and
only ``app/`` imports dash.
"""

from __future__ import annotations

import ast
import re
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


FACADE = ("torchvista_dash", "torchvista_dash.traced")  # on top: it calls down into every stage, app included


def _internal_graph(*, module_level_only: bool = True) -> dict[str, set[str]]:
    """Module → the package's modules it imports. A module's own packages are left out (they are already being
    imported when it runs); with function-level imports, the facade's own (it calls down, lazily) too."""
    return {
        m: set()
        if not module_level_only and m in FACADE
        else {
            i
            for i in _imports(p, module_level_only=module_level_only)
            if i in MODULES and not (m + ".").startswith(i + ".")
        }
        for m, p in MODULES.items()
    }


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
    assert "torchvista_dash.app.component.callbacks" in graph["torchvista_dash.app.component.aio"]
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_cycles() -> None:
    assert _cycles(_internal_graph()) == []


def test_no_cycles_through_lazy_imports_either() -> None:
    """An import inside a function is still a dependency: only the facade may reach down lazily
    (``show()``)."""
    assert _cycles(_internal_graph(module_level_only=False)) == []


# The layers, bottom up (docs/architecture.md draws them). A module imports its own layer and the layers below
# it, never one above: the stages take plain data and never call up, and inside app/ the per-trace state knows
# nothing of HTTP, what a click does knows nothing of the component's wiring, and so on.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("cache",),
    ("model",),
    ("frontends", "view"),
    ("layout",),
    ("render",),
    ("pipeline",),
    ("traced",),
    ("compare", "demos"),
    ("app.traces",),
    ("app.http",),
    ("app.actions",),
    ("app.component",),
    ("app.server", "app"),
    ("cli",),
    ("__main__", ""),
)


def _layer(module: str) -> int:
    """The rank of ``module``'s layer: the longest entry of LAYERS that names it or a package holding it."""
    rel = module.removeprefix("torchvista_dash").removeprefix(".")
    best, rank = -1, -1
    for r, names in enumerate(LAYERS):
        for name in names:
            if (rel == name or rel.startswith(name + ".") or name == "") and len(name) > best:
                best, rank = len(name), r
    assert rank >= 0, f"{module} is in no layer: add it to LAYERS (and to docs/architecture.md)"
    return rank


def test_every_module_has_a_layer_and_the_checker_can_fail() -> None:
    for mod in MODULES:
        _layer(mod)
    assert _layer("torchvista_dash.app.traces.state") < _layer("torchvista_dash.app.http.picture_routes")
    assert _layer("torchvista_dash.layout.graphviz.run") == _layer("torchvista_dash.layout")
    assert _layer("torchvista_dash") > _layer("torchvista_dash.traced")


@pytest.mark.parametrize("module_level_only", [True, False], ids=["module level", "inside functions too"])
def test_imports_run_down_the_layers(module_level_only: bool) -> None:
    """Imports inside functions count too: only the facade (``Trace`` and the package root) reaches up lazily,
    for ``show()`` and ``ModelGraph``."""
    ups = sorted(
        f"{mod} imports {dep}"
        for mod, deps in _internal_graph(module_level_only=module_level_only).items()
        for dep in deps
        if _layer(dep) > _layer(mod)
    )
    assert ups == []


# Beside frontends/, torch is imported by the models themselves (the demos) and by the CLI's check of what a
# user's model function returned, before it is traced: never by a stage after the trace.
ALSO_TORCH = ("torchvista_dash.demos", "torchvista_dash.cli")


@pytest.mark.parametrize(
    ("library", "home", "also"),
    [
        ("torch", "frontends", ALSO_TORCH),
        ("plotly", "render", ()),
        ("dash", "app", ()),
        ("subprocess", "layout.graphviz", ()),
    ],
)
def test_each_library_has_one_home(library: str, home: str, also: tuple[str, ...]) -> None:
    strays = sorted(
        mod
        for mod, path in MODULES.items()
        if not (mod.startswith(f"torchvista_dash.{home}.") or mod == f"torchvista_dash.{home}")
        and mod not in also
        and any(i == library or i.startswith(library + ".") for i in _imports(path, module_level_only=False))
    )
    assert strays == [], f"only {home.replace('.', '/')}/ may import {library}"


ARCHITECTURE = PACKAGE.parent / "docs" / "architecture.md"


def test_the_folder_map_is_the_package() -> None:
    """docs/architecture.md's folder map names every package folder, and every folder it names exists."""
    text = ARCHITECTURE.read_text(encoding="utf-8")
    mapped = set(re.findall(r"^- `(torchvista_dash/[\w/]*)`", text, flags=re.MULTILINE))
    on_disk = {str(p.parent.relative_to(PACKAGE.parent)) + "/" for p in PACKAGE.rglob("__init__.py")}
    assert mapped == on_disk, (
        f"only in the map: {sorted(mapped - on_disk)}; only on disk: {sorted(on_disk - mapped)}"
    )
    named_layers = {name.split(".")[0] for names in LAYERS for name in names if name}
    assert all(f"`{name}" in text for name in named_layers)
