"""Walk nested inputs/outputs and name every tensor by its place in the structure.

Names read like Python: ``x``, ``args[2]``, ``batch['ids']``, ``last_hidden_state``,
``past_key_values[0][1]``, ``state.layers[0].keys``. They name input and output nodes.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import torch

_SCALARS = (
    bool,
    int,
    float,
    complex,
    str,
    bytes,
    type(None),
    torch.dtype,
    torch.device,
    torch.memory_format,
    torch.layout,
    slice,
    type(Ellipsis),
)
_MAX_DEPTH = 8


def _key_text(key: Any) -> str:
    return f"[{key!r}]"


def iter_tensors(
    obj: Any, path: str, *, top: bool = False, _depth: int = 0, _seen: set[int] | None = None
) -> Iterator[tuple[str, torch.Tensor]]:
    """Yield ``(name, tensor)`` for every tensor in ``obj``, in a deterministic order.

    ``top=True`` names the fields of a top-level mapping/dataclass bare (``last_hidden_state``) rather than
    ``output['last_hidden_state']``: that is how users know the fields of a model output.
    """
    if isinstance(obj, torch.Tensor):
        yield path, obj
        return
    if isinstance(obj, _SCALARS) or _depth > _MAX_DEPTH:
        return
    seen = _seen if _seen is not None else set()
    if id(obj) in seen:
        return
    seen.add(id(obj))

    def child(sub: Any, bare: str, nested: str) -> Iterator[tuple[str, torch.Tensor]]:
        yield from iter_tensors(sub, bare if top else path + nested, _depth=_depth + 1, _seen=seen)

    if isinstance(obj, Mapping):
        for k, v in obj.items():
            yield from child(v, str(k), _key_text(k))
    elif isinstance(obj, tuple) and hasattr(obj, "_fields"):  # namedtuple / structseq
        for f, v in zip(obj._fields, obj, strict=False):
            yield from child(v, f, "." + f)
    elif isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            yield from iter_tensors(v, f"{path}[{i}]", _depth=_depth + 1, _seen=seen)
    elif dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        for f in dataclasses.fields(obj):
            yield from child(getattr(obj, f.name, None), f.name, "." + f.name)
    elif hasattr(obj, "__dict__") and not callable(obj) and not isinstance(obj, torch.nn.Module):
        # Other containers (e.g. a Hugging Face Cache): their public attributes, in definition order.
        for k, v in vars(obj).items():
            if not k.startswith("_"):
                yield from child(v, k, "." + k)


def flat_tensors(obj: Any) -> list[torch.Tensor]:
    """The tensors in ``obj`` and in lists/tuples nested in it, in order (an op's outputs, a call's
    result)."""
    if isinstance(obj, torch.Tensor):
        return [obj]
    if isinstance(obj, (list, tuple)):
        out: list[torch.Tensor] = []
        for x in obj:
            out.extend(flat_tensors(x))
        return out
    return []


_SIGNATURES: dict[Any, list[inspect.Parameter]] = {}


def bind_arg_names(forward: Callable[..., Any], n_args: int) -> list[str]:
    """Names for ``n_args`` positional arguments: the forward's parameter names, ``args[i]`` past them."""
    names: list[str] = []
    for p in _params(forward):
        if len(names) == n_args:
            break
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            names.append(p.name)
        else:
            break
    names.extend(f"args[{i}]" for i in range(len(names), n_args))
    return names


def _params(forward: Callable[..., Any]) -> list[inspect.Parameter]:
    func = getattr(forward, "__func__", None)  # signatures of plain functions are cached (they are slow)
    params = _SIGNATURES.get(func) if func is not None else None
    if params is None:
        try:
            params = list(inspect.signature(forward).parameters.values())
        except (TypeError, ValueError):
            params = _schema_params(forward)
        if func is not None:
            _SIGNATURES[func] = params
    return params


