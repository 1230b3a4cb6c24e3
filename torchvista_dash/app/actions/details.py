"""The details panel and the header line: what a user learns about a module, an op or a failure."""

from __future__ import annotations

import re
from typing import Any

from dash import html

from torchvista_dash.app.actions.valuerows import grad_rows, node_value_rows, output_value_rows
from torchvista_dash.app.traces import registry
from torchvista_dash.model.costs import cost_lines, heaviest_children, human
from torchvista_dash.model.graph import (
    Graph,
    ModuleCall,
    Node,
    TensorMeta,
    meta_text,
    numel,
    shape_text,
    shown_args,
)
from torchvista_dash.render.style import get_theme
from torchvista_dash.view.iogroups import io_groups

MONO = {"fontFamily": "ui-monospace, SFMono-Regular, Menlo, Consolas, monospace", "fontSize": "12px"}
# a value cell wraps anywhere rather than running past the panel's edge (a long shape list, an extra_repr);
# inline, so a ModelGraph in a user's app (without this package's stylesheet) wraps too
VALUE = {**MONO, "overflowWrap": "anywhere", "whiteSpace": "pre-wrap"}
ERROR_COLOR = get_theme("light").failed_line  # the red the figure gives failed ops and modules


def error_text(text: str, *, bold: bool = False, className: str | None = None, **style: str) -> html.Div:
    """A message in the app's error red (failures, bad pages, callbacks that raised)."""
    css = {"color": ERROR_COLOR, **({"fontWeight": "bold"} if bold else {}), **style}
    return html.Div(text, className=className, style=css)


def header(graph: Graph) -> list:
    """Model name, total parameters, op count and, for a failed trace, the error in red."""
    parts: list = [
        html.B(graph.model_name or "model", className="tvd-model-name"),
        html.Span(
            f" · {graph.total_params:,} parameters · {graph.op_count:,} ops · "
            f"{len(graph.module_calls):,} module calls"
        ),
    ]
    if graph.error is not None:
        where = ""
        if graph.error.node and graph.error.node in graph.node_by_id:
            n = graph.node_by_id[graph.error.node]
            owner = graph.call_by_id[n.parent].qualname if n.parent in graph.call_by_id else ""
            where = f" (in {n.name}" + (f", {owner}" if owner else "") + ")"
        parts.append(
            error_text(
                f"Forward pass failed{where}: {graph.error.type}: {graph.error.message}",
                bold=True,
                className="tvd-error",
            )
        )
    return parts


def _inside(trace_id: str) -> dict[str, frozenset[str]]:
    """Call id → ids of every node inside it (at any depth); computed once per trace, kept in its entry."""
    entry = registry.entry(trace_id)

    def make() -> dict[str, frozenset[str]]:
        graph = entry.trace.graph
        out: dict[str, set[str]] = {c.id: set() for c in graph.module_calls}
        for n in graph.nodes:
            for c in graph.ancestors(n.parent):
                out[c].add(n.id)
        return {k: frozenset(v) for k, v in out.items()}

    return entry.facts.get("inside", make)


def call_io(trace_id: str, call_id: str) -> tuple[list[TensorMeta], list[TensorMeta]]:
    """Tensors entering and leaving a module call (one per value, in graph order)."""
    ins, outs = call_tensors(trace_id, call_id)
    return list(ins.values()), list(outs.values())


def call_tensors(trace_id: str, call_id: str) -> tuple[dict[str, TensorMeta], dict[str, TensorMeta]]:
    """``call_io`` by tensor name (``n:3/0``): what entered and what left the call."""
    graph = registry.get(trace_id).graph
    inside = _inside(trace_id).get(call_id, frozenset())
    ins: dict[str, TensorMeta] = {}
    outs: dict[str, TensorMeta] = {}
    for e in graph.edges:
        src_in, dst_in = e.src in inside, e.dst in inside
        if dst_in and not src_in and graph.node_by_id[e.src].kind not in ("parameter", "constant"):
            ins.setdefault(e.tensor, e.meta)
        elif src_in and not dst_in:
            outs.setdefault(e.tensor, e.meta)
    return ins, outs


def _row(k: str, v: object) -> html.Tr:
    return html.Tr(
        [
            html.Th(
                k,
                style={
                    "textAlign": "left",
                    "paddingRight": "8px",
                    "verticalAlign": "top",
                    "whiteSpace": "nowrap",
                },
            ),
            html.Td(str(v), style=VALUE),
        ]
    )


