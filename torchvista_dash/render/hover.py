"""Hover text for every visible box and cluster header: what a user needs without opening anything.

Plotly hover labels understand a little HTML (``<b>``, ``<br>``), so user text (names, error
messages, source lines) is escaped and wrapped here.
"""

from __future__ import annotations

import html
import textwrap
from collections.abc import Iterable

from torchvista_dash.model.graph import Graph, ModuleCall, Node, TensorMeta, meta_text, numel, shown_args
from torchvista_dash.model.metrics import grad_lines
from torchvista_dash.model.values import ValueStats, describe, tensor_values
from torchvista_dash.view.types import Cluster, VisibleEdge, VisibleGraph, VisibleNode

MAX_LINE = 90
MAX_ERROR_CHARS = 700


def esc(text: str) -> str:
    return html.escape(str(text), quote=False)


def wrap(text: str, width: int = MAX_LINE, limit: int = MAX_ERROR_CHARS) -> str:
    """Escape and wrap free text (error messages, source lines) for a hover label."""
    text = str(text)
    if len(text) <= width and "\n" not in text:  # most are one short line: no textwrap (thousands per figure)
        return esc(text)
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    lines: list[str] = []
    for raw in text.splitlines() or [""]:
        lines.extend(textwrap.wrap(raw, width) or [""])
    return "<br>".join(esc(line) for line in lines)


def _metas(metas: Iterable[TensorMeta], limit: int = 4) -> str:
    items = [meta_text(m) for m in metas]
    if len(items) > limit:
        items = items[:limit] + [f"… (+{len(items) - limit})"]
    return esc(", ".join(items)) if items else "—"


def _value_lines(
    stats: Iterable[ValueStats | None], metas: Iterable[TensorMeta], limit: int = 2
) -> list[str]:
    """A value trace's summary of each output (the first ``limit``), one line each."""
    rows = list(zip(stats, metas, strict=False))
    lines = [
        f"values{f' [{k}]' if len(rows) > 1 else ''}: {esc(describe(s, m.device))}"
        for k, (s, m) in enumerate(rows[:limit])
    ]
    if len(rows) > limit:
        lines.append(f"values: … (+{len(rows) - limit} more outputs)")
    return lines


