"""Snapshot and restore what a forward pass may change on a model; detect what cannot be restored cheaply.

Restored, whatever happens: each module's ``__dict__`` entries (attributes set, added or deleted in forward),
its parameter, buffer and submodule tables (a ``register_buffer`` or a new submodule in forward is removed
again), its hook tables, training flags, ``requires_grad``, a parameter's ``.data`` swapped for another
tensor, and buffer values (a training-mode BatchNorm updates running stats even under no_grad) with the
buffer objects themselves kept (an ``inference_mode`` buffer is written back in inference mode).
Not restored: values written into a parameter in place (``weight.data.fill_``), since undoing that would
need a copy of every weight; such writes are detected (version counters, and the recorder's in-place ops on
a parameter's storage) and reported by name. Modules that are still lazy (``nn.LazyLinear`` before its first
call) are left to materialise, as after any first forward pass; TorchScript modules keep their own tables.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from itertools import chain, filterfalse
from operator import attrgetter, is_, itemgetter, methodcaller
from typing import Any

import torch
from torch.nn.modules.lazy import LazyModuleMixin

# nn.Module's own bookkeeping containers (_parameters, _buffers, _modules, the hook tables, the set of
# non-persistent buffers): their contents are restored too. User attributes are restored by identity only.
_TABLE_NAMES = tuple(k for k, v in torch.nn.Module().__dict__.items() if isinstance(v, (dict, set)))
_TABLE_TYPES = frozenset({dict, set, OrderedDict})
_TABLES_OF = itemgetter(*_TABLE_NAMES)
_copy = methodcaller("copy")


def is_lazy(m: torch.nn.Module) -> bool:
    """A lazy module whose parameters are not materialised yet (its first call will create them)."""
    return isinstance(m, LazyModuleMixin) and m.has_uninitialized_params()


class ModelState:
    """What ``restore()`` puts back: taken before the trace, applied in a ``finally``.

    Both passes run once per trace over every module and parameter, so they are written as C-level ``map``s
    over flat lists (attribute getters, identity comparisons) rather than a Python loop per object.
    """

    def __init__(
        self, model: torch.nn.Module, named: list[tuple[str, torch.nn.Module]] | None = None
    ) -> None:
        named = list(model.named_modules()) if named is None else named
        self.modules = [m for _, m in named]
        self.training = list(map(_training, self.modules))
        # for ordinary (not lazy, not scripted) modules: each __dict__ and its shallow copy; their non-empty
        # bookkeeping tables with a copy of their contents; the empty ones (most hook tables), to empty again
        self.mds: list[dict[str, Any]] = []
        self.saved: list[dict[str, Any]] = []
        self.full: list[tuple[Any, Any]] = []
        self.empty: list[Any] = []
        # values are always copied back: kernels such as batch_norm update running stats without bumping
        # the tensor's version counter, so "unchanged" cannot be told cheaply
        self.buffers: list[tuple[torch.nn.Module, str, torch.Tensor, torch.Tensor]] = []
        names: list[str] = []
        params: list[torch.nn.Parameter] = []
        script = torch.jit.ScriptModule
        with torch.no_grad(), torch._C.DisableTorchFunctionSubclass():  # no Parameter.__torch_function__
            lazy: set[int] = {id(m) for m in self.modules if is_lazy(m)}
            seen: set[int] = set()
            for q, m in named:
                if id(m) in lazy:
                    continue
                if not isinstance(m, script):
                    self.mds.append(m.__dict__)
                for name, b in m._buffers.items():
                    if b is not None:
                        self.buffers.append((m, name, b, b.detach().clone()))
                for name, p in m._parameters.items():
                    if p is not None and id(p) not in seen:
                        seen.add(id(p))
                        names.append(f"{q}.{name}" if q else name)
                        params.append(p)
            self.saved = list(map(dict, self.mds))
            self._tables()
            self.names = names
            self.params = params
            self.grads = list(map(_requires_grad, params))
            self.ptrs = list(map(_data_ptr, params))
            self.datas = list(map(_data, params))
            self.versions = list(map(_version, params))

    def _tables(self) -> None:
        """Every module's bookkeeping tables, in C-level passes over all modules at once (one Python loop per
        module when a module lacks one or holds something else there)."""
        try:
            tables = list(chain.from_iterable(map(_TABLES_OF, self.mds)))
            plain = all(map(_TABLE_TYPES.__contains__, map(type, tables)))
        except KeyError:
            plain = False
        if not plain:
            tables = [
                v
                for md in self.mds
                for v in map(md.get, _TABLE_NAMES)
                if type(v) in _TABLE_TYPES or isinstance(v, (dict, set))
            ]
        full = list(filter(None, tables))
        self.full = list(zip(full, map(_copy, full)))  # noqa: B905 - the same list twice
        self.empty = list(filterfalse(None, tables))

    def restore(self) -> list[str]:
        """Put every snapshotted object, flag and value back (never raises on a well-formed model).

        Returns the names of parameters whose values were written in place (not restored: see the module doc).
        """
        written: list[str] = []
        with torch.no_grad(), torch._C.DisableTorchFunctionSubclass():
            if any(self.empty):
                for table in self.empty:
                    table.clear()
            for table, copy in self.full:
                if not _same(table, copy):
                    table.clear()
                    table.update(copy)
            for md, saved in zip(self.mds, self.saved, strict=True):
                # the same keys in the same order holding the same objects (compared by identity: an equal key
                # that is another object only costs a needless put-back)
                if (
                    len(md) != len(saved)
                    or not all(map(is_, md, saved))
                    or not all(map(is_, md.values(), saved.values()))
                ):
                    # an attribute, buffer or submodule set, added or deleted in forward
                    md.clear()
                    md.update(saved)
            if not all(map(is_, map(_training, self.modules), self.training)):
                for m, flag in zip(self.modules, self.training, strict=True):
                    if (
                        m.training is not flag
                    ):  # scripted modules keep the flag elsewhere; set it back there too
                        m.training = flag
            params = self.params
            if list(map(_requires_grad, params)) != self.grads:
                for p, rg in zip(params, self.grads, strict=True):
                    if p.requires_grad != rg:
                        p.requires_grad_(rg)
            swapped = set()
            if list(map(_data_ptr, params)) != self.ptrs:
                for i, (p, ptr) in enumerate(zip(params, self.ptrs, strict=True)):
                    if p.data_ptr() != ptr:
                        p.data = self.datas[i]  # the whole tensor was swapped: the old one is still here
                        swapped.add(i)
            versions = list(map(_version, params))
            if versions != self.versions:
                for i, (v, saved_v) in enumerate(zip(versions, self.versions, strict=True)):
                    if i not in swapped and saved_v >= 0 and v != saved_v:
                        written.append(self.names[i])
            for m, name, b, saved_value in self.buffers:
                if b.device.type == "meta":
                    continue
                try:
                    if b.shape == saved_value.shape and b.dtype == saved_value.dtype:
                        if b.is_inference():
                            with torch.inference_mode():
                                b.copy_(saved_value)
                        else:
                            b.copy_(saved_value)
                    else:
                        b.data = saved_value
                except RuntimeError:  # cannot be written (an unusual tensor): put the saved copy in
                    m._buffers[name] = saved_value
        return written


_training = attrgetter("training")
_requires_grad = attrgetter("requires_grad")
_data = attrgetter("data")
_data_ptr = torch.Tensor.data_ptr


def _version(p: torch.Tensor) -> int:
    """The in-place write counter; -1 for inference tensors, which have none."""
    return -1 if p.is_inference() else p._version


def _same(table: Any, copy: Any) -> bool:
    """Does ``table`` still hold exactly ``copy`` (same keys in the same order, the same objects)?"""
    if isinstance(table, set):
        return table == copy  # names only
    return (
        len(table) == len(copy)
        and all(map(is_, table, copy))
        and all(map(is_, table.values(), copy.values()))
    )


def quiet_lazy_init(modules: list[torch.nn.Module]) -> Callable[[], None]:
    """Let lazy modules materialise their parameters out of the recorder's sight (their init ops are not
    part of the forward pass); returns the function that puts their own hooks back if they never ran."""
    swapped: list[tuple[dict[int, Any], int, Any, Any]] = []
    for m in modules:
        handle = getattr(m, "_initialize_hook", None) if is_lazy(m) else None
        hook = m._forward_pre_hooks.get(handle.id) if handle is not None else None
        if handle is None or hook is None:
            continue

        def quiet(module: torch.nn.Module, args: Any, kwargs: Any = None, _hook: Any = hook) -> Any:
            with torch._C.DisableTorchFunction():
                return _hook(module, args, kwargs)

        m._forward_pre_hooks[handle.id] = quiet
        swapped.append((m._forward_pre_hooks, handle.id, quiet, hook))

    def undo() -> None:
        for hooks, key, quiet, hook in swapped:
            if hooks.get(key) is quiet:
                hooks[key] = hook

    return undo
