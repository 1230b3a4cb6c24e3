"""Parameter names for an op's positional arguments, so details read ``dim=1``, not ``1=1``.

Where the names come from, per function (found once, cached by the function object):
- Python functions (``F.softmax``, ``Tensor.split``, ``Tensor.__rsub__``) and slot wrappers
  (``Tensor.__getitem__``): their ``inspect.signature``.
- Binary operators (``x + y``): ``self`` and ``other``, as Python's data model names them.
- Built-in torch functions and Tensor methods: the aten schema of the same name (``aten::cat``,
  ``aten::view``), the authoritative parameter names; a torch function's ``self`` is ``input``, as torch's
  documentation writes it. When overloads disagree (``view(size)`` / ``view(dtype)``) the overload is chosen
  by the argument types, as torch's own parser does, cached per (function, argument types).
- Otherwise torch's testing-override stubs (``torch.overrides``), which cover the rest.
A position still unnamed keeps its index (``"2"``), as old trace files have it.
"""

from __future__ import annotations

import inspect
from typing import Any, cast

import torch

_Tensor = torch.Tensor
_POS = tuple(str(i) for i in range(256))
_BINARY = frozenset(
    f"__{p}{op}__"
    for op in (
        "add",
        "sub",
        "mul",
        "matmul",
        "truediv",
        "floordiv",
        "mod",
        "pow",
        "and",
        "or",
        "xor",
        "lshift",
        "rshift",
        "div",
    )
    for p in ("", "r", "i")
) | {f"__{op}__" for op in ("eq", "ne", "lt", "le", "gt", "ge")}


class _Names:
    """The names of one function's positional parameters; ``star``: a trailing ``*name`` (or list) parameter
    that takes the remaining positional arguments (``x.view(2, 3)``: ``size``). As a plan for one call's
    argument types: ``names`` for each argument, or for the first ``merge`` ones and ``star`` for the rest."""

    __slots__ = ("merge", "names", "overloads", "plans", "star")

    def __init__(
        self,
        names: tuple[str, ...],
        star: str | None = None,
        overloads: list[tuple[tuple[str, ...], tuple[str, ...], int, bool]] | None = None,
        merge: int | None = None,
    ) -> None:
        self.names = names
        self.star = star
        self.overloads = overloads  # (names, types, required, list-last) when the names depend on types
        self.merge = merge
        self.plans: dict[tuple[type, ...], _Names] = {}  # argument types -> plan


_CACHE: dict[Any, _Names] = {}
_UNKNOWN = _Names(())
_OVERRIDES: dict[Any, Any] | None = None
_MAX_PLANS = 256  # per function; beyond that a call's plan is made and not kept