class HoverIndex:
    """Per-figure lookups (incoming tensors per node, parameter sizes) computed once."""

    def __init__(self, graph: Graph, vg: VisibleGraph) -> None:
        self.graph = graph
        self.inputs: dict[str, list[TensorMeta]] = {}
        for e in sorted(graph.edges, key=lambda e: (e.dst, e.dst_arg)):
            self.inputs.setdefault(e.dst, []).append(e.meta)
        self.vin: dict[str, list[VisibleEdge]] = {}
        self.vout: dict[str, list[VisibleEdge]] = {}
        for ve in vg.edges:
            self.vin.setdefault(ve.dst, []).append(ve)
            self.vout.setdefault(ve.src, []).append(ve)
        self.values = tensor_values(graph) if "values" in graph.measured else None
        self.param_numel: dict[str, int] = {}
        for c in graph.module_calls:
            for p in c.params:
                full = f"{c.qualname}.{p.name}" if c.qualname else p.name
                self.param_numel[full] = numel(p.shape)

    # ---- module calls ------------------------------------------------------------------
    def _call_lines(self, call: ModuleCall) -> list[str]:
        lines = [f"module: {esc(call.qualname or '(root)')} ({esc(call.cls)})"]
        if call.call_index:
            lines.append(f"call #{call.call_index + 1} of this module")
        if call.num_params:
            lines.append(f"parameters: {call.num_params:,}")
        if call.extra_repr:
            lines.append(wrap(call.extra_repr, limit=200))
        if "grads" in self.graph.measured:
            lines += [f"{esc(k)}: {wrap(v, limit=240)}" for k, v in grad_lines(self.graph, call.qualname)]
        return lines

    def _call_of(self, call_id: str | None) -> ModuleCall | None:
        return None if call_id is None else self.graph.call_by_id.get(call_id)

    # ---- visible boxes -----------------------------------------------------------------
    def node_text(self, vn: VisibleNode) -> str:
        node = self.graph.node_by_id.get(vn.id)
        if node is not None:
            return self._graph_node_text(node, vn)
        if vn.kind == "folded":
            return self._folded_text(vn)
        return self._module_text(vn)

    def _graph_node_text(self, node: Node, vn: VisibleNode) -> str:
        lines = [f"<b>{esc(node.name)}</b> ({esc(node.kind)})"]
        call = self._call_of(node.parent)
        if call is not None:
            lines.append(f"in module: {esc(call.qualname or '(root)')} ({esc(call.cls)})")
        if node.kind not in ("input", "parameter", "constant"):
            lines.append("inputs: " + _metas(self.inputs.get(node.id, [])))
        lines.append("outputs: " + _metas(node.outputs))
        if self.values is not None and node.kind != "parameter":
            lines += _value_lines(node.values or (None,) * len(node.outputs), node.outputs)
        if node.params:
            count = sum(self.param_numel.get(p, 0) for p in node.params)
            names = ", ".join(node.params[:4]) + (" …" if len(node.params) > 4 else "")
            lines.append(f"parameters: {count:,} ({esc(names)})" if count else f"parameters: {esc(names)}")
        shown = shown_args(node.args)
        if shown:
            args = ", ".join(f"{k}={v}" for k, v in shown[:6])
            lines.append("args: " + wrap(args, limit=240))
        if node.source:
            lines.append("source: " + wrap(node.source, limit=240))
        if node.error:
            lines.append("<b>error:</b> " + wrap(node.error))
        elif vn.failed:
            lines.append("<b>failed</b>")
        return "<br>".join(lines)

    def _edge_lines(self, vn_id: str) -> list[str]:
        ins = [ve.meta for ve in self.vin.get(vn_id, [])]
        out_edges = self.vout.get(vn_id, [])
        lines = ["inputs: " + _metas(ins), "outputs: " + _metas([ve.meta for ve in out_edges])]
        if self.values is not None and out_edges:
            values = self.values
            lines += _value_lines([values.get(ve.tensor) for ve in out_edges], [ve.meta for ve in out_edges])
        return lines

    def edge_text(self, ve: VisibleEdge, labels: dict[str, str]) -> str:
        """An edge's hover: what it carries (shape, dtype, bytes, how many tensors) and the boxes at its two
        ends, so a shape left out at a far zoom can still be read."""
        from torchvista_dash.model.metrics import human

        many = f" (×{ve.count} tensors)" if ve.count > 1 else ""
        lines = [
            f"<b>{esc(meta_text(ve.meta))}</b>{many}",
            f"{esc(human(float(ve.nbytes or ve.meta.nbytes), 'bytes'))}",
            f"from: {esc(labels.get(ve.src, ve.src))}",
            f"to: {esc(labels.get(ve.dst, ve.dst))}",
        ]
        return "<br>".join(lines)

    def _module_text(self, vn: VisibleNode) -> str:
        call = self._call_of(vn.members[0] if vn.members else vn.id)
        lines = [f"<b>{esc(vn.label)}</b> (collapsed module — click to open)"]
        if call is not None:
            lines += self._call_lines(call)
        lines += self._edge_lines(vn.id)
        if vn.failed:
            lines.append(self._failure_line())
        return "<br>".join(lines)

    def _folded_text(self, vn: VisibleNode) -> str:
        calls = [c for c in (self._call_of(m) for m in vn.members) if c is not None]
        lines = [f"<b>{esc(vn.label)}</b> ({vn.count} repeated calls folded — click to unfold)"]
        if calls:
            names = ", ".join(c.qualname for c in calls[:3]) + (" …" if len(calls) > 3 else "")
            lines.append(f"calls: {esc(names)}")
            lines.append(f"class: {esc(calls[0].cls)}")
            total = sum(c.num_params for c in calls)
            if total:
                lines.append(f"parameters: {total:,} in all")
        lines += self._edge_lines(vn.id)
        if vn.failed:
            lines.append(self._failure_line())
        return "<br>".join(lines)

    def _failure_line(self) -> str:
        err = self.graph.error
        if err is None:
            return "<b>failed</b>"
        return f"<b>failed inside:</b> {wrap(f'{err.type}: {err.message}')}"

    def cluster_text(self, cl: Cluster) -> str:
        call = self._call_of(cl.id)
        lines = [f"<b>{esc(cl.label)}</b> (expanded — click the header to collapse)"]
        if call is not None:
            lines += self._call_lines(call)
        if cl.failed:
            lines.append(self._failure_line())
        return "<br>".join(lines)
