"""The recorder: what one forward pass did, from the function mode's queue and the global module hooks.

Per-op work during the pass is small (it runs between kernels that leave the caches cold): the function mode
(``mode.py``) queues each op with its calling frame's location; the module hooks note each call's start and
end (and a built-in module's call site, found once per call). ``flush`` records the queue in order, in one
loop: which node made each tensor input, the outputs' metadata (interned per shape, dtype, device), each
op kept as a raw tuple whose Node and Edges ``build.finish`` makes after the pass; module facts are read
after the pass too (``read_facts``). Tensors are mapped to the node that produced them through an id-keyed
dict whose entries hold a weak reference to the tensor (checked on lookup), so nothing is written onto the
user's tensors and nothing keeps them alive beyond the queue (flushed every few hundred events). An entry
also names the parameter the tensor is (or None), so an op's parameters are read from its inputs' entries.
"""

from __future__ import annotations

import dataclasses
import sys
import weakref
from threading import get_ident
from typing import Any

import torch

from torchvista_dash.frontends.trace.argnames import split as arg_split
from torchvista_dash.frontends.trace.cost import FlopMeter
from torchvista_dash.frontends.trace.describe import short_repr
from torchvista_dash.frontends.trace.facts import (
    FIRST_OUTS,
    METAS,
    NODE_IDS,
    ModelFacts,
    fast_factory,
    new_edge,
    new_node,
    node_ids,
    tensor_meta,
)
from torchvista_dash.frontends.trace.mode import _INFO, func_info
from torchvista_dash.frontends.trace.opaque import opaque_call, pass_through
from torchvista_dash.frontends.trace.sites import Sites
from torchvista_dash.frontends.trace.structure import flat_tensors
from torchvista_dash.frontends.trace.values import stats_of
from torchvista_dash.model.graph import ModuleCall, TensorMeta, call_id_for

_Tensor = torch.Tensor
_Script = torch.jit.ScriptModule
_SCALARS = (bool, int, float, type(None))
_SEQS = (list, tuple)
_ref = weakref.ref
Entry = tuple[Any, str, str, TensorMeta, str, "str | None"]