def items(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """(name, value) for every argument: positional ones by their parameter name, then the keywords.

    Trailing arguments that fill one ``*shape``-like parameter with plain values become one item,
    ``size=(2, 3)``; if they hold tensors they are ``tensors[0]``, ``tensors[1]``, ... (each its own input).
    The common case (one overload, no extra arguments) is one dict lookup; the rest is planned once per
    argument types.
    """
    return items_for(entry(func), args, kwargs)


def entry(func: Any) -> _Names:
    """What is known about ``func``'s parameter names (found once per function; the recorder keeps it with
    its other per-function facts and calls ``items_for`` directly)."""
    try:
        return _CACHE[func]
    except KeyError:
        e = _CACHE[func] = _resolve(func)
        return e
    except TypeError:  # an unhashable callable
        return _UNKNOWN


def items_for(e: _Names, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``items`` for a function whose ``entry`` is ``e``."""
    return zip(*split(e, args, kwargs))  # noqa: B905 - names may be longer than the values


def split(e: _Names, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[tuple[str, ...], Any]:
    """``items_for`` as (names, values): names may run longer than the values (pair them with ``zip``).

    The recorder keeps the names and pairs them after the pass: in the common case (one overload, no
    extra arguments, no keywords) this is the function's own names tuple and ``args`` itself, nothing new.
    """
    if e.overloads is None and len(args) <= len(e.names):
        names, values = e.names, args
    else:
        key = tuple(map(type, args))  # the types, not their kinds: no Python call per argument
        p = e.plans.get(key)
        if p is None:
            p = _plan(e, key)
            if len(e.plans) < _MAX_PLANS:
                e.plans[key] = p
        if p.merge is None:
            names, values = p.names, args
        else:  # the first `merge` args, then the rest as one (a plan
            star = cast(str, p.star)  # merges only into its star parameter)
            names, values = (*p.names[: p.merge], star), (*args[: p.merge], args[p.merge :])
    if kwargs:
        return (*names[: len(values)], *kwargs), (*values, *kwargs.values())
    return names, values


def _plan(e: _Names, types: tuple[type, ...]) -> _Names:
    """Names for a call with arguments of these types (the overload they pick, a ``*size`` they fill)."""
    kinds = tuple(map(_kind, types))
    base = e if e.overloads is None else _choose(e, kinds)
    names, star = base.names, base.star
    n = len(kinds)
    if n <= len(names):
        return _Names(names[:n])
    if star is not None and names and names[-1] == star:  # a schema's list parameter: view(self, size)
        names = names[:-1]
    k = len(names)
    if star is None:
        return _Names(names + tuple(_POS[i] if i < len(_POS) else str(i) for i in range(k, n)))
    if not any(c in "TL" for c in kinds[k:]):
        return _Names(names, star, merge=k)
    return _Names(names + tuple(f"{star}[{i}]" for i in range(n - k)))


# ---- finding the names, once per function ---------------------------------------------------------
def _resolve(func: Any) -> _Names:
    name = getattr(func, "__name__", None)
    if name in ("__get__", "__set__"):  # a property of Tensor (.T, .real)
        return _Names(("self", "value"))
    if name in _BINARY:
        return _Names(("self", "other"))
    found = _from_signature(func)
    if found is None and isinstance(name, str) and not _is_python(func):  # torch.einsum(*args): its stub
        found = _from_schema(name, _is_method(func))
    if found is None:
        found = _from_overrides(func)
    return found or _UNKNOWN


def _is_python(func: Any) -> bool:
    try:
        return hasattr(inspect.unwrap(func), "__code__")
    except ValueError:  # a __wrapped__ cycle
        return False


def _is_method(func: Any) -> bool:
    owner = getattr(func, "__objclass__", None)
    return isinstance(owner, type) and issubclass(owner, torch._C.TensorBase)


def _from_signature(func: Any) -> _Names | None:
    """Parameter names of a Python function; None for builtins and for a bare ``(*args, **kwargs)``."""
    try:
        sig = inspect.signature(func)
    except (ValueError, TypeError):
        return None
    names: list[str] = []
    star = None
    for p in sig.parameters.values():
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            names.append(p.name)
        elif p.kind is p.VAR_POSITIONAL:
            star = p.name
            break
        else:
            break
    if not names and star in (None, "args"):
        return None
    return _Names(tuple(names), star)


def _from_overrides(func: Any) -> _Names | None:
    global _OVERRIDES
    if _OVERRIDES is None:
        try:
            _OVERRIDES = torch.overrides.get_testing_overrides()
        except Exception:  # a private helper of torch's: never let it break a trace
            _OVERRIDES = {}
    try:
        stub = _OVERRIDES.get(func)
    except TypeError:
        return None
    return None if stub is None else _from_signature(stub)


_LISTS = ("List[int]", "Optional[List[int]]", "List[SymInt]")


def _from_schema(name: str, method: bool) -> _Names | None:
    """The names from ``aten::<name>``'s overloads (tensor ones, no ``out=`` variants)."""
    try:
        schemas = torch._C._jit_get_schemas_for_operator(f"aten::{name}")
    except Exception:
        return None
    overloads = []
    for s in schemas:
        args = s.arguments
        if s.overload_name.startswith("prim_") or any(a.is_out for a in args):
            continue
        pos = [a for a in args if not a.kwarg_only]
        types = tuple(str(a.real_type) for a in pos)
        if not any("Tensor" in str(r.real_type) for r in s.returns) and not any("Tensor" in t for t in types):
            continue  # TorchScript's scalar/list overloads (aten::add.int), not reachable from Python
        names = tuple(a.name for a in pos)
        if not method:
            names = tuple("input" if x == "self" else x for x in names)
        required = sum(not a.has_default_value() for a in pos)
        overloads.append((names, types, required, bool(types) and types[-1] in _LISTS))
    if not overloads:
        return None
    longest = max(overloads, key=lambda o: len(o[0]))[0]
    agree = all(o[0] == longest[: len(o[0])] for o in overloads)
    star = _star(overloads)
    if agree:
        return _Names(longest, star)
    return _Names(_common(overloads), None, overloads)


def _star(overloads: list[tuple[tuple[str, ...], tuple[str, ...], int, bool]]) -> str | None:
    stars = {o[0][-1] for o in overloads if o[3]}
    return stars.pop() if len(stars) == 1 else None


def _common(overloads: list[tuple[tuple[str, ...], tuple[str, ...], int, bool]]) -> tuple[str, ...]:
    """The leading names every overload agrees on."""
    out: list[str] = []
    for i in range(min(len(o[0]) for o in overloads)):
        if len({o[0][i] for o in overloads}) != 1:
            break
        out.append(overloads[0][0][i])
    return tuple(out)


# ---- overloads told apart by the argument types ------------------------------------------------------
_KIND = {
    bool: "b",
    int: "i",
    float: "f",
    complex: "c",
    str: "s",
    type(None): "N",
    torch.Size: "L",
    list: "L",
    tuple: "L",
    torch.dtype: "d",
    torch.device: "D",
    torch.layout: "l",
    torch.memory_format: "m",
}
_ACCEPTS = {
    "Tensor": "T",
    "number": "bifcT",
    "int": "biT",
    "SymInt": "biT",
    "float": "bifT",
    "bool": "b",
    "complex": "bifc",
    "str": "s",
    "ScalarType": "d",
    "Device": "Dsi",
    "Layout": "l",
    "MemoryFormat": "m",
    "List[int]": "Li",
    "List[SymInt]": "Li",
    "List[Tensor]": "L",
    "List[Optional[Tensor]]": "L",
}


def _kind(t: type) -> str:
    if issubclass(t, _Tensor):
        return "T"
    return _KIND.get(t, "?")


def _accepts(t: str, k: str) -> bool:
    if t.startswith("Optional["):
        return k == "N" or _accepts(t[9:-1], k)
    allowed = _ACCEPTS.get(t)
    return allowed is None or k == "?" or k in allowed


def _choose(e: _Names, kinds: tuple[str, ...]) -> _Names:
    n = len(kinds)
    # Python's binding gives some parameters defaults the schema lacks (x.to(device)): a second pass
    # lets such an overload take fewer arguments than it requires.
    for strict in (True, False):
        for names, types, required, list_last in e.overloads or ():
            if (strict and n < required) or (n > len(names) and not list_last):
                continue
            fixed = len(names) - 1 if n > len(names) else n
            if all(_accepts(types[i], kinds[i]) for i in range(fixed)) and (
                n <= len(names) or all(k in "biT" for k in kinds[fixed:])
            ):
                return _Names(names, names[-1] if list_last else None)
    return _Names(e.names)
