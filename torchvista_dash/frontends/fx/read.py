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
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import torch

from torchvista_dash.frontends.fx.calls import CallTree, StackEntry, stack_of
from torchvista_dash.frontends.fx.flops import OpCounter
from torchvista_dash.frontends.trace.describe import clip, dtype_name, source_path
from torchvista_dash.frontends.trace.describe import meta_text as arg_meta_text
from torchvista_dash.model.graph import (
    UNKNOWN_DTYPE,
    Edge,
    Node,
    TensorMeta,
    meta_text,
    node_id_for,
    unknown_meta,
)

_OpOverload = torch._ops.OpOverload
_HigherOrder = torch._ops.HigherOrderOperator
_TORCH_DIR = os.path.dirname(os.path.abspath(torch.__file__)) + os.sep


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


def plain_text(a: Any) -> str:
    """A non-tensor argument's text, as a live trace writes it (no memory addresses)."""
    if isinstance(a, torch.dtype):
        return dtype_name(a)
    if isinstance(a, (torch.device, torch.memory_format, torch.layout)):
        return str(a)
    if isinstance(a, (bool, int, float, str, type(None))):
        return clip(repr(a))
    if isinstance(a, (list, tuple)):
        inner = ", ".join(plain_text(x) for x in a)
        return clip(f"[{inner}]" if isinstance(a, list) else f"({inner})")
    if isinstance(a, torch.SymInt | torch.SymFloat | torch.SymBool):
        return str(a)
    return type(a).__name__


def value_text(val: Any, fallback: str) -> str:
    """The text of a non-tensor node where an op reads it: a symbolic size as its name (``s0``)."""
    if isinstance(val, (torch.SymInt, torch.SymFloat, torch.SymBool, int, float, bool)):
        return str(val)
    return fallback


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


# ---- what a node is called, its arguments, its source ------------------------------------------------------
def default_op_name(fx_node: torch.fx.Node) -> tuple[str, str]:
    """(the name users know, the full target): ``aten.linear.default`` → ``linear``; a Python operator
    ``operator.add`` → ``add``; a method call ``x.view`` → ``view``."""
    t = fx_node.target
    if isinstance(t, _OpOverload):
        return t._schema.name.split("::")[-1], str(t)
    if isinstance(t, _HigherOrder):
        return t.name(), f"torch.ops.higher_order.{t.name()}"
    if isinstance(t, str):
        return t, ""
    name = getattr(t, "__name__", None) or type(t).__name__
    module = getattr(t, "__module__", None) or ""
    return name, f"{module}.{name}" if module else name


def arg_names(fx_node: torch.fx.Node) -> list[str]:
    """Names of the node's positional arguments (from the op's schema, or its Python signature), then its
    keywords; a position with no name keeps its index."""
    names: list[str] = []
    t = fx_node.target
    if isinstance(t, _OpOverload):
        names = [a.name for a in t._schema.arguments if not a.kwarg_only]
    elif fx_node.op == "call_function" and callable(t):
        names = _signature_names(t)
    elif fx_node.op == "call_method":
        names = ["self", *_signature_names(getattr(torch.Tensor, str(t), None))[1:]]
    pos = [names[i] if i < len(names) else str(i) for i in range(len(fx_node.args))]
    return [*pos, *fx_node.kwargs]


_SIG_NAMES: dict[Any, list[str]] = {}


def _signature_names(func: Any) -> list[str]:
    if func is None:
        return []
    try:
        return _SIG_NAMES[func]
    except (KeyError, TypeError):
        pass
    import inspect

    try:
        params = inspect.signature(func).parameters.values()
        names = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        names = []
    try:
        _SIG_NAMES[func] = names
    except TypeError:
        pass
    return names


def source_line(stack_trace: Any) -> str | None:
    """``model.py:42``: the innermost frame of a node's stack trace outside torch itself (an op inside
    ``nn.Linear`` is where the user called the module), as a live trace's source reads."""
    if not isinstance(stack_trace, str) or not stack_trace:
        return None
    found: tuple[str, str] | None = None
    for line in stack_trace[-20_000:].splitlines():
        s = line.strip()
        if not s.startswith('File "'):
            continue
        path, _, rest = s[6:].partition('", line ')
        lineno = rest.split(",", 1)[0].strip()
        if not lineno.isdigit():
            continue
        if found is None or not os.path.abspath(path).startswith(_TORCH_DIR):
            found = (path, lineno)
    if found is None:
        return None
    return f"{source_path(found[0])}:{found[1]}"


def tensor_metas(meta: Mapping[str, Any]) -> list[TensorMeta] | None:
    """The TensorMetas of a node's tensor outputs (``meta["val"]``, else ``meta["tensor_meta"]``); None when
    it yields no tensor or records nothing."""
    val = meta.get("val")
    if val is None:
        val = meta.get("tensor_meta")
        if val is None:
            return None
    out = [m for m in (_one_meta(x) for x in _meta_leaves(val)) if m is not None]
    return out or None


def _meta_leaves(val: Any) -> list[Any]:
    """Tensors (or ShapeProp's TensorMetadata records) in a node's value, in order."""
    if isinstance(getattr(val, "dtype", None), torch.dtype) and hasattr(val, "shape"):
        return [val]
    if isinstance(val, (list, tuple)):
        return [x for v in val for x in _meta_leaves(v)]
    if isinstance(val, Mapping):
        return [x for v in val.values() for x in _meta_leaves(v)]
    return []


def _one_meta(x: Any) -> TensorMeta | None:
    shape = getattr(x, "shape", None)
    dtype = getattr(x, "dtype", None)
    if shape is None or not isinstance(dtype, torch.dtype):
        return None
    dims = [_hint(s) for s in shape]
    sizes = tuple(d[0] for d in dims)
    symbolic = any(d[1] is not None for d in dims)
    device = str(getattr(x, "device", "meta"))
    n = 1
    for s in sizes:
        n *= s
    return _intern(
        TensorMeta(
            shape=sizes,
            dtype=dtype_name(dtype),
            device=device,
            nbytes=n * dtype.itemsize,
            dims=tuple(d[1] or str(d[0]) for d in dims) if symbolic else None,
        )
    )


def _hint(s: Any) -> tuple[int, str | None]:
    """(the example's size, the symbol's text or None) of one dimension."""
    if isinstance(s, int):
        return s, None
    if isinstance(s, torch.SymInt):
        node = s.node
        text = str(s)
        try:
            hint = node.hint if node.hint is not None else node.shape_env.size_hint(node.expr)
            return int(hint), text
        except Exception:  # no example size recorded: the symbol's smallest allowed value
            return 0, text
    return int(s), None


_METAS: dict[TensorMeta, TensorMeta] = {}


def _intern(m: TensorMeta) -> TensorMeta:
    if len(_METAS) > 50_000:
        _METAS.clear()
    return _METAS.setdefault(m, m)


def is_unknown(m: TensorMeta) -> bool:
    return m.dtype == UNKNOWN_DTYPE