class Recorder(Sites):
    """Holds everything recorded during one forward pass of one model."""

    def __init__(
        self, model: torch.nn.Module, named: list[tuple[str, torch.nn.Module]] | None = None
    ) -> None:
        facts = ModelFacts(model, named)
        self.module_names = facts.module_names
        self.builtin = facts.builtin
        self.param_names = facts.param_names
        self.param_metas = facts.param_metas
        self.storage = facts.storage  # storage address -> parameter name, read on the first in-place op
        self.facts = facts.facts
        self.param_writes: dict[str, None] = {}  # parameters an in-place op wrote into (warned about)
        # Node/Edge objects, and for each op recorded raw its tuple in both lists until ``build.finish``
        self.nodes: list[Any] = []
        self.edges: list[Any] = []
        # id(tensor) -> (weakref to it, node id, tensor name "n:i/k", meta, text, the parameter it is or
        # None):
        # who holds its value now
        self.producer: dict[int, Entry] = {}
        # (id(parameter), innermost call) -> the same entry for that call's node of the parameter
        self.param_nodes: dict[tuple[int, str | None], Entry] = {}
        self.calls: list[
            tuple[str, str, int, str | None, int, int]
        ] = []  # id, qualname, module, parent, k, depth
        # During the pass: events not recorded yet (see ``mode.py``), the bytes of outputs they hold, and the
        # open calls' sites (``Sites.source``). In ``flush``: the open calls, their sites and node counts.
        self.queue: list[tuple[Any, ...]] = []
        self.held = 0
        self.sites: list[Any] = []
        self.stack: list[str] = []
        self.call_sites: list[Any] = []
        self.starts: list[int] = []  # per open call: how many nodes there were when it began
        self.call_counts: dict[str, int] = {}
        self.code_cache: dict[int, tuple[Any, str | None]] = {}
        self.sizes: dict[int, tuple[Any, str]] = {}
        self.failed_ops: list[tuple[Any, ...]] = []
        self.failed_exits: list[tuple[str, BaseException]] = []
        self.meter: FlopMeter | None = None  # counts each op's FLOPs when set (cost.py)
        # summarises an op's outputs' values when set (values=True, values.py), called by the mode
        self.summarize: Any = None
        # Module hooks are process-wide: only calls made by the tracing thread belong to this trace.
        self.thread = get_ident()

    # ---- module hooks (during the pass) -------------------------------------------------
    def pre_hook(self, module: torch.nn.Module, args: Any) -> None:
        mid = id(module)
        # a module outside the traced model (its ops belong to the caller), or another thread's call
        if mid not in self.module_names or get_ident() != self.thread:
            return
        # Ops inside a built-in module run in torch code: their user-code location is where the module was
        # called. Find it once per call here rather than by a long walk for every op (see ``Sites.source``).
        site = self._walk(sys._getframe(1))[0] if self.builtin[mid] else None
        self.sites.append(site)
        self.queue.append((1, module, site))

    def post_hook(self, module: torch.nn.Module, args: Any, result: Any) -> None:
        if id(module) not in self.module_names or not self.sites or get_ident() != self.thread:
            return
        self.sites.pop()
        # called from _call_impl's except block when forward raised: the exception is the one being handled
        self.queue.append((2, module, args, result, sys.exc_info()[1] if result is None else None))

    # ---- recording the queue -----------------------------------------------------------
    def flush(self) -> None:
        """Record the queued events in order (called by the mode, with torch functions not intercepted, and
        after the pass)."""
        queue = self.queue
        if not queue:
            return
        self.queue = []
        self.held = 0
        record = self.record
        for ev in queue:
            kind = ev[0]
            if kind == 0:
                record(ev[1], ev[2], ev[3], ev[4], ev[5], ev[6], ev[7], ev[8], ev[9])
            elif kind == 1:
                self._enter(ev[1], ev[2])
            elif kind == 2:
                self._exit(ev[1], ev[2], ev[3], ev[4])
            else:
                self.note_size(ev[1], ev[2])

    def _enter(self, module: torch.nn.Module, site: Any) -> None:
        mid = id(module)
        qualname = self.module_names[mid]
        k = self.call_counts.get(qualname, 0)
        self.call_counts[qualname] = k + 1
        cid = call_id_for(qualname, k)
        stack = self.stack
        # the open calls are exactly this call's ancestors, so their number is its depth
        self.calls.append((cid, qualname, mid, stack[-1] if stack else None, k, len(stack)))
        stack.append(cid)
        self.call_sites.append(site)
        self.starts.append(len(self.nodes))

    def _exit(self, module: torch.nn.Module, args: Any, result: Any, exc: BaseException | None) -> None:
        cid = self.stack.pop()
        site = self.call_sites.pop()
        if exc is not None:
            self.failed_exits.append((cid, exc))
        if self.starts.pop() == len(self.nodes) and result is not None:
            if isinstance(module, _Script):
                opaque_call(self, cid, site, module, args, result)
            else:
                pass_through(self, cid, site, result)

    def lookup(self, t: torch.Tensor, parent: str | None) -> Entry:
        """The producer entry (weak reference, node id, tensor name, meta, text, parameter) of the value ``t``
        holds now; parameters/constants get a node on first use.

        A parameter (or buffer) gets one node in each innermost call that reads it: it belongs to its module,
        not to the first call that used it, so calls sharing a weight (a module called twice, a tied
        embedding) are never joined by an edge that carries it.
        """
        e = self.producer.get(id(t))
        if e is not None and e[0]() is t:
            return e
        q = self.param_names.get(id(t))
        if q is not None:
            key = (id(t), parent)
            e = self.param_nodes.get(key)
            if e is not None and e[0]() is t:
                return e
        meta, text, outputs = self.param_metas.get(id(t)) or tensor_meta(t)
        nid, tname = node_ids(len(self.nodes))
        # its Node is made by ``build.finish``; a constant's values are summarised (a parameter's are weights)
        summary = None if self.summarize is None or q is not None else self.summarize(t)
        self.nodes.append((nid, q, parent, outputs, summary))
        entry = (_ref(t), nid, tname, meta, text, q)
        if q is None:
            self.producer[id(t)] = entry
        else:
            self.param_nodes[key] = entry
        return entry

    def add_input(self, name: str, t: torch.Tensor) -> None:
        """An input node; one tensor passed under several names is one node named ``a, b``."""
        e = self.producer.get(id(t))
        if e is not None and e[0]() is t:
            idx = int(e[1][2:])
            node = self.nodes[idx]
            if type(node) is not tuple and node.kind == "input":
                self.nodes[idx] = dataclasses.replace(node, name=f"{node.name}, {name}")
                return
        meta, text, _ = tensor_meta(t)
        nid, tname = node_ids(len(self.nodes))
        self.nodes.append(
            new_node(
                {
                    "id": nid,
                    "kind": "input",
                    "name": name,
                    "parent": None,
                    "error": None,
                    "args": (),
                    "source": None,
                    "params": (),
                    "outputs": (meta,),
                    "values": () if self.summarize is None else tuple(map(stats_of, self.summarize(t))),
                }
            )
        )
        self.producer[id(t)] = (_ref(t), nid, tname, meta, text, self.param_names.get(id(t)))

    def add_output(self, name: str, t: torch.Tensor) -> None:
        e = self.lookup(t, None)
        nid = node_ids(len(self.nodes))[0]
        self.nodes.append(
            new_node(
                {
                    "id": nid,
                    "kind": "output",
                    "name": name,
                    "parent": None,
                    "error": None,
                    "args": (),
                    "source": None,
                    "params": (),
                    "outputs": (e[3],),
                }
            )
        )
        self.edges.append(new_edge({"src": e[1], "dst": nid, "tensor": e[2], "meta": e[3], "dst_arg": 0}))

    def record(
        self,
        func: Any,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        out: Any,
        error: BaseException | None = None,
        flops: int = 0,
        source: Any = None,
        info: tuple[Any, ...] | None = None,
        summary: Any = None,
    ) -> None:
        """One op: which node made each tensor input, its outputs' metadata; its outputs are now produced by
        it.

        Kept as a raw tuple (id, name, parent, argument names, values, source, outputs, FLOPs, the outputs'
        value summary) whose Node and
        Edges ``build.finish`` makes after the pass: a value is a tensor's producer entry, a list of them (and
        texts) for a list holding tensors, a plain scalar, or the text of anything else. An op that raised is
        kept aside: it becomes a node only if its exception ends the pass.
        """
        if info is None:  # a rejected call's (``failed.py``): its facts are not kept
            try:
                info = _INFO[func]
            except (KeyError, TypeError):
                info = func_info(func, False)
        stack = self.stack
        parent = stack[-1] if stack else None
        producer = self.producer
        names, given = arg_split(info[3], args, kwargs)
        values: list[Any] = []
        for a in given:
            if isinstance(a, _Tensor):
                e = producer.get(id(a))
                if e is None or e[0]() is not a:
                    e = self.lookup(a, parent)
                values.append(e)
            elif type(a) in _SCALARS:
                values.append(a)  # immutable: its repr is taken by ``build.finish``
            elif type(a) in _SEQS and a and any(isinstance(x, _Tensor) for x in a):
                values.append(
                    [
                        self.lookup(x, parent) if isinstance(x, _Tensor) else short_repr(x, self.sizes)
                        for x in a
                    ]
                )
            else:
                values.append(short_repr(a, self.sizes))
        if error is not None:
            self.failed_ops.append((info[0], parent, source, names, values, error))
            return
        in_place = info[1] or "out" in kwargs
        if in_place and args and isinstance(args[0], _Tensor):
            self.note_write(args[0])
        if out is None and info[2] and args and isinstance(args[0], _Tensor):
            out, in_place = args[0], True
        nodes = self.nodes
        i = len(nodes)  # after its parameter/constant inputs: ids stay in topological order
        try:
            nid = NODE_IDS[i]
            tname = FIRST_OUTS[i]
        except IndexError:
            nid, tname = node_ids(i)
        pnames = self.param_names
        if isinstance(out, _Tensor):  # the common case: one tensor out
            m = METAS.get((out.shape, out.dtype, out.device))  # a torch.Size hashes and compares as its tuple
            if m is None:
                m = tensor_meta(out)
            outputs: tuple[TensorMeta, ...] = m[2]
            # An op that hands back a parameter it was given, unchanged (p.to(same dtype)), does not take
            # over the parameter: later users still connect to the parameter node. Activations chain through.
            if in_place:
                producer[id(out)] = (_ref(out), nid, tname, m[0], m[1], pnames.get(id(out)))
            elif id(out) not in pnames:
                producer[id(out)] = (_ref(out), nid, tname, m[0], m[1], None)
        else:
            metas: list[TensorMeta] = []
            for k, t in enumerate(flat_tensors(out)):
                m = METAS.get((t.shape, t.dtype, t.device))
                if m is None:
                    m = tensor_meta(t)
                metas.append(m[0])
                if in_place or id(t) not in pnames:
                    producer[id(t)] = (_ref(t), nid, f"{nid}/{k}", m[0], m[1], pnames.get(id(t)))
            outputs = tuple(metas)
        # The op's Node and Edges are made after the forward pass (``build.finish``), in one tight loop:
        # between two ops of a big model the caches are cold, so work done here costs several times what it
        # costs there.
        raw = (nid, info[0], parent, names, values, source, outputs, flops, summary)
        nodes.append(raw)
        self.edges.append(raw)

    def note_write(self, t: torch.Tensor) -> None:
        """An in-place op wrote into ``t``: if that is a parameter's storage (``weight.data.fill_``, a view of
        a weight), remember the parameter; its version counter does not always tell."""
        try:
            ptr = t.untyped_storage().data_ptr()
        except (RuntimeError, NotImplementedError):  # tensors without a plain storage
            return
        q = self.storage().get(ptr)
        if q is not None:
            self.param_writes[q] = None

    def note_size(self, args: tuple[Any, ...], out: Any) -> None:
        """Remember where a torch.Size came from so the op that uses it can say so in its details."""
        if args and isinstance(args[0], _Tensor):
            e = self.producer.get(id(args[0]))
            if e is not None and e[0]() is args[0]:
                self.sizes[id(out)] = (out, e[1])

    # ---- result ------------------------------------------------------------------------
    def read_facts(self) -> None:
        """Read each called module's static facts, right after the forward pass (before the model is
        restored):
        lazy modules have materialised; read here, in one loop, rather than between two ops of the pass."""
        facts = self.facts
        for c in self.calls:
            facts(c[2])

    def build_calls(self, failed: set[str]) -> list[ModuleCall]:
        out = []
        new_call = fast_factory(ModuleCall)
        for cid, qualname, module, parent, k, depth in self.calls:
            cls, builtin, num_params, params, extra, attrs = self.facts(module)
            out.append(
                new_call(
                    {
                        "id": cid,
                        "qualname": qualname,
                        "cls": cls,
                        "parent": parent,
                        "call_index": k,
                        "num_params": num_params,
                        "params": params,
                        "extra_repr": extra,
                        "attrs": attrs,
                        "failed": cid in failed,
                        "depth": depth,
                        "builtin": builtin,
                    }
                )
            )
        return out
