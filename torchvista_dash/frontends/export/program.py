"""A ``torch.export.ExportedProgram`` as a Graph that reads like a live trace of the same model.

The graph signature says what each placeholder is: a user input (named as the forward's parameters name it,
keyword inputs too), a parameter or buffer (its qualname: drawn in each call that reads it, as in a live
trace), a lifted constant. Outputs are named from the program's output structure (``logits``,
``output[0]``); a buffer's new value (BatchNorm in training mode) is not a user output and is not drawn.
The rest is the shared FX reader (``fx/read.py``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import torch
from torch.export.graph_signature import InputKind, OutputKind

from torchvista_dash.frontends.fx.describe import tensor_metas
from torchvista_dash.frontends.fx.read import Role, read_fx
from torchvista_dash.model.graph import Graph, ParamInfo

NO_STACK_NOTE = (
    "no module structure: this program's ops carry no nn_module_stack, so they are drawn flat "
    "(export the model with torch.export.export to keep its modules)"
)
NO_SHAPES_NOTE = "{n} tensor(s) have no recorded shape and are drawn without one"


def graph_of_program(
    ep: torch.export.ExportedProgram,
    *,
    name: str | None = None,
    versions: tuple[tuple[str, str], ...] = (),
    flops: bool = True,
) -> Graph:
    """The Graph of ``ep`` (see the module docstring)."""
    if not isinstance(ep, torch.export.ExportedProgram):
        raise TypeError(
            f"from_exported needs a torch.export.ExportedProgram, not {type(ep).__name__} "
            f"(torch.export.export(model, args) gives one; for a torch.fx.GraphModule use from_fx)"
        )
    sig = ep.graph_signature
    placeholders = {n.name: n for n in ep.graph.nodes if n.op == "placeholder"}
    roles: dict[str, Role] = {}
    params: dict[str, ParamInfo] = {}
    trainable: list[str] = []
    user_inputs = [s for s in sig.input_specs if s.kind == InputKind.USER_INPUT]
    input_names = _input_names(ep, len(user_inputs))
    k = 0
    for spec in sig.input_specs:
        arg_name = getattr(spec.arg, "name", None)
        if arg_name is None:
            continue
        if spec.kind == InputKind.USER_INPUT:
            roles[arg_name] = Role("input", input_names[k] if input_names else arg_name)
            k += 1
        elif spec.kind in (InputKind.PARAMETER, InputKind.BUFFER) and spec.target is not None:
            roles[arg_name] = Role("parameter", spec.target)
            node = placeholders.get(arg_name)
            metas = tensor_metas(node.meta) if node is not None else None
            if node is not None and metas:
                is_param = spec.kind == InputKind.PARAMETER
                params[spec.target] = ParamInfo(
                    name=spec.target.rpartition(".")[2],
                    shape=metas[0].shape,
                    dtype=metas[0].dtype,
                    trainable=is_param and bool(getattr(node.meta.get("val"), "requires_grad", True)),
                    is_buffer=not is_param,
                )
                if is_param:
                    trainable.append(spec.target)
        elif spec.kind == InputKind.CONSTANT_TENSOR and spec.target is not None:
            roles[arg_name] = Role("constant", spec.target)
    skip = frozenset(
        i
        for i, s in enumerate(sig.output_specs)
        if s.kind not in (OutputKind.USER_OUTPUT, OutputKind.LOSS_OUTPUT)
    )
    names = _output_names(ep)
    flat_names: list[str] | None = None
    if names is not None and len(names) == len(sig.output_specs) - len(skip):
        it = iter(names)
        flat_names = ["" if i in skip else next(it) for i in range(len(sig.output_specs))]
    res = read_fx(ep.graph, roles, flops=flops, output_names=flat_names, skip_outputs=skip)
    notes: list[str] = []
    if res.ops and res.stackless == res.ops:
        notes.append(NO_STACK_NOTE)
    if res.unknown_shapes:
        notes.append(NO_SHAPES_NOTE.format(n=res.unknown_shapes))
    root = next((c for c in res.calls.calls if c[1] == ""), None)
    model_name = name or (root[2].rpartition(".")[2] if root else "ExportedProgram")
    return Graph(
        nodes=tuple(res.nodes),
        edges=tuple(res.edges),
        module_calls=tuple(res.calls.module_calls(params, trainable)),
        model_name=model_name,
        versions=(("torch", torch.__version__), *versions),
        measured=("flops",) if flops else (),
        notes=tuple(notes),
    )


def _root_signature(ep: torch.export.ExportedProgram) -> Any:
    for entry in ep.module_call_graph:
        if entry.fqn == "":
            return entry.signature
    return None


def _input_names(ep: torch.export.ExportedProgram, count: int) -> list[str] | None:
    """Each user input's name as the forward's parameters name it (``input_ids``, ``x[0]``); None when the
    program's input structure does not say."""
    sig = _root_signature(ep)
    spec = getattr(sig, "in_spec", None)
    arg_names = list(getattr(sig, "forward_arg_names", None) or ())
    if spec is None or spec.num_children != 2:
        return None
    args_spec, kwargs_spec = _kids(spec)
    names: list[str] = []
    for i, child in enumerate(_kids(args_spec)):
        base = arg_names[i] if i < len(arg_names) else f"arg{i}"
        names.extend(_leaf_names(child, base, top=False))
    keys = _child_keys(kwargs_spec)
    for key, child in zip(keys, _kids(kwargs_spec), strict=False):
        names.extend(_leaf_names(child, str(key), top=False))
    return names if len(names) == count else None


