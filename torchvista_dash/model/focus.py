"""One module call as a graph of its own: its ops and sub-calls, with the tensors that enter it as inputs and
those that leave it as outputs, so that every stage after it (views, layout, the app) draws it as a model.

``focus(graph, "layers.3.mlp")`` is what ``Trace.figure(root=...)``, the page's ``?root=`` and
``export --root`` draw. Ids are kept: an op is the same ``n:…`` in the focused graph as in the whole one,
and an input box takes the id of the op outside that produced its tensor, so details and search name the
same things.
"""

from __future__ import annotations

import difflib
from dataclasses import replace

from torchvista_dash.model.graph import Edge, Graph, ModuleCall, Node

HELD_KINDS = ("parameter", "constant")  # an outside producer of these stays what it is (a shared weight)


def resolve_call(graph: Graph, root: str) -> ModuleCall:
    """The call ``root`` names: a call id (``mod:layers.3#1``) or a qualname (its first call)."""
    if root in graph.call_by_id:
        return graph.call_by_id[root]
    calls = graph.calls_by_qualname.get(root)
    if calls:
        return calls[0]
    known = sorted(graph.calls_by_qualname)
    close = difflib.get_close_matches(root, known, n=3, cutoff=0.5)
    hint = f"; did you mean {', '.join(map(repr, close))}?" if close else ""
    raise ValueError(
        f"root {root!r} is not a module of {graph.model_name or 'this model'} (a qualname such as "
        f"{', '.join(repr(k) for k in known[1:4]) or 'layers.0'}, or a module call id){hint}"
    )


def focus(graph: Graph, root: str) -> Graph:
    """The call ``root`` (see ``resolve_call``) as a graph: it is the root call, what it computes its ops."""
    call = resolve_call(graph, root)
    if call.parent is None:
        return graph
    calls = graph.call_by_id
    inside_calls: dict[str, ModuleCall] = {}
    for c in graph.module_calls:
        p: str | None = c.id
        while p is not None and p != call.id:
            p = calls[p].parent
        if p == call.id:
            inside_calls[c.id] = replace(
                c, depth=c.depth - call.depth, parent=None if c.id == call.id else c.parent
            )
    inside = {n.id for n in graph.nodes if n.parent in inside_calls}
    by_id = graph.node_by_id
    inputs: dict[str, Node] = {}
    outputs: dict[tuple[str, str], Node] = {}  # (producer, tensor) → its output box
    edges: list[Edge] = []
    for e in graph.edges:
        src_in, dst_in = e.src in inside, e.dst in inside
        if src_in and dst_in:
            edges.append(e)
        elif dst_in:  # a tensor entering: drawn as an input box where its outside producer was
            if e.src not in inputs:
                producer = by_id[e.src]
                kind = producer.kind if producer.kind in HELD_KINDS else "input"
                inputs[e.src] = Node(
                    e.src, kind, _input_name(graph, producer), outputs=producer.outputs or (e.meta,)
                )
            edges.append(e)
        elif src_in:  # a tensor leaving: one output box per tensor, however many outside ops read it
            key = (e.src, e.tensor)
            if key not in outputs:
                outputs[key] = Node(f"{e.src}:out{len(outputs)}", "output", "output", outputs=(e.meta,))
                edges.append(replace(e, dst=outputs[key].id, dst_arg=0))
    if len(outputs) > 1:  # ids stay, so the edges do too
        outputs = {k: replace(n, name=f"output {i}") for i, (k, n) in enumerate(outputs.items())}
    nodes = tuple(inputs.values()) + tuple(n for n in graph.nodes if n.id in inside) + tuple(outputs.values())
    error = graph.error
    if error is not None and error.node not in inside:
        error = None
    return Graph(
        nodes=nodes,
        edges=tuple(edges),
        module_calls=tuple(inside_calls.values()),
        model_name=f"{graph.model_name or 'model'}.{call.qualname}" if call.qualname else graph.model_name,
        error=error,
        versions=graph.versions,
        measured=graph.measured,
    )


def _input_name(graph: Graph, producer: Node) -> str:
    """What an input box says: where its tensor comes from (the model's own input, or an op outside)."""
    if producer.kind == "input":
        return producer.name
    owner = graph.call_by_id[producer.parent].qualname if producer.parent in graph.call_by_id else ""
    return f"{owner}.{producer.name}" if owner else producer.name
