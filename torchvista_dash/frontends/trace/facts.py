"""Static facts the recorder reads about modules and tensors, computed once and shared.

A module's class, parameters and ``extra_repr`` are read once per module (per class where possible), a
tensor's metadata once per (shape, dtype, device); records are built with a constructor that skips the
frozen-dataclass ``__init__``. All of it runs for thousands of ops per trace, so each piece is cheap.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import torch

from torchvista_dash.frontends.trace.describe import dtype_name, meta_text
from torchvista_dash.model.graph import Edge, Node, ParamInfo, TensorMeta

# (shape, dtype, device) -> (TensorMeta, its text, the 1-tuple of it: an op's outputs, shared)
METAS: dict[tuple[Any, ...], tuple[TensorMeta, str, tuple[TensorMeta]]] = {}


def tensor_meta(t: torch.Tensor) -> tuple[TensorMeta, str, tuple[TensorMeta]]:
    """The (shared, immutable) TensorMeta of ``t``, its text and ``(meta,)``; interned because most shapes
    repeat (and objects made once are not new work for the garbage collector after every trace)."""
    key = (tuple(t.shape), t.dtype, t.device)
    m = METAS.get(key)
    if m is None:
        if len(METAS) > 50_000:
            METAS.clear()
        dt = key[1]
        meta = TensorMeta(
            shape=key[0], dtype=dtype_name(dt), device=str(key[2]), nbytes=t.numel() * dt.itemsize
        )
        m = METAS[key] = (meta, meta_text(meta), (meta,))
    return m


# "n:i" and "n:i/0" (a node's id and its first output's name) for the first node indices, made once for the
# process and shared by every trace (each numbers its nodes from 0): no new strings per op.
NODE_IDS: list[str] = []
FIRST_OUTS: list[str] = []
_MAX_IDS = 100_000


def node_ids(i: int) -> tuple[str, str]:
    """The id of node ``i`` and the name of its first output (after the shared ones run out: new ones)."""
    if i >= _MAX_IDS:
        return f"n:{i}", f"n:{i}/0"
    start = len(NODE_IDS)
    NODE_IDS.extend([f"n:{k}" for k in range(start, min(max(i + 1, 2 * start, 1024), _MAX_IDS))])
    FIRST_OUTS.extend([f"{nid}/0" for nid in NODE_IDS[start:]])
    return NODE_IDS[i], FIRST_OUTS[i]


_CLASS_INFO: dict[type, tuple[str, bool, bool]] = {}
_ATTR_TYPES = (bool, int, float)
_UNINITIALIZED = torch.nn.parameter.UninitializedTensorMixin
SCRIPT_NOTE = (
    "TorchScript: drawn as one opaque call (its ops run in the TorchScript interpreter, "
    "out of the tracer's sight)"
)


def is_uninitialized(t: Any) -> bool:
    """A lazy module's parameter or buffer before its first call: it has no shape yet."""
    return isinstance(t, _UNINITIALIZED)


def class_info(cls: type) -> tuple[str, bool, bool]:
    """(name, defined under torch.nn, overrides extra_repr): per class, computed once."""
    info = _CLASS_INFO.get(cls)
    if info is None:
        info = _CLASS_INFO[cls] = (
            cls.__name__,
            cls.__module__.startswith("torch.nn."),
            getattr(cls, "extra_repr", None) is not torch.nn.Module.extra_repr,
        )
    return info


def module_info(m: torch.nn.Module, num_params: int) -> tuple[Any, ...]:
    """(cls, builtin, num_params, params, extra_repr, attrs): static facts about a module, computed once.

    Exact type checks (not isinstance) on attribute values: isinstance on an object with a custom
    __getattribute__ (a Hugging Face config) runs Python code.
    """
    name, builtin, custom_repr = class_info(type(m))
    script = isinstance(m, torch.jit.ScriptModule)
    if script:
        name, custom_repr = getattr(m, "original_name", None) or name, False
    params = _param_infos(m) if m._parameters or m._buffers else ()
    extra = SCRIPT_NOTE if script else ""
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
        if (
            tv in _ATTR_TYPES
            or (tv is str and len(v) <= 40)
            or (tv is tuple and len(v) <= 4 and all(type(x) in _ATTR_TYPES for x in v))
        ):
            attrs.append((k, repr(v)))
            if len(attrs) >= 12:
                break
    at = tuple(attrs)
    if at:
        if len(_ATTRS) > 20_000:
            _ATTRS.clear()
        at = _ATTRS.setdefault(at, at)
    return name, builtin, num_params, params, extra, at


# (name, shape, dtype, trainable, is_buffer) of a module's parameters and buffers -> their ParamInfo tuple:
# the same layer shapes recur (12 decoder blocks, every trace of a model), made once and shared; a module's
# attributes likewise (``_ATTRS``). Bounded.
_PARAM_INFOS: dict[tuple[Any, ...], tuple[ParamInfo, ...]] = {}
_ATTRS: dict[tuple[tuple[str, str], ...], tuple[tuple[str, str], ...]] = {}


def _param_infos(m: torch.nn.Module) -> tuple[ParamInfo, ...]:
    """ParamInfo of ``m``'s own parameters, then its buffers (not the lazy ones, which have no shape yet)."""
    key = tuple(
        (n, p.shape, p.dtype, p.requires_grad, False)
        for n, p in m._parameters.items()
        if p is not None and not is_uninitialized(p)
    ) + tuple(
        (n, b.shape, b.dtype, False, True)
        for n, b in m._buffers.items()
        if b is not None and not is_uninitialized(b)
    )
    infos = _PARAM_INFOS.get(key)
    if infos is None:
        if len(_PARAM_INFOS) > 20_000:
            _PARAM_INFOS.clear()
        infos = _PARAM_INFOS[key] = tuple(
            new_param(
                {
                    "name": n,
                    "shape": tuple(shape),
                    "dtype": dtype_name(dt),
                    "trainable": trainable,
                    "is_buffer": is_buffer,
                }
            )
            for n, shape, dt, trainable, is_buffer in key
        )
    return infos


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

