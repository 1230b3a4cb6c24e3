"""An FX graph's nodes as the Graph's Nodes and Edges: the part every FX-based source shares.

``read_fx`` walks a ``torch.fx.Graph`` once, in order. What each placeholder is (a user input, a parameter or
buffer, a lifted constant) comes from the source (``Roles``): torch.export's graph signature, or an FX
GraphModule's own attributes. Then, as in a live trace:
- an op node per ``call_function``/``call_method``/``call_module`` that yields tensors, named as users know
  it (``aten.linear.default`` is ``linear``, the full target in its details), its arguments named from the
  op's schema, its outputs' shapes from ``meta["val"]`` (or ``meta["tensor_meta"]``), symbolic sizes kept;
- a parameter (or buffer, or constant) node in each innermost call that reads it, so calls that share a
  weight are never joined by an edge carrying it;
- ``getitem`` of a multi-output op is not an op: its users read that op's k-th output, as in a live trace;
  nodes that yield no tensor (a size read, arithmetic on sizes) are not drawn, and show as the value they
  name (``s0``) where an op reads them;
- module calls from each node's module stack (``calls.py``); FLOPs from the live tracer's meter, on meta
  tensors of the example's sizes.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import torch

from torchvista_dash.frontends.fx.calls import CallTree, StackEntry, stack_of
from torchvista_dash.frontends.fx.describe import (
    arg_names,
    default_op_name,
    plain_text,
    source_line,
    tensor_metas,
    value_text,
)
from torchvista_dash.frontends.fx.flops import OpCounter
from torchvista_dash.frontends.trace.describe import clip
from torchvista_dash.frontends.trace.describe import meta_text as arg_meta_text
from torchvista_dash.model.graph import Edge, Node, TensorMeta, meta_text, node_id_for, unknown_meta


@dataclass(frozen=True)
class Role:
    """What one placeholder (or ``get_attr``) of the FX graph is: ``kind`` is ``input``, ``parameter`` (a
    parameter or buffer: ``name`` is its qualname) or ``constant``; ``name`` is what the node is called."""

    kind: str
    name: str
    meta: TensorMeta | None = None  # when the node itself records none (an FX get_attr)


@dataclass
class Result:
    """What ``read_fx`` made: the nodes and edges in order, the call tree, and what it could not read."""

    nodes: list[Node] = field(default_factory=list)
    edges: list[Edge] = field(default_factory=list)
    calls: CallTree = field(default_factory=CallTree)
    unknown_shapes: int = 0  # tensors whose shape the graph did not record
    stackless: int = 0  # ops with no module stack
    ops: int = 0


@dataclass
class _Value:
    """What an FX node stands for once read: a drawn tensor (producer id, tensor name, meta), a list of
    them, or a plain value's text."""

    entries: list[tuple[str, str, TensorMeta]] | None
    text: str
    param: str | None = None  # a parameter's, buffer's or constant's placeholder: its node is made per call
    kind: str = ""


