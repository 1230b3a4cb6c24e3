"""The op whose exception ended the forward pass: it becomes a node (with its inputs' edges) afterwards.

Ops that raised are kept aside by the recorder (``Recorder.failed_ops``): a model may catch an op's
exception and go on, and such an op leaves no node. Only the one the pass ended with is drawn, marked.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from torchvista_dash.frontends.trace.build import op_edges, op_texts
from torchvista_dash.frontends.trace.facts import new_node, node_ids
from torchvista_dash.frontends.trace.sites import line_text

if TYPE_CHECKING:  # pragma: no cover - typing only
    from torchvista_dash.frontends.trace.recorder import Recorder


def failed_node(rec: Recorder, error: BaseException) -> str | None:
    """Add the node of the op whose exception ended the forward pass (if an op raised it); its id."""
    chosen = None
    for f in rec.failed_ops:
        if in_chain(f[-1], error):
            chosen = f
    if chosen is None:
        return None
    name, parent, source, names, values, exc = chosen
    nid = node_ids(len(rec.nodes))[0]
    args, params = op_texts(names, values)
    rec.nodes.append(
        new_node(
            {
                "id": nid,
                "kind": "op",
                "name": name,
                "parent": parent,
                "error": f"{type(exc).__name__}: {exc}",
                "args": args,
                "source": line_text(source),
                "params": params,
                "outputs": (),
            }
        )
    )
    rec.edges.extend(op_edges(nid, values))
    return nid


def record_rejected(rec: Recorder, call: Any, error: BaseException) -> str | None:
    """The node of a torch call that rejected its arguments before dispatch (see ``rejected``): recorded
    as ``record`` would have, inside the innermost call that the exception left, at the call's line."""
    parent = next((cid for cid, exc in rec.failed_exits if in_chain(exc, error)), None)
    if parent is not None:
        rec.stack.append(parent)
    try:
        rec.record(call, call.args, call.kwargs, None, error=error)
    finally:
        if parent is not None:
            rec.stack.pop()
    f = rec.failed_ops[-1]
    rec.failed_ops[-1] = (f[0], f[1], rec._walk(call.frame)[0], *f[3:])
    return failed_node(rec, error)


def in_chain(target: BaseException, exc: BaseException | None) -> bool:
    """Is ``target`` the exception ``exc`` or one it was raised from / while handling?"""
    seen = 0
    while exc is not None and seen < 50:
        if exc is target:
            return True
        exc = exc.__cause__ or exc.__context__
        seen += 1
    return False