# The recorder's hot path fills each op's Node and its Edges field by field in these orders (a dict update on
# a bare object: faster still than ``fast_factory``); if the data model gains a field, this says where to add
# it.
NODE_FIELDS = (
    "id",
    "kind",
    "name",
    "parent",
    "error",
    "args",
    "source",
    "params",
    "outputs",
    "flops",
    "time_ms",
    "values",
)
EDGE_FIELDS = ("src", "dst", "tensor", "meta", "dst_arg")
for _cls, _names in ((Node, NODE_FIELDS), (Edge, EDGE_FIELDS)):
    if tuple(f.name for f in dataclasses.fields(_cls)) != _names:  # pragma: no cover - a data model change
        raise RuntimeError(f"{_cls.__name__}'s fields changed: update trace/facts.py and Recorder.record")


class ModelFacts:
    """What the recorder knows about the model before it runs: module and parameter names, parameter
    metadata (storage addresses on the first in-place op); each called module's static facts are read right
    after the forward pass, before the model is restored (``Recorder.read_facts``)."""

    def __init__(
        self, model: torch.nn.Module, named: list[tuple[str, torch.nn.Module]] | None = None
    ) -> None:
        modules = list(model.named_modules()) if named is None else named
        self.module_names = {id(m): q for q, m in modules}
        self.builtin = {id(m): class_info(type(m))[1] for _, m in modules}
        self.param_names: dict[int, str] = {}
        self.param_metas: dict[int, tuple[TensorMeta, str, tuple[TensorMeta]]] = {}
        self._storage: dict[int, str] | None = None
        self.subtree: dict[str, int] = {}  # qualname -> parameters in its subtree (shared ones once)
        self.lazy = False
        # Reading .shape/.dtype of an nn.Parameter goes through Parameter.__torch_function__ (Python) unless
        # subclass dispatch is off: read the parameters' facts once, with it off.
        with torch._C.DisableTorchFunctionSubclass():
            self._read_params(modules)
        # Static facts about each module (class, parameters, extra_repr, attributes) are read after the pass
        # (``facts``): a lazy module has materialised its parameters by then.
        self.module_info: dict[int, tuple[Any, ...]] = {}
        self.modules = {id(m): m for _, m in modules}

    def _read_params(self, modules: list[tuple[str, torch.nn.Module]]) -> None:
        """``named_parameters()`` and ``named_buffers()`` in their order, from the one module walk."""
        params: list[tuple[str, Any]] = []
        buffers: list[tuple[str, Any]] = []
        seen_p: set[int] = set()
        seen_b: set[int] = set()
        owners: dict[int, list[str]] = {}  # id(parameter) -> every module holding it (tied: several)
        for prefix, m in modules:
            for t in m._parameters.values():
                if t is not None:
                    owners.setdefault(id(t), []).append(prefix)
            for table, out, seen in ((m._parameters, params, seen_p), (m._buffers, buffers, seen_b)):
                for k, t in table.items():
                    if t is None or id(t) in seen:
                        continue
                    seen.add(id(t))
                    out.append((f"{prefix}.{k}" if prefix else k, t))
        for q, p in params:
            self.param_names[id(p)] = q
            if is_uninitialized(p):  # a lazy module's: facts are read when its call ends
                self.lazy = True
                continue
            self.param_metas[id(p)] = tensor_meta(p)
            self._count_in_subtrees(p.numel(), owners[id(p)])
        for q, b in buffers:
            self.param_names.setdefault(id(b), q)
        self._params = [(q, p) for q, p in params if id(p) in self.param_metas]  # not the lazy ones

    def _count_in_subtrees(self, n: int, holders: list[str]) -> None:
        """Add a parameter's ``n`` elements to every module whose subtree holds it, once each: as
        ``module.parameters()`` counts, a tied weight is in both owners' subtrees and once in a common
        ancestor's."""
        prefixes: set[str] = set()
        for holder in holders:
            prefix: str | None = holder
            while prefix is not None and prefix not in prefixes:
                prefixes.add(prefix)
                prefix = None if prefix == "" else prefix.rpartition(".")[0]
        for prefix in prefixes:
            self.subtree[prefix] = self.subtree.get(prefix, 0) + n

    def storage(self) -> dict[int, str]:
        """Storage address -> parameter name: an in-place op writing there changes a weight (warned about).
        Read when the first in-place op runs (most forward passes have none)."""
        if self._storage is None:
            self._storage = {}
            with torch._C.DisableTorchFunctionSubclass():
                for q, p in self._params:
                    ptr = p.untyped_storage().data_ptr()
                    if ptr:
                        self._storage.setdefault(ptr, q)
        return self._storage

    def facts(self, mid: int) -> tuple[Any, ...]:
        """(cls, builtin, num_params, params, extra_repr, attrs) of a module, read once (outside the mode)."""
        info = self.module_info.get(mid)
        if info is None:
            m = self.modules[mid]
            with torch._C.DisableTorchFunction():
                if self.lazy:
                    num = sum(p.numel() for p in m.parameters() if not is_uninitialized(p))
                else:
                    num = self.subtree.get(self.module_names[mid], 0)
                info = self.module_info[mid] = module_info(m, num)
        return info
