"""What an FX node is called, what its arguments are named and read, where in the user's code it came from,
and the TensorMetas of what it yields: text and metadata every FX-based source writes the same way."""

from __future__ import annotations

import inspect
import os
from collections.abc import Mapping
from typing import Any

import torch

from torchvista_dash.frontends.trace.describe import clip, dtype_name, source_path
from torchvista_dash.model.graph import TensorMeta

_OpOverload = torch._ops.OpOverload
_HigherOrder = torch._ops.HigherOrderOperator
_TORCH_DIR = os.path.dirname(os.path.abspath(torch.__file__)) + os.sep


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