def _module(trace_id: str, call: ModuleCall) -> list:
    ins, outs = call_io(trace_id, call.id)
    graph = registry.get(trace_id).graph
    rows = [_row("qualname", call.qualname or "(root)"), _row("class", call.cls)]
    if call.call_index:
        rows.append(_row("call", f"#{call.call_index + 1} of this module"))
    if call.extra_repr:
        rows.append(_row("extra_repr", call.extra_repr))
    for k, v in call.attrs:
        rows.append(_row(k, v))
    rows.append(_row("inputs", ", ".join(meta_text(m) for m in ins) or "—"))
    rows.append(_row("outputs", ", ".join(meta_text(m) for m in outs) or "—"))
    rows += [_row(k, v) for k, v in output_value_rows(graph, call_tensors(trace_id, call.id)[1])]
    rows += [_row(k, v) for k, v in grad_rows(graph, call.qualname)]
    own = sum(numel(p.shape) for p in call.params if not p.is_buffer)
    model_params = graph.total_params
    share = f" ({100.0 * call.num_params / model_params:.1f} % of the model)" if model_params else ""
    # the one parameters line: the cost rows below leave parameters out
    rows.append(_row("parameters", f"{call.num_params:,} in total{share}, {own:,} its own"))
    out: list = [
        html.H4(f"{call.qualname or '(root)'}: {call.cls}", style={"margin": "4px 0"}),
        html.Table(rows, className="tvd-details-table"),
    ]
    if call.params:
        out.append(
            html.Table(
                [
                    html.Tr(
                        [
                            html.Th(h, style={"textAlign": "left", "paddingRight": "8px"})
                            for h in ("name", "shape", "dtype", "trainable")
                        ]
                    )
                ]
                + [
                    html.Tr(
                        [
                            html.Td(p.name + (" (buffer)" if p.is_buffer else ""), style=MONO),
                            html.Td(shape_text(p.shape), style=MONO),
                            html.Td(p.dtype, style=MONO),
                            html.Td("yes" if p.trainable else "no"),
                        ]
                    )
                    for p in call.params
                ],
                className="tvd-params-table",
            )
        )
    out += _costs(trace_id, call)
    if call.failed:
        out.append(error_text("the forward pass failed inside this module"))
    return out


def _relative(qualname: str, parent: str) -> str:
    """A child call's name inside ``parent``: ``layers.0`` in ``model``, not ``0`` (a ModuleList is no
    call)."""
    return qualname[len(parent) + 1 :] if parent and qualname.startswith(parent + ".") else qualname


def _costs(trace_id: str, call: ModuleCall) -> list:
    """The call's totals (FLOPs, output bytes, time) with their shares, and its heaviest children."""
    graph = registry.get(trace_id).graph
    rows = cost_lines(graph, call_id=call.id, skip=("params",))
    if not rows:
        return []
    out: list = [html.Table([_row(k, v) for k, v in rows], className="tvd-cost-table")]
    kids = heaviest_children(graph, call.id)
    if kids:
        out.append(html.Div("heaviest inside (FLOPs):", style={"marginTop": "6px"}))
        out.append(
            html.Ol(
                [
                    html.Li(
                        f"{_relative(q, call.qualname)} ({cls}): {human(v, 'flops')}, {100 * share:.0f} %",
                        style=MONO,
                    )
                    for q, cls, v, share in kids
                ],
                className="tvd-heaviest",
            )
        )
    return out


_TENSOR_ARG = re.compile(r"Tensor\[([^\]]*)\]")
_FRAME = re.compile(r'^  File "([^"]*)", line \d+')
_TORCH_FILE = re.compile(r"[/\\]torch[/\\]")  # a file inside the torch package (site-packages/torch/...)


def arg_text(value: str) -> str:
    """An op argument as the rest of the panel writes tensors (``2×8 float32``, not ``Tensor[2×8
    float32]``)."""
    return _TENSOR_ARG.sub(r"\1", value)


def user_traceback(text: str) -> str:
    """The traceback without frames inside torch (module call plumbing, dispatch modes): the frames left are
    the user's code down to the failing call, then the exception line; a note says how many were hidden."""
    lines = text.splitlines()
    out: list[str] = []
    hidden = 0
    skipping = False
    for line in lines:
        m = _FRAME.match(line)
        if m is not None:
            skipping = bool(_TORCH_FILE.search(m.group(1)))
            hidden += skipping
        elif not line.startswith("    "):
            skipping = False  # the header or the exception line
        if not skipping:
            out.append(line)
    if hidden:
        out.insert(
            1 if out and out[0].startswith("Traceback") else 0,
            f"  ({hidden} frame{'s' * (hidden != 1)} inside torch hidden)",
        )
    return "\n".join(out)


