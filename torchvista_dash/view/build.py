"""Graph + expand state → VisibleGraph: what one view of a trace draws.

A view opens some module calls (clusters) and shows every other call as one box; runs of identical
sibling calls (``GPT2Block`` ×12) fold into one box. A pinned member of a run is drawn on its own and splits
the fold around it (``GPT2Block`` ×7, h.7, ``GPT2Block`` ×4): that is how naming or searching one block
shows it without unfolding all twelve. Everything here is a pure function of the Graph and a ``ViewSpec``,
so the same view always gives the same VisibleGraph (which keys the layout cache).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from torchvista_dash.model.graph import Graph, ModuleCall, TensorMeta, tensor_shape_text
from torchvista_dash.model.options import DEFAULT_NODE_BUDGET, EVERYTHING, ViewOptions, check_depth
from torchvista_dash.view.iogroups import io_groups
from torchvista_dash.view.repeats import FOLD_PREFIX, HIDDEN_KINDS, Index, index_of
from torchvista_dash.view.types import Cluster, ViewSpec, VisibleEdge, VisibleGraph, VisibleNode, label_text

__all__ = [
    "DEFAULT_NODE_BUDGET",
    "FOLD_PREFIX",
    "auto_expanded",
    "build_view",
    "expand_to",
    "make_spec",
    "toggle",
    "view_of",
    "visible_id_of",
]


# ---- specs -----------------------------------------------------------------------------------
# Built-in containers hold the model's own modules: depth opens them like the model's own (a torchvision-style
# ResNet's layer1..layer4 are nn.Sequential: kept closed, its depth-2 view would be its depth-1 view)
CONTAINERS = frozenset({"Sequential"})


def auto_expanded(call: ModuleCall, depth: int | None) -> bool:
    """Whether ``depth`` alone opens ``call``: depth None opens everything; otherwise calls shallower than
    ``depth`` that are not built-in layers (``nn.Linear`` stays a box; an ``nn.Sequential`` opens, and the
    root call always does)."""
    if depth is None:
        return True
    return call.depth < depth and (not call.builtin or call.parent is None or call.cls in CONTAINERS)


def _resolve_calls(graph: Graph, names: Iterable[str], what: str) -> list[str]:
    out: list[str] = []
    for name in names:
        if name in graph.call_by_id:
            out.append(name)
        elif name in graph.calls_by_qualname:
            out.extend(c.id for c in graph.calls_by_qualname[name])
        else:
            known = sorted(set(graph.calls_by_qualname) | set(graph.call_by_id))
            close = difflib.get_close_matches(str(name), known, n=3, cutoff=0.5)
            hint = (
                f"; did you mean {', '.join(repr(c) for c in close)}?"
                if close
                else f"; module qualnames look like {', '.join(repr(k) for k in known[:4])}"
            )
            raise ValueError(
                f"unknown module {name!r} in {what}: not a module call id or qualname of "
                f"{graph.model_name or 'this model'}{hint}"
            )
    return out


def make_spec(
    graph: Graph,
    depth: int | None = 1,
    expanded: Iterable[str] | None = None,
    fold_repeats: bool = True,
    unfolded: Iterable[str] | None = None,
    show_params: bool = False,
) -> ViewSpec:
    """Build a ViewSpec: calls opened by ``depth`` plus ``expanded`` (call ids or qualnames).

    Naming a call in ``expanded`` also opens its ancestors and pins it (and any ancestor) that sits in a
    folded run, so the named call is really on screen while the rest of each run stays folded.
    """
    check_depth(depth)
    if isinstance(expanded, str) or isinstance(unfolded, str):
        raise TypeError(
            "expanded/unfolded take a collection of names, e.g. expanded={'encoder'}, not a string"
        )
    idx = index_of(graph)
    # Grouped inputs/outputs (iogroups.py) stay closed at every depth, depth None included: they are data,
    # not modules, and 64 cache tensors opened side by side squeeze the model. The user opens one by a click.
    opened = {c.id for c in graph.module_calls if auto_expanded(c, depth)}
    opened_folds: set[str] = set()
    pins: set[str] = set()
    for cid in _resolve_calls(graph, expanded or (), "expanded"):
        for c in idx.call_chain[cid]:
            opened.add(c)
            if c in idx.fold_of:
                pins.add(c)
    for name in unfolded or ():
        fid = name if name.startswith(FOLD_PREFIX) else FOLD_PREFIX + name
        if fid not in idx.runs:
            close = difflib.get_close_matches(fid, sorted(idx.runs), n=3, cutoff=0.5)
            raise ValueError(
                f"unknown folded group {name!r} in unfolded; folded groups of this graph: "
                f"{', '.join(repr(c) for c in (close or sorted(idx.runs)[:5])) or 'none'}"
            )
        opened_folds.add(fid)
    return ViewSpec(
        expanded=frozenset(opened),
        fold_repeats=bool(fold_repeats),
        unfolded=frozenset(opened_folds),
        show_params=bool(show_params),
        pinned=frozenset(pins),
    )


def expand_everything(graph: Graph, fold_repeats: bool = True, show_params: bool = False) -> ViewSpec:
    """What "Expand all" means: every call open and every folded run unfolded; grouped inputs/outputs stay
    one box each (see ``make_spec``)."""
    spec = make_spec(graph, depth=None, fold_repeats=fold_repeats, show_params=show_params)
    return replace(spec, unfolded=frozenset(index_of(graph).runs))


CUSTOM = "custom"  # the depth control's value when a view is no depth's view (after clicks, a search)


def depth_of(graph: Graph, spec: ViewSpec) -> int | str:
    """The depth control's entry for ``spec``: the depth whose view it is (-1: everything), else
    ``CUSTOM``."""
    opts: dict[str, Any] = {"fold_repeats": spec.fold_repeats, "show_params": spec.show_params}
    if spec in (expand_everything(graph, **opts), make_spec(graph, depth=None, **opts)):
        return EVERYTHING
    max_depth = max((c.depth for c in graph.module_calls), default=0)
    for d in range(max_depth + 1):
        if make_spec(graph, depth=d, **opts) == spec:
            return d
    return CUSTOM


# ---- building a view -------------------------------------------------------------------------
def _short_name(qualname: str) -> str:
    """The attribute name, with its container's name when it is a list index ("layers.5", not "5")."""
    parts = qualname.split(".")
    return ".".join(parts[-2:]) if parts[-1].isdigit() and len(parts) > 1 else parts[-1]


