"""A ``torch.fx.GraphModule`` as a Graph: what ``symbolic_trace`` or a compiler pass produced.

Placeholders are the user inputs; a ``get_attr`` of a parameter or buffer is that parameter (drawn in each
call that reads it), of another tensor a constant. Each ``call_module`` node is a call of that submodule
(one box holding one op named after its class), nested in the calls its module stack names; the root is the
traced model. Shapes come from ``ShapeProp`` (``meta["tensor_meta"]``) or ``meta["val"]``; a graph that
records none draws without shapes and says so in a note (``ShapeProp(gm).propagate(*inputs)`` adds them).
"""

from __future__ import annotations

import torch

from torchvista_dash.frontends.fx.calls import StackEntry, stack_of
from torchvista_dash.frontends.fx.describe import default_op_name
from torchvista_dash.frontends.fx.read import Role, read_fx
from torchvista_dash.frontends.trace.describe import dtype_name
from torchvista_dash.model.graph import Graph, ParamInfo, TensorMeta

NO_SHAPES_NOTE = (
    "no shapes: this FX graph records no tensor metadata, so it is drawn without shapes "
    "(run torch.fx.passes.shape_prop.ShapeProp(gm).propagate(*inputs) first to have them)"
)
SOME_SHAPES_NOTE = "{n} tensor(s) have no recorded shape and are drawn without one"
_ROOT_KEY = "<root>"


def graph_of_fx(
    gm: torch.fx.GraphModule,
    *,
    name: str | None = None,
    versions: tuple[tuple[str, str], ...] = (),
    flops: bool = True,
) -> Graph:
    """The Graph of ``gm`` (see the module docstring)."""
    if not isinstance(gm, torch.fx.GraphModule):
        raise TypeError(
            f"from_fx needs a torch.fx.GraphModule, not {type(gm).__name__} "
            f"(torch.fx.symbolic_trace(model) gives one; for an ExportedProgram use from_exported)"
        )
    root_cls = f"{type(gm).__module__}.{type(gm).__name__}"
    roles: dict[str, Role] = {}
    param_names = {id(p): q for q, p in gm.named_parameters()}
    buffer_names = {id(b): q for q, b in gm.named_buffers()}
    for node in gm.graph.nodes:
        if node.op == "placeholder":
            roles[node.name] = Role("input", str(node.target).lstrip("*"))
        elif node.op == "get_attr":
            value = _attr(gm, str(node.target))
            if isinstance(value, torch.Tensor):
                q = param_names.get(id(value)) or buffer_names.get(id(value))
                meta = _meta_of(value)
                roles[node.name] = (
                    Role("parameter", q, meta) if q else Role("constant", str(node.target), meta)
                )

    def stack(node: torch.fx.Node) -> list[StackEntry]:
        entries = [(_ROOT_KEY, "", root_cls), *stack_of(node.meta)]
        if node.op == "call_module":
            target = str(node.target)
            # FX keys a leaf call by qualname: each call_module node is a call of its own
            entries = [e for e in entries if e[1] != target]
            entries.append((f"{target}@{node.name}", target, _class_path(gm, target)))
        return entries

    def op_name(node: torch.fx.Node) -> tuple[str, str]:
        if node.op == "call_module":
            cls = _class_path(gm, str(node.target)).rpartition(".")[2]
            return cls.lower(), f"{node.target} ({cls}).forward"
        return default_op_name(node)

    res = read_fx(gm.graph, roles, stack=stack, op_name=op_name, flops=flops, owner=gm)
    params: dict[str, ParamInfo] = {}
    for q, p in gm.named_parameters():
        params[q] = ParamInfo(q.rpartition(".")[2], tuple(p.shape), _dtype(p), p.requires_grad, False)
    for q, b in gm.named_buffers():
        params.setdefault(q, ParamInfo(q.rpartition(".")[2], tuple(b.shape), _dtype(b), False, True))
    trainable = [q for q, _ in gm.named_parameters()]
    notes: list[str] = []
    tensors = res.ops + sum(1 for n in res.nodes if n.kind == "input")
    if res.unknown_shapes and res.unknown_shapes >= tensors:
        notes.append(NO_SHAPES_NOTE)
    elif res.unknown_shapes:
        notes.append(SOME_SHAPES_NOTE.format(n=res.unknown_shapes))
    return Graph(
        nodes=tuple(res.nodes),
        edges=tuple(res.edges),
        module_calls=tuple(res.calls.module_calls(params, trainable)),
        model_name=name or type(gm).__name__,
        versions=(("torch", torch.__version__), *versions),
        measured=("flops",) if flops else (),
        notes=tuple(notes),
    )


def _attr(gm: torch.nn.Module, target: str) -> object:
    obj: object = gm
    for part in target.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


def _class_path(gm: torch.fx.GraphModule, target: str) -> str:
    try:
        cls = type(gm.get_submodule(target))
    except AttributeError:
        return "torch.nn.Module"
    return f"{cls.__module__}.{cls.__qualname__}"


def _dtype(t: torch.Tensor) -> str:
    return dtype_name(t.dtype)


def _meta_of(t: torch.Tensor) -> TensorMeta:
    """An attribute's metadata, read from the tensor itself (a get_attr node records none)."""
    with torch._C.DisableTorchFunctionSubclass():
        return TensorMeta(tuple(t.shape), dtype_name(t.dtype), str(t.device), t.numel() * t.dtype.itemsize)
