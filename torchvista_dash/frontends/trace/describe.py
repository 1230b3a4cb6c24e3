"""Short, deterministic text for what an op was called with (names, argument reprs, source paths)."""

from __future__ import annotations

import os
from typing import Any

import torch

from torchvista_dash.model.graph import TensorMeta
from torchvista_dash.model.graph import meta_text as graph_meta_text

MAX_REPR = 80
# Ops that change their first argument in place and return None.
IN_PLACE_NONE_RETURN = frozenset({"__setitem__"})

_NAMES: dict[Any, str] = {}
_DTYPES: dict[torch.dtype, str] = {}
_SCALAR_TYPES = (bool, int, float, type(None))


def func_name(func: Any) -> str:
    """``linear``, ``__add__``, ``T`` (for the ``Tensor.T`` getter): cached per function object."""
    try:
        return _NAMES[func]
    except (KeyError, TypeError):
        pass
    name = getattr(func, "__name__", None) or type(func).__name__
    if name in ("__get__", "__set__"):  # a property of Tensor (.T, .mT, .real, ...)
        owner = getattr(func, "__self__", None)
        name = getattr(owner, "__name__", name)
    try:
        _NAMES[func] = name
    except TypeError:
        pass
    return name


def dtype_name(dt: torch.dtype) -> str:
    try:
        return _DTYPES[dt]
    except KeyError:
        s = _DTYPES[dt] = str(dt).removeprefix("torch.")
        return s


def clip(s: str) -> str:
    return s if len(s) <= MAX_REPR else s[: MAX_REPR - 3] + "..."


def short_repr(a: Any, sizes: dict[int, tuple[Any, str]]) -> str:
    """A short text for a non-tensor argument; never contains a memory address."""
    t = type(a)
    if t in _SCALAR_TYPES:
        return repr(a)
    if t is str:
        return clip(repr(a))
    if t is torch.Size:
        e = sizes.get(id(a))
        if e is not None and e[0] is a:
            return f"{tuple(a)!r} (shape of {e[1]})"
        return repr(tuple(a))
    if t in (tuple, list):
        if all(type(x) in _SCALAR_TYPES for x in a):
            return clip(repr(a))
        return clip(
            ("(" if t is tuple else "[") + ", ".join(_plain(x) for x in a) + (")" if t is tuple else "]")
        )
    return _plain(a)


def _plain(a: Any) -> str:
    if type(a) in _SCALAR_TYPES or type(a) is str:
        return clip(repr(a))
    if isinstance(a, torch.dtype):
        return dtype_name(a)
    if isinstance(a, (torch.device, torch.memory_format, torch.layout)):
        return str(a)
    if isinstance(a, slice):
        return repr(a)
    if a is Ellipsis:
        return "..."
    if isinstance(a, torch.Size):
        return repr(tuple(a))
    if isinstance(a, (tuple, list)) and all(type(x) in _SCALAR_TYPES for x in a):
        return clip(repr(tuple(a)))
    if callable(a):
        return getattr(a, "__name__", type(a).__name__)
    return type(a).__name__


def meta_text(m: TensorMeta) -> str:
    """``Tensor[1×32 float32]``: how a tensor argument reads in an op's details."""
    return f"Tensor[{graph_meta_text(m)}]"


def source_path(filename: str) -> str:
    """A stable, short path: after ``site-packages/`` for libraries, relative to the cwd for user code."""
    marker = os.sep + "site-packages" + os.sep
    if marker in filename:
        return filename.split(marker, 1)[1]
    try:
        rel = os.path.relpath(filename)
    except ValueError:
        return filename
    return filename if rel.startswith("..") else rel
