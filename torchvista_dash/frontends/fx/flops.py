"""FLOPs of an FX graph's ops, with the live tracer's meter (``trace/cost.py``): the same formulas
(``torch.utils.flop_counter``), the same decompositions, the same per-call-shape memory.

An op runs on meta tensors of the example's sizes (a symbolic size counts at its example value), and only the
first time a call shape is met: 32 identical layers are counted once. An op that cannot run on meta tensors
(data-dependent output sizes) counts none.
"""

from __future__ import annotations

from typing import Any

import torch

from torchvista_dash.frontends.trace.cost import FlopMeter
from torchvista_dash.model.graph import TensorMeta


class OpCounter:
    """Counts each FX op node's FLOPs (``count``); a node the meter cannot run counts 0."""

    def __init__(self) -> None:
        self.meter = FlopMeter("meta")
        self.failed: set[Any] = set()  # targets that could not run on meta tensors: not tried again

    def count(self, fx_node: torch.fx.Node, metas: list[TensorMeta], owner: Any = None) -> int:
        """``owner``: the GraphModule whose submodule a ``call_module`` node calls."""
        target: Any = fx_node.target
        if fx_node.op == "call_method":
            target = getattr(torch.Tensor, str(target), None)
        elif fx_node.op == "call_module":
            target = _ModuleCall.of(owner, str(target)) if owner is not None else None
        elif fx_node.op != "call_function":
            target = None
        if target is None or not callable(target) or target in self.failed:
            return 0
        try:
            args = tuple(_concrete(a) for a in fx_node.args)
            kwargs = {k: _concrete(v) for k, v in fx_node.kwargs.items()}
            if "device" in kwargs:  # a factory (arange, ones): made on meta too, never allocated
                kwargs["device"] = torch.device("meta")
        except _NoTensor:
            return 0
        try:
            return int(self.meter.count(target, args, kwargs))
        except Exception:  # an op meta tensors cannot run (data-dependent sizes): counts none
            try:
                self.failed.add(target)
            except TypeError:  # an unhashable callable
                pass
            return 0


class _ModuleCall:
    """A submodule run on meta tensors: its parameters and buffers swapped for meta ones for the call
    (``torch.func.functional_call`` puts the real ones back), so nothing real is computed or changed. Equal
    (and so counted once) for submodules of one class and one ``extra_repr``."""

    def __init__(self, module: torch.nn.Module) -> None:
        self.module = module
        self.key = (type(module), module.extra_repr())
        with torch._C.DisableTorchFunctionSubclass():
            self.state = {
                k: torch.empty(v.shape, dtype=v.dtype, device="meta")
                for k, v in (*module.named_parameters(), *module.named_buffers())
            }

    @classmethod
    def of(cls, owner: Any, target: str) -> _ModuleCall | None:
        try:
            module = owner.get_submodule(target)
        except AttributeError:
            return None
        return cls(module)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return torch.func.functional_call(self.module, self.state, args, kwargs)

    def __hash__(self) -> int:
        return hash(self.key)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _ModuleCall) and other.key == self.key


class _NoTensor(Exception):
    """An argument whose value cannot be rebuilt (no metadata)."""


def _concrete(a: Any) -> Any:
    """An argument as the op can run on it: a tensor node as a meta tensor of its example's sizes, a size as
    its example value."""
    if isinstance(a, torch.fx.Node):
        val = a.meta.get("val", a.meta.get("tensor_meta"))
        if _is_tensorlike(val):
            return _concrete_val(val)
        if isinstance(val, (torch.SymInt, torch.SymFloat, torch.SymBool, int, float, bool)):
            return _int(val) if isinstance(val, (torch.SymInt, int)) else val
        if isinstance(val, (list, tuple)):
            return [_concrete_val(v) for v in val]
        raise _NoTensor
    if isinstance(a, (list, tuple)):
        return type(a)(_concrete(x) for x in a)
    if isinstance(a, torch.SymInt):
        return _int(a)
    return a


def _is_tensorlike(v: Any) -> bool:
    """A tensor, a fake one, or ShapeProp's record of one."""
    return isinstance(getattr(v, "dtype", None), torch.dtype) and hasattr(v, "shape")


def _concrete_val(v: Any) -> Any:
    if _is_tensorlike(v):
        return torch.empty([_int(s) for s in v.shape], dtype=v.dtype, device="meta")
    raise _NoTensor


def _int(s: Any) -> int:
    if isinstance(s, int):
        return s
    node = s.node
    hint = node.hint if node.hint is not None else node.shape_env.size_hint(node.expr)
    return int(hint)
