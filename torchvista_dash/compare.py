"""A diff of two traces: which modules were added, removed or changed, and one graph that shows it.

Modules are matched by qualname (the names ``named_modules()`` gives, so ``h.2`` is the third block in both
models). A module present in both is *changed* when its class, ``extra_repr``, own parameter shapes or the
shapes of the tensors crossing its boundary differ (compared on its first call). The drawing is one graph: the
newer trace, with the older one's removed modules grafted in where they were (ghosted), so it opens and closes
like any view; folded runs compare by count ("GPT2Block ×2 → ×3: +1").

Pure data: no torch. ``Diff.trace`` is a ``Trace`` of the merged graph whose pictures carry the diff's paint.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from torchvista_dash.model.costs import stats_rows
from torchvista_dash.model.graph import Graph, ModuleCall, call_id_for, shape_text
from torchvista_dash.model.valuediff import ATOL, RTOL, OpDiff, ValueDiff
from torchvista_dash.traced import Trace

if TYPE_CHECKING:  # pragma: no cover - typing only
    from torchvista_dash.render.paint import Paint
    from torchvista_dash.view.types import VisibleGraph

ADDED, REMOVED, CHANGED, SAME = "added", "removed", "changed", "same"
GRAFT = "was:"  # id prefix of the older trace's removed calls and nodes in the merged graph


@dataclasses.dataclass(frozen=True)
class ModuleFacts:
    """What is compared about a module (its first call)."""

    cls: str
    extra_repr: str
    params: tuple[tuple[str, tuple[int, ...], str], ...]
    inputs: tuple[tuple[tuple[int, ...], str], ...]
    outputs: tuple[tuple[tuple[int, ...], str], ...]


def module_facts(graph: Graph) -> dict[str, ModuleFacts]:
    """Per qualname, the facts of its first call: class, extra_repr, own parameters, boundary shapes."""
    chains: dict[str | None, tuple[str, ...]] = {None: ()}
    for c in graph.module_calls:  # a call is recorded after its parent
        chains[c.id] = (*chains.get(c.parent, ()), c.id)
    kinds = {n.id: (n.kind, n.parent) for n in graph.nodes}
    ins: dict[str, dict[str, tuple[tuple[int, ...], str]]] = {}
    outs: dict[str, dict[str, tuple[tuple[int, ...], str]]] = {}
    for e in graph.edges:
        skind, sparent = kinds[e.src]
        if skind in ("parameter", "constant"):
            continue
        src_chain = chains.get(sparent, ())
        dst_chain = chains.get(kinds[e.dst][1], ())
        meta = (e.meta.shape, e.meta.dtype)
        for cid in dst_chain:
            if cid not in src_chain:
                ins.setdefault(cid, {})[e.tensor] = meta
        for cid in src_chain:
            if cid not in dst_chain:
                outs.setdefault(cid, {})[e.tensor] = meta
    facts: dict[str, ModuleFacts] = {}
    for c in graph.module_calls:
        if c.qualname in facts:
            continue
        facts[c.qualname] = ModuleFacts(
            cls=c.cls,
            extra_repr=c.extra_repr,
            params=tuple((p.name, p.shape, p.dtype) for p in c.params),
            inputs=tuple(sorted(ins.get(c.id, {}).values())),
            outputs=tuple(sorted(outs.get(c.id, {}).values())),
        )
    return facts


def _reasons(a: ModuleFacts, b: ModuleFacts) -> list[str]:
    out = []
    if a.cls != b.cls:
        out.append(f"class {a.cls} → {b.cls}")
    if a.extra_repr != b.extra_repr:
        out.append(f"{a.extra_repr or '(none)'} → {b.extra_repr or '(none)'}")
    if a.params != b.params:
        out.append("parameters " + _params_text(a.params) + " → " + _params_text(b.params))
    if a.inputs != b.inputs:
        out.append("inputs " + _shapes_text(a.inputs) + " → " + _shapes_text(b.inputs))
    if a.outputs != b.outputs:
        out.append("outputs " + _shapes_text(a.outputs) + " → " + _shapes_text(b.outputs))
    return out


def _shape(s: tuple[int, ...]) -> str:
    return shape_text(s)


def _shapes_text(ms: Iterable[tuple[tuple[int, ...], str]]) -> str:
    items = [_shape(s) for s, _ in ms]
    return ", ".join(items[:4]) + (" …" if len(items) > 4 else "") if items else "none"


def _params_text(ps: Iterable[tuple[str, tuple[int, ...], str]]) -> str:
    items = [f"{n} {_shape(s)}" for n, s, _ in ps]
    return ", ".join(items[:4]) + (" …" if len(items) > 4 else "") if items else "none"


class Diff:
    """``compare(a, b)``: the modules of ``b`` against those of ``a``, and their drawing."""

    def __init__(self, a: Trace | Graph, b: Trace | Graph) -> None:
        self.a = a.graph if isinstance(a, Trace) else a
        self.b = b.graph if isinstance(b, Trace) else b
        if not isinstance(self.a, Graph) or not isinstance(self.b, Graph):
            raise TypeError(
                "compare(a, b) takes two Traces (or Graphs): trace_model(...) or load_trace(path)"
            )
        fa, fb = module_facts(self.a), module_facts(self.b)
        self.status: dict[str, str] = {}
        self.reasons: dict[str, list[str]] = {}
        for q in fb:
            if q not in fa:
                self.status[q] = ADDED
            else:
                why = _reasons(fa[q], fb[q])
                self.status[q] = CHANGED if why else SAME
                if why:
                    self.reasons[q] = why
        for q in fa:
            if q not in fb:
                self.status[q] = REMOVED
        self.rows_a = {r["qualname"]: r for r in stats_rows(self.a)}
        self.rows_b = {r["qualname"]: r for r in stats_rows(self.b)}
        self._trace: Trace | None = None

    def summary(self) -> dict[str, Any]:
        """``{"added", "removed", "changed"}`` (qualnames, in call order) and ``deltas``: per module whose
        parameter count or FLOPs differ, both sides and the difference (None where a side lacks the
        module)."""
        out: dict[str, Any] = {
            k: [q for q, s in self.status.items() if s == k] for k in (ADDED, REMOVED, CHANGED)
        }
        deltas = []
        for q in self.status:
            ra, rb = self.rows_a.get(q), self.rows_b.get(q)
            row: dict[str, Any] = {"qualname": q}
            differs = False
            for key in ("params", "flops"):
                va = None if ra is None else ra[key]
                vb = None if rb is None else rb[key]
                row[f"{key}_a"], row[f"{key}_b"] = va, vb
                row[f"{key}_delta"] = (vb or 0) - (va or 0) if (va is not None or vb is not None) else None
                differs |= va != vb
            if differs:
                deltas.append(row)
        out["deltas"] = deltas
        return out

    @property
    def empty(self) -> bool:
        return all(s == SAME for s in self.status.values())

    # ---- the drawing -------------------------------------------------------------------------------------
    @property
    def trace(self) -> Trace:
        """A Trace of the merged graph whose figures, exports and app views are painted with this diff."""
        if self._trace is None:
            self._trace = DiffTrace(self, merged_graph(self))
        return self._trace

    def figure(self, depth: int | None = 1, **options: Any) -> Any:
        return self.trace.figure(depth=depth, **options)

    def show(self, mode: str = "inline", **options: Any) -> Any:
        return self.trace.show(mode=mode, **options)

    def export(self, path: str | Path, **options: Any) -> Path:
        """Write the diff picture (html, svg, png, pdf; json writes the summary)."""
        path = Path(path)
        if path.suffix.lower() == ".json":
            import json

            path.write_text(json.dumps(self.summary(), indent=1, sort_keys=True) + "\n", encoding="utf-8")
            return path
        return self.trace.export(path, **options)

    # ---- values: where two runs of one architecture diverge (value traces) -----------------------------
    @functools.cached_property
    def values(self) -> ValueDiff:
        """Per op, how far the two runs' outputs are apart (both traces made with ``values=True``)."""
        return ValueDiff(self.a, self.b)

    def first_divergence(self, rtol: float = RTOL, atol: float = ATOL) -> OpDiff | None:
        """The first op whose output differs beyond ``atol + rtol * |value|`` while its inputs did not
        (``.name``, ``.qualname``, ``.node``, ``.abs``, ``.rel``); None if the runs agree."""
        return self.values.first_divergence(rtol, atol)

    def values_figure(
        self, rtol: float = RTOL, atol: float = ATOL, depth: int | None = 1, **options: Any
    ) -> Any:
        """The second run's graph coloured by each op's relative difference from the first, with the first
        divergence opened, outlined and centred in the details it hovers with."""
        from torchvista_dash.model.metrics import UserValues
        from torchvista_dash.model.options import split_options
        from torchvista_dash.pipeline import figure_of
        from torchvista_dash.view import build as view_mod

        first = self.first_divergence(rtol, atol)
        view, draw = split_options({"depth": depth, **options}, where="values_figure()")
        spec = view_mod.make_spec(
            self.b, depth=view.depth, fold_repeats=view.fold_repeats, show_params=view.show_params
        )
        if first is not None:
            spec = view_mod.expand_to(self.b, spec, first.node)
        vg = view_mod.build_view(self.b, spec, view.node_budget)
        highlight = None if first is None else view_mod.visible_id_of(self.b, vg, first.node)
        rel = UserValues(tuple(sorted(self.values.relative().items())), label="relative difference")
        return figure_of(self.b, vg, dataclasses.replace(draw, color_by=rel, highlight=highlight))

    def status_of_call(self, call: ModuleCall) -> str:
        """A merged-graph call's status (grafted calls are the removed ones)."""
        if call.id.startswith(GRAFT):
            return REMOVED
        return self.status.get(call.qualname, SAME)

    def __repr__(self) -> str:
        s = self.summary()
        return (
            f"<Diff {self.a.model_name} → {self.b.model_name}: {len(s['added'])} added, "
            f"{len(s['removed'])} removed, {len(s['changed'])} changed>"
        )