def names_keywords(forward: Callable[..., Any], inputs: Any) -> bool:
    """Whether ``inputs``, a dict, is the forward's keyword arguments: every key names one of its parameters
    (a tokenizer's output for ``model(**batch)``), and so it is no single dict argument
    (``forward(batch)``)."""
    if not isinstance(inputs, Mapping) or not inputs or not all(isinstance(k, str) for k in inputs):
        return False
    named = {p.name for p in _params(forward) if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    return all(k in named for k in inputs)


def _schema_params(forward: Any) -> list[inspect.Parameter]:
    """A TorchScript method has no Python signature; its schema names the arguments (after ``self``)."""
    try:
        return [
            inspect.Parameter(a.name, inspect.Parameter.POSITIONAL_OR_KEYWORD)
            for a in forward.schema.arguments[1:]
        ]
    except (AttributeError, TypeError, ValueError, RuntimeError):
        return []


def check_inputs(
    inputs: Any, kwargs: Any, forward: Callable[..., Any] | None = None
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """Normalise ``inputs``/``kwargs`` to ``(args, kwargs)``; a TypeError before anything runs if they are
    bad. A dict whose keys all name ``forward``'s parameters is its keyword arguments (``names_keywords``)."""
    if forward is not None and not kwargs and names_keywords(forward, inputs):
        inputs, kwargs = (), dict(inputs)
    if isinstance(inputs, torch.Tensor):
        args: tuple[Any, ...] = (inputs,)
    elif isinstance(inputs, (tuple, list)) and not hasattr(inputs, "_fields"):
        args = tuple(inputs)
    elif (
        isinstance(inputs, Mapping)
        or (dataclasses.is_dataclass(inputs) and not isinstance(inputs, type))
        or hasattr(inputs, "_fields")
    ):
        args = (inputs,)
    else:
        raise TypeError(
            f"trace_model: inputs must be a tensor, a tuple/list of positional arguments, a dict of keyword "
            f"arguments, or a dict/dataclass passed as the single argument; got {type(inputs).__name__}. "
            f"Example: trace_model(model, x) or "
            f"trace_model(model, (ids,), kwargs={{'attention_mask': mask}})"
        )
    if kwargs is None:
        kw: dict[str, Any] = {}
    elif isinstance(kwargs, Mapping) and all(isinstance(k, str) for k in kwargs):
        kw = dict(kwargs)
    else:
        raise TypeError(f"trace_model: kwargs must be a dict of str -> value, got {type(kwargs).__name__}")
    for i, a in enumerate(args):
        _check_leaf(a, f"inputs[{i}]", 0)
    for k, v in kw.items():
        _check_leaf(v, f"kwargs[{k!r}]", 0)
    return args, kw


def _check_leaf(obj: Any, where: str, depth: int) -> None:
    if isinstance(obj, torch.Tensor) or isinstance(obj, _SCALARS) or depth > _MAX_DEPTH:
        return
    if isinstance(obj, torch.nn.Module):
        raise TypeError(
            f"trace_model: {where} is an nn.Module; pass tensors (the model is the first argument)"
        )
    if hasattr(obj, "__array__") or type(obj).__module__.split(".")[0] in ("numpy", "pandas", "PIL"):
        raise TypeError(
            f"trace_model: {where} is a {type(obj).__module__}.{type(obj).__name__}, not a tensor; "
            f"convert it first, e.g. torch.as_tensor(value)"
        )
    if isinstance(obj, Mapping):
        for k, v in obj.items():
            _check_leaf(v, f"{where}[{k!r}]", depth + 1)
    elif isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            _check_leaf(v, f"{where}[{i}]", depth + 1)
    elif dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        for f in dataclasses.fields(obj):
            _check_leaf(getattr(obj, f.name, None), f"{where}.{f.name}", depth + 1)
    elif inspect.isgenerator(obj) or inspect.isfunction(obj):
        raise TypeError(
            f"trace_model: {where} is a {type(obj).__name__}; pass concrete tensors or structures"
        )