class _Reps:
    """Which visible box stands for each call under a spec: (box id, the call of the chain that is hidden)."""

    def __init__(self, graph: Graph, idx: Index, spec: ViewSpec) -> None:
        self.idx = idx
        self.spec = spec
        # member call → the folded box it is drawn in; pinned members split their run into pieces, and each
        # piece of two or more members folds under the id of its first member unless the user unfolded it
        self.fold_box: dict[str, str] = {}
        self.members: dict[str, tuple[str, ...]] = {}
        if spec.fold_repeats:
            for fid, run in idx.runs.items():
                if fid not in spec.unfolded:
                    for piece in _pieces(run, spec.pinned):
                        box = FOLD_PREFIX + piece[0]
                        if len(piece) >= 2 and box not in spec.unfolded:
                            self.members[box] = piece
                            self.fold_box.update(dict.fromkeys(piece, box))
        self._memo: dict[str, tuple[str, str] | None] = {}

    def of_call(self, cid: str) -> tuple[str, str] | None:
        """None if the call and all its ancestors are open (it is a cluster)."""
        if cid in self._memo:
            return self._memo[cid]
        rep = None
        for c in self.idx.call_chain[cid]:
            f = self.fold_box.get(c)
            if f is not None:
                rep = (f, c)
                break
            if c not in self.spec.expanded:
                rep = (c, c)
                break
        self._memo[cid] = rep
        return rep


