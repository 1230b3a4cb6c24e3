"""The recorder: a TorchFunctionMode plus global module hooks that write down one forward pass.

Per-op work is kept small (it runs for every torch call): no ``inspect.stack()``, no string building
for tensors (their metadata is formatted once, in ``finalize``), caches keyed by function and code object.
Tensors are mapped to the node that produced them through an id-keyed dict whose entries hold a weak
reference to the tensor (checked on lookup), so nothing is written onto the user's tensors and nothing
keeps them alive.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import threading
import weakref
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

from ..graph import ModuleCall, ParamInfo, TensorMeta, call_id_for
from .describe import (
    IN_PLACE_NONE_RETURN,
    dtype_name,
    func_name,
    short_repr,
    source_path,
)

_TORCH_DIR = os.path.dirname(torch.__file__) + os.sep
_PKG_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_Tensor = torch.Tensor
_SCALARS = (bool, int, float, type(None))
_SEQS = (list, tuple)


class NodeRec:
    """A node while recording (mutable; frozen into ``graph.Node`` by ``finalize``)."""

    __slots__ = ("kind", "name", "parent", "error", "args", "source", "params", "outputs")

    def __init__(self, kind: str, name: str, parent: str | None, source: str | None = None) -> None:
        self.kind = kind
        self.name = name
        self.parent = parent
        self.error: str | None = None
        self.args: list[tuple[str, Any]] = []
        self.source = source
        self.params: list[str] = []
        self.outputs: list[TensorMeta] = []


class Recorder:
    """Holds everything recorded during one forward pass of one model."""

    def __init__(self, model: torch.nn.Module) -> None:
        self.module_names = {id(m): q for q, m in model.named_modules()}
        self.param_names: dict[int, str] = {}
        self.subtree_params: dict[str, int] = {}     # qualname -> parameters in its subtree (shared ones once)
        for q, p in model.named_parameters():
            self.param_names[id(p)] = q
            n = p.numel()
            parts = q.split(".")
            for i in range(len(parts)):
                prefix = ".".join(parts[:i])
                self.subtree_params[prefix] = self.subtree_params.get(prefix, 0) + n
        for q, b in model.named_buffers():
            self.param_names.setdefault(id(b), q)
        self.nodes: list[NodeRec] = []
        # (src index, src output index, dst index, meta, dst_arg)
        self.edges: list[tuple[int, int, int, TensorMeta, int]] = []
        self.producer: dict[int, tuple[Any, int, int, TensorMeta]] = {}
        self.calls: list[dict[str, Any]] = []
        self.stack: list[str] = []
        self.call_counts: dict[str, int] = {}
        # Static facts about each module, read here, outside the function mode (inside it every .shape
        # would be dispatched through __torch_function__).
        self.module_info = {id(m): _module_info(m, self.subtree_params.get(q, 0)) for q, m in model.named_modules()}
        self.code_cache: dict[Any, str | None] = {}
        self.sizes: dict[int, tuple[Any, int]] = {}
        self.failed_ops: list[tuple[int, BaseException]] = []
        self.failed_exits: list[tuple[str, BaseException]] = []
        self._call_index: dict[str, int] = {}
        self.busy = False
        # Module hooks are process-wide: only calls made by the tracing thread belong to this trace.
        self.thread = threading.get_ident()

    # ---- module hooks ------------------------------------------------------------------
    def pre_hook(self, module: torch.nn.Module, args: Any) -> None:
        qualname = self.module_names.get(id(module))
        # a module outside the traced model (its ops belong to the caller), or another thread's call
        if qualname is None or threading.get_ident() != self.thread:
            return
        k = self.call_counts.get(qualname, 0)
        self.call_counts[qualname] = k + 1
        cid = call_id_for(qualname, k)
        parent = self.stack[-1] if self.stack else None
        depth = self.calls[self._call_index[parent]]["depth"] + 1 if parent is not None else 0
        self._call_index[cid] = len(self.calls)
        self.calls.append({"id": cid, "qualname": qualname, "module": id(module), "parent": parent,
                           "call_index": k, "depth": depth})
        self.stack.append(cid)

    def post_hook(self, module: torch.nn.Module, args: Any, result: Any) -> None:
        if id(module) not in self.module_names or not self.stack or threading.get_ident() != self.thread:
            return
        cid = self.stack.pop()
        exc = sys.exc_info()[1]
        if result is None and exc is not None:    # called from _call_impl's except block: forward raised
            self.failed_exits.append((cid, exc))

    # ---- ops ---------------------------------------------------------------------------
    def source(self) -> str | None:
        """file:line of the innermost frame outside torch and this package (cached per code object)."""
        f = sys._getframe(2)
        cache = self.code_cache
        while f is not None:
            code = f.f_code
            try:
                where = cache[code]
            except KeyError:
                fn = code.co_filename
                where = None if (fn.startswith(_TORCH_DIR) or fn.startswith(_PKG_DIR) or fn.startswith("<frozen")) \
                    else source_path(fn)
                cache[code] = where
            if where is not None:
                return f"{where}:{f.f_lineno}"
            f = f.f_back
        return None

    def lookup(self, t: torch.Tensor, parent: str | None) -> tuple[int, int, TensorMeta]:
        """The (node, output index, meta) currently holding ``t``; parameters/constants get a node on first use."""
        e = self.producer.get(id(t))
        if e is not None and e[0]() is t:
            return e[1], e[2], e[3]
        q = self.param_names.get(id(t))
        rec = NodeRec("parameter" if q is not None else "constant", q if q is not None else "constant", parent)
        if q is not None:
            rec.params.append(q)
        meta = tensor_meta(t)
        rec.outputs.append(meta)
        idx = len(self.nodes)
        self.nodes.append(rec)
        self.producer[id(t)] = (weakref.ref(t), idx, 0, meta)
        return idx, 0, meta

    def add_input(self, name: str, t: torch.Tensor) -> None:
        """An input node; one tensor passed under several names is one node named ``a, b``."""
        e = self.producer.get(id(t))
        if e is not None and e[0]() is t and self.nodes[e[1]].kind == "input":
            self.nodes[e[1]].name += ", " + name
            return
        rec = NodeRec("input", name, None)
        meta = tensor_meta(t)
        rec.outputs.append(meta)
        self.producer[id(t)] = (weakref.ref(t), len(self.nodes), 0, meta)
        self.nodes.append(rec)

    def add_output(self, name: str, t: torch.Tensor) -> None:
        src, out, meta = self.lookup(t, None)
        rec = NodeRec("output", name, None)
        rec.outputs.append(meta)
        idx = len(self.nodes)
        self.nodes.append(rec)
        self.edges.append((src, out, idx, meta, 0))

    def record(self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any], out: Any,
               error: BaseException | None = None) -> None:
        """One op node: its tensor inputs become edges, its tensor outputs are now produced by it."""
        name = func_name(func)
        stack = self.stack
        parent = stack[-1] if stack else None
        rec = NodeRec("op", name, parent, self.source())
        pnames = self.param_names
        rargs = rec.args
        inputs: list[int] = []       # ids of tensor inputs (to tell aliasing outputs from new ones)
        pending: list[tuple[int, int, TensorMeta, int]] = []
        pos = 0
        for key, a in _items(args, kwargs):
            if isinstance(a, _Tensor):
                src, o, meta = self.lookup(a, parent)
                pending.append((src, o, meta, pos))
                rargs.append((key, meta))
                inputs.append(id(a))
                if id(a) in pnames:
                    rec.params.append(pnames[id(a)])
            elif type(a) in _SCALARS:
                rargs.append((key, repr(a)))
            elif type(a) in _SEQS and a and any(isinstance(x, _Tensor) for x in a):
                parts: list[Any] = []
                for x in a:
                    if isinstance(x, _Tensor):
                        src, o, meta = self.lookup(x, parent)
                        pending.append((src, o, meta, pos))
                        parts.append(meta)
                        inputs.append(id(x))
                        if id(x) in pnames:
                            rec.params.append(pnames[id(x)])
                    else:
                        parts.append(short_repr(x, self.sizes))
                rargs.append((key, parts))
            else:
                rargs.append((key, short_repr(a, self.sizes)))
            pos += 1
        idx = len(self.nodes)        # after its parameter/constant inputs: ids stay in topological order
        self.nodes.append(rec)
        edges = self.edges
        for src, o, meta, p in pending:
            edges.append((src, o, idx, meta, p))
        if error is not None:
            rec.error = f"{type(error).__name__}: {error}"
            self.failed_ops.append((idx, error))
            return
        in_place = (name[-1] == "_" and name[0] != "_") or name.startswith("__i") or "out" in kwargs
        if out is None and name in IN_PLACE_NONE_RETURN and args and isinstance(args[0], _Tensor):
            out, in_place = args[0], True
        if isinstance(out, _Tensor):
            self._produce(rec, idx, 0, out, in_place, inputs)
        else:
            for i, t in enumerate(_flat_tensors(out)):
                self._produce(rec, idx, i, t, in_place, inputs)

    def _produce(self, rec: NodeRec, idx: int, i: int, t: torch.Tensor, in_place: bool, inputs: list[int]) -> None:
        meta = tensor_meta(t)
        rec.outputs.append(meta)
        key = id(t)
        # An op that hands back one of its (parameter) inputs unchanged (p.to(same dtype)) does not take over
        # the parameter: later users still connect to the parameter node. Activations chain through it.
        if not in_place and key in self.param_names and key in inputs:
            return
        self.producer[key] = (weakref.ref(t), idx, i, meta)

    def note_size(self, args: tuple[Any, ...], out: Any) -> None:
        """Remember where a torch.Size came from so the op that uses it can say so in its details."""
        if type(out) is torch.Size and args and isinstance(args[0], _Tensor):
            e = self.producer.get(id(args[0]))
            if e is not None and e[0]() is args[0]:
                self.sizes[id(out)] = (out, e[1])

    # ---- result ------------------------------------------------------------------------
    def build_calls(self, failed: set[str]) -> list[ModuleCall]:
        out = []
        new_call = fast_factory(ModuleCall)
        for c in self.calls:
            cls, builtin, num_params, params, extra, attrs = self.module_info[c["module"]]
            out.append(new_call({
                "id": c["id"], "qualname": c["qualname"], "cls": cls, "parent": c["parent"],
                "call_index": c["call_index"], "num_params": num_params, "params": params, "extra_repr": extra,
                "attrs": attrs, "failed": c["id"] in failed, "depth": c["depth"], "builtin": builtin,
            }))
        return out


class RecordingMode(TorchFunctionMode):
    """Sends every torch function, Tensor method and operator call to the recorder (outermost call only)."""

    def __init__(self, recorder: Recorder) -> None:
        super().__init__()
        self.rec = recorder

    def __torch_function__(self, func: Any, types: Any, args: tuple[Any, ...] = (),
                           kwargs: dict[str, Any] | None = None) -> Any:
        if kwargs is None:
            kwargs = {}
        rec = self.rec
        if rec.busy:                        # a torch call made while handling another one: not a node
            return func(*args, **kwargs)
        rec.busy = True
        try:
            try:
                out = func(*args, **kwargs)
            except Exception as exc:
                rec.record(func, args, kwargs, None, error=exc)
                raise
            if isinstance(out, _Tensor):
                rec.record(func, args, kwargs, out)
            elif out is None:
                if args and isinstance(args[0], _Tensor) and func_name(func) in IN_PLACE_NONE_RETURN:
                    rec.record(func, args, kwargs, out)
            elif type(out) is torch.Size:
                rec.note_size(args, out)
            elif isinstance(out, _SEQS) and _flat_tensors(out):
                rec.record(func, args, kwargs, out)
            return out
        finally:
            rec.busy = False


# ---- helpers --------------------------------------------------------------------------------------
_POS = tuple(str(i) for i in range(64))


def _items(args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[tuple[str, Any]]:
    if len(args) <= 64:
        items = list(zip(_POS, args, strict=False))
    else:
        items = [(str(i), a) for i, a in enumerate(args)]
    if kwargs:
        items.extend(kwargs.items())
    return items


def _flat_tensors(obj: Any) -> list[torch.Tensor]:
    if isinstance(obj, _Tensor):
        return [obj]
    if isinstance(obj, (list, tuple)):
        out: list[torch.Tensor] = []
        for x in obj:
            out.extend(_flat_tensors(x))
        return out
    return []


_METAS: dict[tuple[Any, ...], TensorMeta] = {}


def tensor_meta(t: torch.Tensor) -> TensorMeta:
    """The (shared, immutable) TensorMeta of ``t``; interned because most shapes repeat."""
    key = (tuple(t.shape), t.dtype, t.device)
    m = _METAS.get(key)
    if m is None:
        if len(_METAS) > 50_000:
            _METAS.clear()
        dt = key[1]
        m = _METAS[key] = TensorMeta(shape=key[0], dtype=dtype_name(dt), device=str(key[2]),
                                     nbytes=t.numel() * dt.itemsize)
    return m


def _module_info(m: torch.nn.Module, num_params: int) -> tuple[Any, ...]:
    """(cls, builtin, num_params, params, extra_repr, attrs): static facts about a module, computed once."""
    cls = type(m)
    builtin = cls.__module__.startswith("torch.nn.")
    params = tuple(
        _new_param({"name": n, "shape": tuple(p.shape), "dtype": dtype_name(p.dtype), "trainable": p.requires_grad,
                    "is_buffer": False})
        for n, p in m._parameters.items() if p is not None
    ) + tuple(
        _new_param({"name": n, "shape": tuple(b.shape), "dtype": dtype_name(b.dtype), "trainable": False,
                    "is_buffer": True})
        for n, b in m._buffers.items() if b is not None
    )
    try:
        extra = m.extra_repr()
    except Exception:  # a broken extra_repr must not break the trace
        extra = ""
    if len(extra) > 200:
        extra = extra[:197] + "..."
    attrs: list[tuple[str, str]] = []
    for k, v in m.__dict__.items():
        if k.startswith("_") or k == "training":
            continue
        if isinstance(v, (bool, int, float)) or (isinstance(v, str) and len(v) <= 40):
            attrs.append((k, repr(v)))
        elif isinstance(v, tuple) and len(v) <= 4 and all(isinstance(x, (int, float, bool)) for x in v):
            attrs.append((k, repr(v)))
        if len(attrs) >= 12:
            break
    return cls.__name__, builtin, num_params, params, extra, tuple(attrs)


def fast_factory(cls: type) -> Any:
    """A fast constructor for a frozen dataclass, given all its fields as a dict.

    ``__init__`` of a frozen dataclass sets each field through ``object.__setattr__``; filling ``__dict__``
    directly is several times faster, which matters for thousands of nodes. Only used when ``cls`` has no
    ``__post_init__`` and no ``__slots__`` and the dict names every field, so the object is the same as
    ``cls(**fields)`` (the JSON round-trip tests compare them); otherwise it falls back to ``cls(**fields)``.
    """
    n_fields = len(dataclasses.fields(cls))
    if hasattr(cls, "__post_init__") or "__slots__" in cls.__dict__:
        return lambda fields: cls(**fields)
    new = object.__new__

    def make(fields: dict[str, Any]) -> Any:
        if len(fields) != n_fields:
            return cls(**fields)
        obj = new(cls)
        obj.__dict__.update(fields)
        return obj

    return make


_new_param = fast_factory(ParamInfo)