def _node(graph: Graph, node: Node) -> list:
    rows = [_row("kind", node.kind), _row("id", node.id)]
    if node.parent in graph.call_by_id:
        c = graph.call_by_id[node.parent]
        rows.append(_row("in", f"{c.qualname or '(root)'}: {c.cls}"))
    for k, v in shown_args(node.args):
        rows.append(_row(k, arg_text(v)))
    if node.params:
        rows.append(_row("parameters", ", ".join(node.params)))
    rows.append(_row("outputs", ", ".join(meta_text(m) for m in node.outputs) or "—"))
    rows += [_row(k, v) for k, v in node_value_rows(graph, node)]
    if node.kind == "op":
        rows += [_row(k, v) for k, v in cost_lines(graph, node_id=node.id)]
    if node.source:
        rows.append(_row("source", node.source))
    out: list = [
        html.H4(node.name, style={"margin": "4px 0"}),
        html.Table(rows, className="tvd-details-table"),
    ]
    if node.error is not None:
        err = graph.error
        message = (
            node.error if err is None or node.error.startswith(err.type) else f"{err.type}: {node.error}"
        )
        out.append(error_text(message, bold=True, className="tvd-error"))
        if err is not None and err.traceback:
            out.append(
                html.Pre(
                    user_traceback(err.traceback),
                    style={**MONO, "whiteSpace": "pre-wrap", "maxHeight": "240px", "overflow": "auto"},
                )
            )
    return out


def selection(trace_id: str, vid: str, members: tuple[str, ...] = ()) -> dict[str, Any]:
    """What a user's callback reads from ``ModelGraph.ids.selected(aio_id)`` after a click or a search:
    ``{"id", "kind", "qualname", "cls"}`` (the module call's, or for an op the enclosing module's) plus
    ``"name"`` for an op and ``"members"`` (qualnames) for a folded run."""
    graph = registry.get(trace_id).graph
    if vid in graph.call_by_id:
        c = graph.call_by_id[vid]
        return {"id": vid, "kind": "module", "qualname": c.qualname, "cls": c.cls}
    if vid in graph.node_by_id:
        n = graph.node_by_id[vid]
        owner = graph.call_by_id.get(n.parent) if n.parent is not None else None
        return {
            "id": vid,
            "kind": n.kind,
            "name": n.name,
            "qualname": owner.qualname if owner else "",
            "cls": owner.cls if owner else "",
        }
    calls = [graph.call_by_id[m] for m in members if m in graph.call_by_id]
    if vid.startswith("fold:") and calls:
        return {
            "id": vid,
            "kind": "folded",
            "qualname": calls[0].qualname,
            "cls": calls[0].cls,
            "members": [c.qualname for c in calls],
        }
    return {"id": vid, "kind": "group", "qualname": "", "cls": ""}


def details(trace_id: str, vid: str | None, members: tuple[str, ...] = ()) -> list:
    """Panel content for a clicked visible id (node, module call, cluster or folded group)."""
    if not vid:
        return [html.I("Click a box for its details; click a module to open or close it.")]
    graph = registry.get(trace_id).graph
    if vid in graph.call_by_id:
        return _module(trace_id, graph.call_by_id[vid])
    if vid in graph.node_by_id:
        return _node(graph, graph.node_by_id[vid])
    group = io_groups(graph).groups.get(vid)
    if group is not None:
        nodes = [graph.node_by_id[m] for m in group.members]
        return [
            html.H4(group.label, style={"margin": "4px 0"}),
            html.Div(f"{len(nodes)} {group.kind} tensors of one value; click the box to open it."),
            html.Table(
                [_row(n.name, ", ".join(meta_text(m) for m in n.outputs)) for n in nodes],
                className="tvd-details-table",
            ),
        ]
    if vid.startswith("fold:"):
        calls = [graph.call_by_id[m] for m in members if m in graph.call_by_id]
        first = calls[0] if calls else graph.call_by_id.get(vid[len("fold:") :])
        title = f"{len(calls) or '?'} repeated calls of {first.cls if first else '?'}"
        return [
            html.H4(title, style={"margin": "4px 0"}),
            html.Div("Click the group to unfold it."),
            html.Ul([html.Li(c.qualname, style=MONO) for c in calls]),
        ]
    return [html.I(f"nothing known about {vid}")]
