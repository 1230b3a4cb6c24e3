"""Module calls that run no recorded op but hand tensors on: they still get one node, so they have a box.

A call that returns tensors it was given (``nn.Identity``, a drop-path at rate 0) passes them through an
``identity`` node. A TorchScript module runs its ops in the TorchScript interpreter, out of the recorder's
sight: it becomes one opaque op node from the tensors it was given to the tensors it returned.
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any

from torchvista_dash.frontends.trace.facts import new_edge, new_node, tensor_meta
from torchvista_dash.frontends.trace.sites import line_text
from torchvista_dash.frontends.trace.structure import flat_tensors
from torchvista_dash.model.graph import TensorMeta

if TYPE_CHECKING:  # pragma: no cover - typing only
    from torchvista_dash.frontends.trace.recorder import Recorder


def opaque_call(rec: Recorder, cid: str, site: Any, module: Any, args: Any, result: Any) -> None:
    """A TorchScript module runs its ops in the TorchScript interpreter, out of the recorder's sight: it
    gets one op node from the tensors it was given to the tensors it returned."""
    name = f"{getattr(module, 'original_name', None) or type(module).__name__} (TorchScript)"
    rargs: list[tuple[str, str]] = []
    pending: list[tuple[str, str, TensorMeta, int]] = []
    for i, t in enumerate(flat_tensors(list(args))):
        _, src, tname, meta, text, _ = rec.lookup(t, cid)
        pending.append((src, tname, meta, i))
        rargs.append((str(i), text))
    nid = f"n:{len(rec.nodes)}"
    metas: list[TensorMeta] = []
    for i, t in enumerate(flat_tensors(result)):
        meta, text, _ = tensor_meta(t)
        metas.append(meta)
        rec.producer[id(t)] = (weakref.ref(t), nid, f"{nid}/{i}", meta, text, rec.param_names.get(id(t)))
    rec.nodes.append(
        new_node(
            {
                "id": nid,
                "kind": "op",
                "name": name,
                "parent": cid,
                "error": None,
                "args": tuple(rargs),
                "source": line_text(site),
                "params": (),
                "outputs": tuple(metas),
            }
        )
    )
    for src, tname, meta, p in pending:
        rec.edges.append(new_edge({"src": src, "dst": nid, "tensor": tname, "meta": meta, "dst_arg": p}))


def pass_through(rec: Recorder, cid: str, site: Any, result: Any) -> None:
    """A call that ran no op but returned tensors it was given (``nn.Identity``, a drop-path at rate 0)
    gets one node that hands them on, so the call has a box and the tensors visibly pass through it."""
    seen: set[int] = set()
    got: list[tuple[Any, tuple[Any, ...]]] = []
    for t in flat_tensors(result):
        e = rec.producer.get(id(t))
        if e is not None and e[0]() is t and id(t) not in seen:
            seen.add(id(t))
            got.append((t, e))
    if not got:
        return
    nid = f"n:{len(rec.nodes)}"
    rec.nodes.append(
        new_node(
            {
                "id": nid,
                "kind": "op",
                "name": "identity",
                "parent": cid,
                "error": None,
                "args": tuple((str(i), e[4]) for i, (_, e) in enumerate(got)),
                "source": line_text(site),
                "params": (),
                "outputs": tuple(e[3] for _, e in got),
            }
        )
    )
    for i, (t, e) in enumerate(got):
        rec.edges.append(new_edge({"src": e[1], "dst": nid, "tensor": e[2], "meta": e[3], "dst_arg": i}))
        rec.producer[id(t)] = (e[0], nid, f"{nid}/{i}", e[3], e[4], e[5])