def _pieces(run: tuple[str, ...], pinned: frozenset[str]) -> list[tuple[str, ...]]:
    """The run split at its pinned members (which are left out)."""
    out: list[tuple[str, ...]] = []
    cur: list[str] = []
    for m in run:
        if m in pinned:
            out.append(tuple(cur))
            cur = []
        else:
            cur.append(m)
    out.append(tuple(cur))
    return [p for p in out if p]


def _build(graph: Graph, spec: ViewSpec) -> VisibleGraph:
    idx = index_of(graph)
    reps = _Reps(graph, idx, spec)
    calls = graph.call_by_id
    vis: dict[str, VisibleNode] = {}
    node_rep: dict[str, tuple[str, str | None]] = {}  # node id → (visible box, hidden call standing in)
    io = io_groups(graph)
    open_io: list[str] = []
    for n in graph.nodes:
        r = reps.of_call(n.parent) if n.parent is not None else None
        gid = io.group_of.get(n.id)
        if gid is not None:  # a part of a structured input/output: its group's box, or in it
            if gid in spec.expanded:
                node_rep[n.id] = (n.id, None)
                vis[n.id] = VisibleNode(
                    n.id,
                    n.kind,
                    label_text(n.name),
                    gid,
                    sublabel=label_text(tensor_shape_text(n.outputs[0])),
                )
                if gid not in open_io:
                    open_io.append(gid)
            else:
                node_rep[n.id] = (gid, None)
                if gid not in vis:
                    grp = io.groups[gid]
                    vis[gid] = VisibleNode(
                        gid, "module", label_text(grp.label), None, sublabel=label_text(grp.sublabel)
                    )
            continue
        if r is None:
            node_rep[n.id] = (n.id, None)
            if n.kind in HIDDEN_KINDS and not spec.show_params:
                continue
            sub = tensor_shape_text(n.outputs[0]) if n.outputs else ""
            vis[n.id] = VisibleNode(
                n.id,
                n.kind,
                label_text(n.name),
                n.parent,
                sublabel=label_text(sub),
                failed=n.error is not None,
            )
            continue
        box, member = r
        node_rep[n.id] = (box, member)
        if box in vis:
            continue
        if box.startswith(FOLD_PREFIX):
            members = reps.members[box]
            first, last = calls[members[0]], calls[members[-1]]
            vis[box] = VisibleNode(
                box,
                "folded",
                label_text(f"{first.cls} ×{len(members)}"),
                first.parent,
                sublabel=label_text(f"{first.qualname} … {last.qualname}"),
                failed=any(calls[m].failed for m in members),
                count=len(members),
                members=members,
            )
        else:
            c = calls[box]
            label = f"{_short_name(c.qualname)}: {c.cls}" if c.qualname else c.cls
            if c.call_index:
                label += f" #{c.call_index}"
            vis[box] = VisibleNode(
                box, "module", label_text(label), c.parent, failed=c.failed, members=(box,)
            )

    carried: dict[tuple[str, str], dict[str, TensorMeta]] = {}
    kinds = {n.id: n.kind for n in graph.nodes}
    for e in graph.edges:
        if kinds[e.src] in HIDDEN_KINDS and not spec.show_params:
            continue
        # a folded run stands for all its members: every tensor crossing its boundary is drawn once (a mask
        # entering each block merges into one edge; per-block outputs such as KV caches stay connected)
        rs, rd = node_rep[e.src][0], node_rep[e.dst][0]
        if rs == rd or rs not in vis or rd not in vis:
            continue
        carried.setdefault((rs, rd), {}).setdefault(e.tensor, e.meta)
    edges = [_edge(rs, rd, tensors) for (rs, rd), tensors in carried.items()]

    used: set[str] = set()
    for v in vis.values():
        p = v.parent
        while p is not None and p not in used and p in calls:
            used.add(p)
            p = calls[p].parent
    clusters = tuple(
        Cluster(
            c.id,
            label_text(
                f"{c.qualname}: {c.cls}" + (f" #{c.call_index}" if c.call_index else "")
                if c.qualname  # a focused module (model/focus.py) is a root with its own name
                else c.cls
            ),
            c.parent,
            failed=c.failed,
        )
        for c in graph.module_calls
        if c.id in used
    ) + tuple(Cluster(g, label_text(io.groups[g].label), None) for g in open_io)
    return VisibleGraph(
        nodes=tuple(vis.values()), edges=tuple(edges), clusters=clusters, spec=spec, notes=graph.notes
    )


