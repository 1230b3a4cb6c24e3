"""After the forward pass: the ops recorded raw become their Nodes and Edges, in one tight loop.

Between two ops of a big model the caches are cold (the op's kernels streamed megabytes through them), so
work done there costs several times what it costs here. During the pass the recorder only resolves what
cannot wait (which node produced each tensor input, the outputs' metadata, the source frame); texts and
objects are made here. Immutable tuples of text (an op's arguments, its parameters) and source strings are
made once and shared by every node that has them: less memory, and objects from earlier traces are no new
work for the garbage collector's pass after a trace.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..graph import Edge, Node

if TYPE_CHECKING:  # pragma: no cover - typing only
    from .recorder import Recorder

_new = object.__new__
_SHARED: dict[tuple[Any, ...], tuple[Any, ...]] = {}
_SOURCES: dict[tuple[str, int], str] = {}       # (file, line) -> "file:line" (the layers' lines recur)
_BOUND = 200_000


def finish(rec: Recorder) -> None:
    """Turn the ops the recorder kept raw into their Node and Edges, in place and in order (idempotent)."""
    if len(_SHARED) > _BOUND:
        _SHARED.clear()
    nodes = rec.nodes
    for i, r in enumerate(nodes):
        if type(r) is not tuple:
            continue
        if len(r) == 4:      # a parameter's node in one call, or a constant's (``lookup``)
            nid, q, parent, outputs = r
            node = _new(Node)
            node.__dict__.update({"id": nid, "kind": "constant" if q is None else "parameter",
                                  "name": "constant" if q is None else q, "parent": parent, "error": None,
                                  "args": (), "source": None, "params": () if q is None else (q,),
                                  "outputs": outputs, "flops": 0, "time_ms": None})
            nodes[i] = node
        else:
            nid, name, parent, rargs, source, params, outputs, flops, _ = r
            # the same arguments (and parameters) recur across layers and traces: one shared tuple for each
            rt = args_text(rargs)
            pt = tuple(params)
            if pt:
                pt = _SHARED.setdefault(pt, pt)
            node = _new(Node)
            node.__dict__.update({"id": nid, "kind": "op", "name": name, "parent": parent, "error": None,
                                  "args": rt, "source": source_text(source), "params": pt,
                                  "outputs": outputs, "flops": flops, "time_ms": None})
            nodes[i] = node
    edges: list[Any] = []
    append = edges.append
    for x in rec.edges:
        if type(x) is tuple:
            nid = x[0]
            for e, p in x[8]:
                edge = _new(Edge)
                edge.__dict__.update({"src": e[1], "dst": nid, "tensor": e[2], "meta": e[3], "dst_arg": p})
                append(edge)
        else:
            append(x)
    rec.edges = edges


def args_text(rargs: list[tuple[Any, ...]]) -> tuple[tuple[str, str], ...]:
    """An op's (name, text) arguments; a scalar was kept as (name, value, None) and is written here. Shared."""
    rt = tuple([x if len(x) == 2 else (x[0], repr(x[1])) for x in rargs])
    return _SHARED.setdefault(rt, rt)


def source_text(source: Any) -> str | None:
    """"file:line" of what ``Recorder.source`` returned (a site is text already)."""
    if source is None or type(source) is str:
        return source
    text = _SOURCES.get(source)
    if text is None:
        if len(_SOURCES) > _BOUND:
            _SOURCES.clear()
        text = _SOURCES[source] = f"{source[0]}:{source[1]}"
    return text