class DiffTrace(Trace):
    """The merged graph as a Trace: its own id (never the newer trace's), pictures painted by the diff."""

    def __init__(self, diff: Diff, graph: Graph) -> None:
        super().__init__(graph)
        self.diff = diff

    @property
    def id(self) -> str:
        h = hashlib.sha1(f"diff:{self.diff.a.content_id}:{self.diff.b.content_id}".encode()).hexdigest()
        return "diff-" + h[:16]

    @functools.cached_property
    def default_expanded(self) -> frozenset[str]:
        """The modules that hold a change, so that the first view shows each added, removed or changed module:
        every ancestor of one, down to (not into) a folded run, whose box is marked as a whole."""
        from torchvista_dash.view.repeats import index_of

        idx = index_of(self.graph)
        calls = self.graph.call_by_id
        opened: set[str] = set()
        for call in self.graph.module_calls:
            parent = calls.get(call.parent) if call.parent else None
            if self.diff.status_of_call(call) == SAME or (
                parent is not None and self.diff.status_of_call(parent) in (ADDED, REMOVED)
            ):
                continue  # inside an added or removed module, which is marked whole
            for cid in idx.call_chain[call.id][:-1]:
                if cid in idx.fold_of:
                    break
                opened.add(cid)
        return frozenset(opened)

    def paint(self, vg: VisibleGraph, theme: str = "light") -> Paint | None:
        from torchvista_dash.render.diffpaint import diff_paint

        return diff_paint(self.diff, self.graph, vg, theme)