def _edge(src: str, dst: str, tensors: dict[str, TensorMeta]) -> VisibleEdge:
    """One edge for the tensors from ``src`` to ``dst``: its label is their shape, "×n" when there are
    several of one shape, or "n tensors"."""
    tensor, meta = next(iter(tensors.items()))
    shapes = {m.shape for m in tensors.values()}
    text = tensor_shape_text(meta)
    if len(tensors) > 1:
        text = f"{text} ×{len(tensors)}" if len(shapes) == 1 and text else f"{len(tensors)} tensors"
    return VisibleEdge(
        src,
        dst,
        tensor,
        meta,
        label=label_text(text),
        count=len(tensors),
        nbytes=sum(m.nbytes for m in tensors.values()),
    )


def _check_spec(graph: Graph, spec: ViewSpec) -> None:
    groups = io_groups(graph).groups
    unknown = sorted(c for c in spec.expanded if c not in graph.call_by_id and c not in groups)
    idx = index_of(graph)
    unknown += sorted(f for f in spec.unfolded if _run_member(idx, f) is None)
    unknown += sorted(c for c in spec.pinned if c not in idx.fold_of)
    if unknown:
        raise ValueError(
            f"this view names {len(unknown)} module call(s)/folded group(s) that "
            f"{graph.model_name or 'this graph'} does not have, e.g. {unknown[0]!r}: was the spec made "
            f"for another trace? "
            f"Build specs with make_spec(graph, ...)"
        )


check_spec = _check_spec  # public: a ValueError naming the first id of ``spec`` that ``graph`` lacks


def build_view(graph: Graph, spec: ViewSpec, node_budget: int | None = None) -> VisibleGraph:
    """The VisibleGraph of ``spec``. Over ``node_budget`` boxes (default 50,000), the deepest open calls are
    collapsed until it fits, and ``notes`` says so; the returned ``spec`` is the one actually drawn."""
    budget = DEFAULT_NODE_BUDGET if node_budget is None else int(node_budget)
    if budget < 1:
        raise ValueError(f"node_budget must be at least 1, got {node_budget!r}")
    _check_spec(graph, spec)
    vg = _build(graph, spec)
    if len(vg.nodes) <= budget:
        return vg
    requested = len(vg.nodes)
    calls = graph.call_by_id
    depths = sorted({calls[c].depth for c in spec.expanded if c in calls}, reverse=True)
    if not depths:  # nothing is open: there is nothing to collapse, the view is drawn as it is
        note = (
            f"the view has {requested:,} boxes with every module closed, over the budget of {budget:,}; "
            f"drawn in full (fold repeats or hide parameters to draw fewer)"
        )
        return replace(vg, notes=vg.notes + (note,))
    for d in depths:
        smaller = replace(
            spec, expanded=frozenset(c for c in spec.expanded if c not in calls or calls[c].depth < d)
        )
        vg = _build(graph, smaller)
        if len(vg.nodes) <= budget:
            break
    note = (
        f"auto-collapsed module calls at depth ≥ {d}: the requested view has {requested:,} boxes, "
        f"over the budget of {budget:,} (raise node_budget to draw it)"
    )
    return replace(vg, notes=vg.notes + (note,))


def view_of(
    graph: Graph,
    options: ViewOptions,
    expanded: Iterable[str] | None = None,
    unfolded: Iterable[str] | None = None,
) -> VisibleGraph:
    """The view ``options`` ask for, with ``expanded`` calls (ids or qualnames) and ``unfolded`` runs
    opened."""
    spec = make_spec(
        graph,
        depth=options.depth,
        expanded=expanded,
        fold_repeats=options.fold_repeats,
        unfolded=unfolded,
        show_params=options.show_params,
    )
    return build_view(graph, spec, node_budget=options.node_budget)


