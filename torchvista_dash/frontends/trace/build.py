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

from torchvista_dash.frontends.trace.describe import clip
from torchvista_dash.frontends.trace.facts import new_edge
from torchvista_dash.frontends.trace.sites import line_text
from torchvista_dash.frontends.trace.values import stats_of
from torchvista_dash.model.graph import Edge, Node

if TYPE_CHECKING:  # pragma: no cover - typing only
    from torchvista_dash.frontends.trace.recorder import Recorder

_new = object.__new__
_SHARED: dict[tuple[Any, ...], tuple[Any, ...]] = {}
_BOUND = 200_000


def finish(rec: Recorder) -> None:
    """Turn the ops the recorder kept raw into their Node and Edges, in place and in order (idempotent)."""
    if len(_SHARED) > _BOUND:
        _SHARED.clear()
    nodes = rec.nodes
    values_on = rec.summarize is not None
    for i, r in enumerate(nodes):
        if type(r) is not tuple:
            continue
        if len(r) == 5:  # a parameter's node in one call, or a constant's (``lookup``)
            nid, q, parent, outputs, summary = r
            node = _new(Node)
            node.__dict__.update(
                {
                    "id": nid,
                    "kind": "constant" if q is None else "parameter",
                    "name": "constant" if q is None else q,
                    "parent": parent,
                    "error": None,
                    "args": (),
                    "source": None,
                    "params": () if q is None else (q,),
                    "outputs": outputs,
                    "flops": 0,
                    "time_ms": None,
                    "values": () if summary is None else tuple(stats_of(x) for x in summary),
                }
            )
            nodes[i] = node
        else:
            nid, name, parent, names, values, source, outputs, flops, summary = r
            args, params = op_texts(names, values)
            node = _new(Node)
            node.__dict__.update(
                {
                    "id": nid,
                    "kind": "op",
                    "name": name,
                    "parent": parent,
                    "error": None,
                    "args": args,
                    "source": line_text(source),
                    "params": params,
                    "outputs": outputs,
                    "flops": flops,
                    "time_ms": None,
                    "values": _values(summary, len(outputs)) if values_on else (),
                }
            )
            nodes[i] = node
    edges: list[Any] = []
    append = edges.append
    for x in rec.edges:
        if type(x) is not tuple:
            append(x)
            continue
        nid = x[0]
        for pos, v in enumerate(x[4]):
            tv = type(v)
            if tv is tuple:  # a tensor's producer entry
                edge = _new(Edge)
                edge.__dict__.update({"src": v[1], "dst": nid, "tensor": v[2], "meta": v[3], "dst_arg": pos})
                append(edge)
            elif tv is list:  # a list holding tensors (torch.cat's): one edge each, at the list's position
                for e in v:
                    if type(e) is tuple:
                        edge = _new(Edge)
                        edge.__dict__.update(
                            {"src": e[1], "dst": nid, "tensor": e[2], "meta": e[3], "dst_arg": pos}
                        )
                        append(edge)
    rec.edges = edges
    if values_on:
        _pass_values_on(rec)


def _values(summary: tuple[Any, ...] | None, n_outputs: int) -> tuple[Any, ...]:
    """An op's ``Node.values`` from the mode's raw summaries, one per output tensor."""
    if summary is None or len(summary) != n_outputs:
        return (None,) * n_outputs
    return tuple(stats_of(s) for s in summary)


def _pass_values_on(rec: Recorder) -> None:
    """Nodes that hand tensors on (the model's outputs, a call's ``identity``) and have no summary of their
    own: the summaries of the tensors they were given, as the edges into them say."""
    by_tensor: dict[str, Any] = {}
    into: dict[str, list[Any]] = {}
    for e in rec.edges:
        into.setdefault(e.dst, []).append(e)
    nodes = rec.nodes
    for i, n in enumerate(nodes):
        if n.values:
            for k, s in enumerate(n.values):
                by_tensor[f"{n.id}/{k}"] = s
            continue
        if n.kind == "output" or (n.kind == "op" and n.name == "identity"):
            ins = sorted(into.get(n.id, ()), key=lambda e: e.dst_arg)
            got = tuple(by_tensor.get(e.tensor) for e in ins)
            if len(got) == len(n.outputs):
                n.__dict__["values"] = got
                for k, s in enumerate(got):
                    by_tensor[f"{n.id}/{k}"] = s
        nodes[i] = n


def op_texts(
    names: tuple[str, ...], values: list[Any]
) -> tuple[tuple[tuple[str, str], ...], tuple[str, ...]]:
    """An op's (name, text) arguments and the parameters among its inputs, from what ``record`` kept: a
    producer entry (a tensor), a list of entries and texts, a scalar (written here) or a text. Both shared."""
    args: list[tuple[str, str]] = []
    params: list[str] = []
    for k, v in zip(names, values):  # noqa: B905 - names may be longer than the values
        tv = type(v)
        if tv is tuple:
            args.append((k, v[4]))
            if v[5] is not None:
                params.append(v[5])
        elif tv is str:
            args.append((k, v))
        elif tv is list:
            parts = []
            for e in v:
                if type(e) is tuple:
                    parts.append(e[4])
                    if e[5] is not None:
                        params.append(e[5])
                else:
                    parts.append(e)
            args.append((k, clip("[" + ", ".join(parts) + "]")))
        else:
            args.append((k, repr(v)))
    at = tuple(args)
    at = _SHARED.setdefault(at, at)
    if not params:
        return at, ()
    pt = tuple(params)
    return at, _SHARED.setdefault(pt, pt)


def op_edges(nid: str, values: list[Any]) -> list[Edge]:
    """The Edges into op ``nid`` from the producer entries among its argument values."""
    out = []
    for pos, v in enumerate(values):
        for e in v if type(v) is list else (v,):
            if type(e) is tuple:
                out.append(new_edge({"src": e[1], "dst": nid, "tensor": e[2], "meta": e[3], "dst_arg": pos}))
    return out