def _output_names(ep: torch.export.ExportedProgram) -> list[str] | None:
    """Each user output's name as a live trace names it: ``output`` alone, ``output[0]`` in a tuple, a
    field's bare name (``logits``) in a dict or model output."""
    sig = _root_signature(ep)
    spec = getattr(sig, "out_spec", None)
    if spec is None:
        return None
    return list(_leaf_names(spec, "output", top=True))


def _kids(spec: Any) -> list[Any]:
    children = getattr(spec, "children", None)
    return list(children()) if callable(children) else list(spec.children_specs)


def _child_keys(spec: Any) -> list[Any]:
    """The names of a tree node's children: dict keys, namedtuple fields, a registered class's keys."""
    ctx = spec.context
    n = spec.num_children
    if spec.type is dict or (isinstance(spec.type, type) and issubclass(spec.type, dict)):
        if isinstance(ctx, list) and len(ctx) == 2 and isinstance(ctx[1], list) and len(ctx[1]) == n:
            return ctx[1]  # defaultdict: (factory, keys)
    fields = getattr(spec.type, "_fields", None)
    if isinstance(fields, tuple) and len(fields) == n:
        return list(fields)
    if isinstance(ctx, (list, tuple)) and len(ctx) == n and all(isinstance(c, str | int) for c in ctx):
        return list(ctx)
    if isinstance(ctx, str):
        import json

        try:  # a class's keys as torch.export writes them for a type it only knows by name
            keys = json.loads(ctx)
            if isinstance(keys, list) and len(keys) == n:
                return keys
        except ValueError:
            pass
    return list(range(n))


def _leaf_names(spec: Any, path: str, *, top: bool) -> Iterator[str]:
    if spec.is_leaf():
        yield path
        return
    if spec.type in (list, tuple):
        for i, child in enumerate(_kids(spec)):
            yield from _leaf_names(child, f"{path}[{i}]", top=False)
        return
    for key, child in zip(_child_keys(spec), _kids(spec), strict=False):
        if isinstance(key, int):
            sub = f"{path}[{key}]"
        elif top:
            sub = str(key)
        elif spec.type is dict:
            sub = f"{path}[{key!r}]"
        else:
            sub = f"{path}.{key}"
        yield from _leaf_names(child, sub, top=False)