def _run_member(idx: Index, fold_id: str) -> str | None:
    """The call a folded-box id starts at, if it is a member of a run (a whole run or a piece of one)."""
    member = fold_id[len(FOLD_PREFIX) :] if fold_id.startswith(FOLD_PREFIX) else None
    return member if member in idx.fold_of else None


# ---- interaction -----------------------------------------------------------------------------
def _descendants(graph: Graph, cid: str) -> set[str]:
    out = {cid}
    todo = [cid]
    while todo:
        for k in graph.children_calls.get(todo.pop(), []):
            out.add(k)
            todo.append(k)
    return out


def toggle(graph: Graph, spec: ViewSpec, visible_id: str) -> ViewSpec:
    """What a click does: expand a collapsed call, collapse an open cluster (and everything inside it),
    unfold a folded group. Clicking a plain node (an op, an input) changes nothing."""
    idx = index_of(graph)
    _check_spec(graph, spec)
    if _run_member(idx, visible_id) is not None:
        return replace(spec, unfolded=spec.unfolded ^ {visible_id})
    if visible_id in io_groups(graph).groups:
        return replace(spec, expanded=spec.expanded ^ {visible_id})
    if visible_id in graph.call_by_id:
        if visible_id not in spec.expanded:
            return replace(spec, expanded=spec.expanded | {visible_id})
        inside = _descendants(graph, visible_id)
        inside_only = inside - {visible_id}  # runs among its descendants refold; its own run stays open
        return replace(
            spec,
            expanded=spec.expanded - inside,
            unfolded=frozenset(f for f in spec.unfolded if _run_member(idx, f) not in inside_only),
            pinned=spec.pinned - inside_only,
        )
    if visible_id in graph.node_by_id:
        return spec
    raise ValueError(f"toggle: {visible_id!r} is not a node, module call or folded group of this graph")


def expand_to(graph: Graph, spec: ViewSpec, call_or_node_id: str) -> ViewSpec:
    """Open every ancestor hiding ``call_or_node_id``, and pin those in folded runs, so it is drawn."""
    idx = index_of(graph)
    show_params = spec.show_params
    if call_or_node_id in graph.call_by_id:
        chain = idx.call_chain[call_or_node_id]
        opened, hidden_in = chain[:-1], chain
    elif call_or_node_id in graph.node_by_id:
        n = graph.node_by_id[call_or_node_id]
        chain = idx.call_chain[n.parent] if n.parent is not None else ()
        gid = io_groups(graph).group_of.get(n.id)
        opened = hidden_in = chain + ((gid,) if gid is not None else ())
        show_params = show_params or n.kind in HIDDEN_KINDS
    else:
        cid = _resolve_calls(graph, [call_or_node_id], "expand_to")[0]
        return expand_to(graph, spec, cid)
    pins = {c for c in hidden_in if c in idx.fold_of}
    return replace(
        spec, expanded=spec.expanded | set(opened), pinned=spec.pinned | pins, show_params=show_params
    )


def visible_id_of(graph: Graph, vg: VisibleGraph, call_or_node_id: str) -> str | None:
    """The visible box (node, collapsed call, folded group) or cluster that shows ``call_or_node_id`` now."""
    idx = index_of(graph)
    node_ids = {v.id for v in vg.nodes}
    cluster_ids = {c.id for c in vg.clusters}
    reps = _Reps(graph, idx, vg.spec)
    if call_or_node_id in graph.call_by_id:
        r = reps.of_call(call_or_node_id)
        found = call_or_node_id if r is None else r[0]
    elif call_or_node_id in graph.node_by_id:
        n = graph.node_by_id[call_or_node_id]
        r = reps.of_call(n.parent) if n.parent is not None else None
        gid = io_groups(graph).group_of.get(n.id)
        found = r[0] if r is not None else (n.id if n.id in node_ids else gid or n.parent)
    else:
        return None
    return found if found in node_ids or found in cluster_ids else None