def read_fx(
    graph: torch.fx.Graph,
    roles: Mapping[str, Role],
    *,
    stack: Callable[[torch.fx.Node], list[StackEntry]] = lambda n: stack_of(n.meta),
    op_name: Callable[[torch.fx.Node], tuple[str, str]] | None = None,
    flops: bool = True,
    output_names: list[str] | None = None,
    skip_outputs: frozenset[int] = frozenset(),
    owner: torch.nn.Module | None = None,
) -> Result:
    """Read ``graph`` into Nodes and Edges (see the module docstring). ``output_names`` names the flattened
    outputs (default ``output``, ``output[i]``); outputs at ``skip_outputs`` (a buffer's new value) are not
    drawn; ``owner`` is the GraphModule whose submodules ``call_module`` nodes call (their FLOPs)."""
    res = Result()
    values: dict[str, _Value] = {}
    per_call: dict[tuple[str, str | None], tuple[str, str, TensorMeta]] = {}
    counter = OpCounter() if flops else None
    name_of = op_name or default_op_name

    def new_id() -> str:
        return node_id_for(len(res.nodes))

    def resolve(v: _Value, parent: str | None) -> list[tuple[str, str, TensorMeta]]:
        """The producer entries of a value read in call ``parent`` (a parameter gets its node there)."""
        if v.param is None:
            return v.entries or []
        key = (v.param, parent)
        e = per_call.get(key)
        if e is None:
            nid = new_id()
            meta = (v.entries or [("", "", unknown_meta())])[0][2]
            res.nodes.append(
                Node(
                    id=nid,
                    kind="parameter" if v.kind == "parameter" else "constant",
                    name=v.param if v.kind == "parameter" else "constant",
                    parent=parent,
                    args=() if v.kind == "parameter" else (("name", v.param),),
                    params=(v.param,) if v.kind == "parameter" else (),
                    outputs=(meta,),
                )
            )
            e = per_call[key] = (nid, f"{nid}/0", meta)
        return [e]

    for fx_node in graph.nodes:
        op = fx_node.op
        if op in ("placeholder", "get_attr"):
            role = roles.get(fx_node.name)
            metas = tensor_metas(fx_node.meta) or ([role.meta] if role is not None and role.meta else None)
            if role is None or metas is None:
                values[fx_node.name] = _Value(None, value_text(fx_node.meta.get("val"), fx_node.name))
                # a submodule, or a non-tensor input (a flag, a size): no box; an input with no metadata at
                # all (an FX graph without shapes) is drawn without a shape
                if role is None or op == "get_attr" or "val" in fx_node.meta or "tensor_meta" in fx_node.meta:
                    continue
                res.unknown_shapes += 1
                metas = [unknown_meta()]
            if role.kind == "input":
                nid = new_id()
                res.nodes.append(Node(id=nid, kind="input", name=role.name, outputs=(metas[0],)))
                values[fx_node.name] = _Value([(nid, f"{nid}/0", metas[0])], meta_text(metas[0]))
            else:
                values[fx_node.name] = _Value(
                    [("", "", metas[0])], meta_text(metas[0]), param=role.name, kind=role.kind
                )
            continue
        if op == "output":
            _outputs(res, fx_node, values, output_names, skip_outputs, resolve)
            continue
        node_stack = stack(fx_node)
        parent = res.calls.enter(node_stack)
        if (
            fx_node.target is operator.getitem
            and isinstance(fx_node.args[0], torch.fx.Node)
            and isinstance(fx_node.args[1], int)
        ):
            src = values.get(fx_node.args[0].name)
            if src is not None and src.entries is not None and len(src.entries) > 1:
                e = src.entries[fx_node.args[1]]
                values[fx_node.name] = _Value([e], meta_text(e[2]))
                continue
        metas = tensor_metas(fx_node.meta)
        if metas is None and "val" in fx_node.meta:  # a size, a number: no box, its text where it is read
            values[fx_node.name] = _Value(None, value_text(fx_node.meta["val"], fx_node.name))
            continue
        if metas is None:  # no metadata at all: drawn, without a shape
            metas = [unknown_meta()]
            res.unknown_shapes += 1
        if not node_stack:
            res.stackless += 1
        names = arg_names(fx_node)
        args: list[tuple[str, str]] = []
        own_params: list[str] = []
        in_edges: list[tuple[int, tuple[str, str, TensorMeta]]] = []
        given = [*fx_node.args, *fx_node.kwargs.values()]
        for pos, (k, a) in enumerate(zip(names, given, strict=False)):
            text, entries = _arg(a, values, parent, resolve)
            args.append((k, text))
            own_params.extend(_params_in(a, values))
            in_edges.extend((pos, e) for e in entries)
        short, full = name_of(fx_node)
        if full and full != short:
            args.append(("target", full))
        nid = new_id()  # after the parameter nodes its inputs made: ids stay in topological order
        res.nodes.append(
            Node(
                id=nid,
                kind="op",
                name=short,
                parent=parent,
                args=tuple(args),
                source=source_line(fx_node.meta.get("stack_trace")),
                params=tuple(dict.fromkeys(own_params)),
                outputs=tuple(metas),
                flops=counter.count(fx_node, metas, owner) if counter is not None else 0,
            )
        )
        res.ops += 1
        for pos, (src, tname, meta) in in_edges:
            res.edges.append(Edge(src=src, dst=nid, tensor=tname, meta=meta, dst_arg=pos))
        entries = [(nid, f"{nid}/{k}", m) for k, m in enumerate(metas)]
        values[fx_node.name] = _Value(
            entries, meta_text(metas[0]) if len(metas) == 1 else f"{len(metas)} tensors"
        )
    return res


def _arg(
    a: Any,
    values: dict[str, _Value],
    parent: str | None,
    resolve: Callable[[_Value, str | None], list[tuple[str, str, TensorMeta]]],
) -> tuple[str, list[tuple[str, str, TensorMeta]]]:
    """An argument's text and the tensors it carries (a list of tensors: each, at the list's position)."""
    if isinstance(a, torch.fx.Node):
        v = values.get(a.name)
        if v is None:
            return a.name, []
        entries = resolve(v, parent) if (v.entries is not None or v.param is not None) else []
        text = arg_meta_text(entries[0][2]) if len(entries) == 1 else v.text
        return text, entries
    if isinstance(a, (list, tuple)) and any(isinstance(x, torch.fx.Node) for x in a):
        parts, found = [], []
        for x in a:
            t, es = _arg(x, values, parent, resolve)
            parts.append(t)
            found.extend(es)
        return clip("[" + ", ".join(parts) + "]"), found
    return plain_text(a), []


def _params_in(a: Any, values: dict[str, _Value]) -> list[str]:
    """The parameters and buffers an argument reads (an op's ``params``, as the live tracer fills them)."""
    if isinstance(a, torch.fx.Node):
        v = values.get(a.name)
        return [v.param] if v is not None and v.param is not None and v.kind == "parameter" else []
    if isinstance(a, (list, tuple)):
        return [p for x in a for p in _params_in(x, values)]
    return []


def _outputs(
    res: Result,
    fx_node: torch.fx.Node,
    values: dict[str, _Value],
    names: list[str] | None,
    skip: frozenset[int],
    resolve: Callable[[_Value, str | None], list[tuple[str, str, TensorMeta]]],
) -> None:
    flat = torch.utils._pytree.tree_leaves(fx_node.args[0])
    for i, a in enumerate(flat):
        if i in skip or not isinstance(a, torch.fx.Node):
            continue
        v = values.get(a.name)
        if v is None or (v.entries is None and v.param is None):
            continue  # a number the model returns: not a tensor, no output box
        for e in resolve(v, None):
            nid = node_id_for(len(res.nodes))
            if names is not None and i < len(names):
                name = names[i]
            else:
                name = "output" if len(flat) == 1 else f"output[{i}]"
            res.nodes.append(Node(id=nid, kind="output", name=name, outputs=(e[2],)))
            res.edges.append(Edge(src=e[0], dst=nid, tensor=e[1], meta=e[2], dst_arg=0))
