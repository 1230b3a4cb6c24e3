"""Static facts the recorder reads about modules and tensors, computed once and shared.

A module's class, parameters and ``extra_repr`` are read once per module (per class where possible), a
tensor's metadata once per (shape, dtype, device); records are built with a constructor that skips the
frozen-dataclass ``__init__``. All of it runs for thousands of ops per trace, so each piece is cheap.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import torch

from ..graph import Edge, Node, ParamInfo, TensorMeta
from .describe import dtype_name, meta_text

METAS: dict[tuple[Any, ...], tuple[TensorMeta, str]] = {}


def tensor_meta(t: torch.Tensor) -> tuple[TensorMeta, str]:
    """The (shared, immutable) TensorMeta of ``t`` and its text; interned because most shapes repeat."""
    key = (tuple(t.shape), t.dtype, t.device)
    m = METAS.get(key)
    if m is None:
        if len(METAS) > 50_000:
            METAS.clear()
        dt = key[1]
        meta = TensorMeta(shape=key[0], dtype=dtype_name(dt), device=str(key[2]), nbytes=t.numel() * dt.itemsize)
        m = METAS[key] = (meta, meta_text(meta))
    return m


_CLASS_INFO: dict[type, tuple[str, bool, bool]] = {}
_ATTR_TYPES = (bool, int, float)
_UNINITIALIZED = torch.nn.parameter.UninitializedTensorMixin
SCRIPT_NOTE = ("TorchScript: drawn as one opaque call (its ops run in the TorchScript interpreter, "
               "out of the tracer's sight)")


def is_uninitialized(t: Any) -> bool:
    """A lazy module's parameter or buffer before its first call: it has no shape yet."""
    return isinstance(t, _UNINITIALIZED)


def class_info(cls: type) -> tuple[str, bool, bool]:
    """(name, defined under torch.nn, overrides extra_repr): per class, computed once."""
    info = _CLASS_INFO.get(cls)
    if info is None:
        info = _CLASS_INFO[cls] = (cls.__name__, cls.__module__.startswith("torch.nn."),
                                   getattr(cls, "extra_repr", None) is not torch.nn.Module.extra_repr)
    return info


def module_info(m: torch.nn.Module, num_params: int) -> tuple[Any, ...]:
    """(cls, builtin, num_params, params, extra_repr, attrs): static facts about a module, computed once.

    Exact type checks (not isinstance) on attribute values: isinstance on an object with a custom
    __getattribute__ (a Hugging Face config) runs Python code.
    """
    name, builtin, custom_repr = class_info(type(m))
    params: tuple[ParamInfo, ...] = ()
    if isinstance(m, torch.jit.ScriptModule):
        name, custom_repr = getattr(m, "original_name", None) or name, False
    if m._parameters or m._buffers:
        params = tuple(
            new_param({"name": n, "shape": tuple(p.shape), "dtype": dtype_name(p.dtype),
                        "trainable": p.requires_grad, "is_buffer": False})
            for n, p in m._parameters.items() if p is not None and not is_uninitialized(p)
        ) + tuple(
            new_param({"name": n, "shape": tuple(b.shape), "dtype": dtype_name(b.dtype), "trainable": False,
                        "is_buffer": True})
            for n, b in m._buffers.items() if b is not None and not is_uninitialized(b)
        )
    extra = SCRIPT_NOTE if isinstance(m, torch.jit.ScriptModule) else ""
    if custom_repr:
        try:
            extra = m.extra_repr()
        except Exception:  # a broken extra_repr must not break the trace
            extra = ""
        if len(extra) > 200:
            extra = extra[:197] + "..."
    attrs: list[tuple[str, str]] = []
    for k, v in m.__dict__.items():
        if k[0] == "_" or k == "training":
            continue
        tv = type(v)
        if tv in _ATTR_TYPES or (tv is str and len(v) <= 40) or (
                tv is tuple and len(v) <= 4 and all(type(x) in _ATTR_TYPES for x in v)):
            attrs.append((k, repr(v)))
            if len(attrs) >= 12:
                break
    return name, builtin, num_params, params, extra, tuple(attrs)


def fast_factory(cls: type) -> Any:
    """A fast constructor for a frozen dataclass, given all its fields as a dict.

    ``__init__`` of a frozen dataclass sets each field through ``object.__setattr__``; filling ``__dict__``
    directly is several times faster, which matters for thousands of nodes. Only used when ``cls`` has no
    ``__post_init__`` and no ``__slots__`` and the dict names every field (fields it leaves out that have
    a default take it), so the object is the same as
    ``cls(**fields)`` (the JSON round-trip tests compare them); otherwise it falls back to ``cls(**fields)``.
    """
    fields_ = dataclasses.fields(cls)
    n_fields = len(fields_)
    if hasattr(cls, "__post_init__") or "__slots__" in cls.__dict__:
        return lambda fields: cls(**fields)
    new = object.__new__
    # fields with plain defaults (a node's costs): a dict that leaves them out gets the defaults
    defaults = {f.name: f.default for f in fields_ if f.default is not dataclasses.MISSING}

    def make(fields: dict[str, Any]) -> Any:
        if len(fields) != n_fields:
            fields = {**defaults, **fields}
            if len(fields) != n_fields:
                return cls(**fields)
        obj: Any = new(cls)
        obj.__dict__.update(fields)
        return obj

    return make


new_param = fast_factory(ParamInfo)
new_node = fast_factory(Node)
new_edge = fast_factory(Edge)