def compare(a: Trace | Graph, b: Trace | Graph) -> Diff:
    """The diff of trace ``b`` against trace ``a`` (the older one first): ``summary()``, ``figure()``,
    ``show()``."""
    return Diff(a, b)


# ---- one graph for both ----------------------------------------------------------------------------------
def merged_graph(diff: Diff) -> Graph:
    """The newer graph plus the older one's removed modules (ids prefixed ``was:``) under the same parents.

    A removed module's boundary tensors have no counterpart in the newer graph, so its grafted box is joined
    to the rest only where its parent's own nodes were matched; inside it, its ops keep their edges.
    """
    a, b = diff.a, diff.b
    removed_tops = [
        c
        for c in a.module_calls
        if diff.status.get(c.qualname) == REMOVED
        and (c.parent is None or diff.status.get(a.call_by_id[c.parent].qualname) != REMOVED)
    ]
    name = f"{a.model_name} → {b.model_name}" if a.model_name != b.model_name else b.model_name
    if not removed_tops:
        return dataclasses.replace(b, model_name=name)
    if not any(s == ADDED for s in diff.status.values()) and not b.error:
        # only removals: the older graph is the picture, its removed modules ghosted (no grafting needed)
        return dataclasses.replace(a, model_name=name)
    grafted_calls: list[ModuleCall] = []
    keep: set[str] = set()
    b_calls = b.call_by_id
    for top in removed_tops:
        parent_q = a.call_by_id[top.parent].qualname if top.parent else None
        new_parent = call_id_for(parent_q, 0) if parent_q is not None else None
        if new_parent is not None and new_parent not in b_calls:
            new_parent = None
        stack = [top.id]
        sub: set[str] = set()
        while stack:
            cid = stack.pop()
            sub.add(cid)
            stack.extend(a.children_calls.get(cid, []))
        for c in a.module_calls:
            if c.id in sub:
                parent = new_parent if c.id == top.id else GRAFT + str(c.parent)
                grafted_calls.append(dataclasses.replace(c, id=GRAFT + c.id, parent=parent))
        keep |= sub
    calls = _fix_depths(grafted_calls, b_calls)
    nodes = [
        dataclasses.replace(n, id=GRAFT + n.id, parent=GRAFT + str(n.parent))
        for n in a.nodes
        if n.parent in keep
    ]
    inside = {n.id[len(GRAFT) :] for n in nodes}
    edges = [
        dataclasses.replace(e, src=GRAFT + e.src, dst=GRAFT + e.dst, tensor=GRAFT + e.tensor)
        for e in a.edges
        if e.src in inside and e.dst in inside
    ]
    return dataclasses.replace(
        b,
        model_name=name,
        nodes=(*b.nodes, *nodes),
        edges=(*b.edges, *edges),
        module_calls=(*b.module_calls, *calls),
    )


def _fix_depths(calls: list[ModuleCall], base: dict[str, ModuleCall]) -> list[ModuleCall]:
    depth = {cid: c.depth for cid, c in base.items()}
    out = []
    for c in calls:  # parents come first (call order)
        d = 0 if c.parent is None else depth[c.parent] + 1
        depth[c.id] = d
        out.append(dataclasses.replace(c, depth=d))
    return out


__all__ = ["Diff", "DiffTrace", "compare", "merged_graph", "module_facts"]
