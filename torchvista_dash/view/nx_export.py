"""A traced Graph as a ``networkx.MultiDiGraph``, for analysis with the networkx toolbox.

``depth=None`` gives every recorded node; ``depth=k`` opens the calls ``Trace.view(depth=k)`` opens (the
view's own rule, ``view.build.make_spec``: a call of depth d is open iff d < k and it is not a built-in
torch.nn module, except the model's root, which always opens), without folding repeats: every closed call
becomes one node of kind ``module`` and the edges that remain are the tensors crossing its boundary (one edge
per tensor and endpoint pair). networkx is an optional extra (``pip install torchvista_dash[networkx]``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from torchvista_dash.model.graph import Graph
from torchvista_dash.model.options import check_depth
from torchvista_dash.view.build import make_spec

if TYPE_CHECKING:  # pragma: no cover - typing only
    import networkx


def _import_networkx() -> Any:
    try:
        import networkx
    except ImportError:  # pragma: no cover - depends on the environment
        raise ImportError(
            "Trace.to_networkx needs networkx: pip install 'torchvista_dash[networkx]' "
            "(or pip install networkx)"
        ) from None
    return networkx


def representative(graph: Graph, depth: int | None) -> dict[str | None, str | None]:
    """Call id (or None) → the id of the outermost closed call enclosing it, or None if every one is open."""
    opened = make_spec(graph, depth=depth, fold_repeats=False).expanded
    rep: dict[str | None, str | None] = {None: None}
    for c in graph.module_calls:  # parents are recorded before their children
        outer = rep.get(c.parent)
        rep[c.id] = outer if outer is not None else (None if c.id in opened else c.id)
    return rep


def to_networkx(graph: Graph, depth: int | None = None) -> networkx.MultiDiGraph:
    """Every op as a node (``depth=None``), or each module call at/below ``depth`` collapsed into one node."""
    nx = _import_networkx()
    check_depth(depth)
    rep = representative(graph, depth)
    g = nx.MultiDiGraph(model_name=graph.model_name, depth=depth, failed=graph.error is not None)
    calls = graph.call_by_id
    endpoint: dict[str, str] = {}
    for n in graph.nodes:
        closed = rep[n.parent]
        if closed is not None:
            endpoint[n.id] = closed
            if closed not in g:
                c = calls[closed]
                g.add_node(
                    closed,
                    kind="module",
                    label=f"{c.name}: {c.cls}",
                    qualname=c.qualname,
                    cls=c.cls,
                    error=_call_error(graph, c.id) if c.failed else None,
                    call_index=c.call_index,
                    depth=c.depth,
                    num_params=c.num_params,
                )
            continue
        endpoint[n.id] = n.id
        parent = calls[n.parent] if n.parent is not None else None
        g.add_node(
            n.id,
            kind=n.kind,
            label=n.name,
            qualname=parent.qualname if parent else None,
            cls=parent.cls if parent else None,
            error=n.error,
            source=n.source,
            parent=n.parent,
            shapes=tuple(m.shape for m in n.outputs),
        )
    seen: set[tuple[str, str, str]] = set()
    for e in graph.edges:
        u, v = endpoint[e.src], endpoint[e.dst]
        if u == v and u != e.src:  # inside one collapsed call
            continue
        if u != e.src or v != e.dst:  # re-routed: one edge per tensor crossing a boundary
            if (u, v, e.tensor) in seen:
                continue
            seen.add((u, v, e.tensor))
        g.add_edge(
            u,
            v,
            key=None,
            tensor=e.tensor,
            shape=tuple(e.meta.shape),
            dtype=e.meta.dtype,
            device=e.meta.device,
            nbytes=e.meta.nbytes,
        )
    return g


def _call_error(graph: Graph, call_id: str) -> str:
    err = graph.error
    if err is None:
        return "failed"
    return f"{err.type}: {err.message}"
