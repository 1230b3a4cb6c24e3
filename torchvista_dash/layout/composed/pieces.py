"""A view cut into pieces: one per open module call (and one for the top level), each a small graph of its
direct children (op boxes, collapsed calls, folded runs, child clusters as fixed-size boxes) plus ports for
the tensors that cross its border.

Every visible edge becomes a *route*: the piece edges it follows from its source box, out through the ports
of the clusters it leaves, across the piece of the lowest cluster holding both ends, and in through the ports
of the clusters it enters, to its target box. Piece edges that carry one tensor along the same way are shared
(a tensor entering a cluster once feeds all its consumers inside through one port). Tensors leaving a cluster
for one box share one out-port too (a block's cached key and value, both into the model's ``cache`` output):
as two ports side by side their edges would run down one corridor beside the stack, where dot's splines
cross each other twice below every block (most of GPT-2 every op's crossings then).

A piece's *key* is everything its geometry depends on (child sizes, ports, edges, rankdir) and nothing else,
no ids or labels: identical decoder layers have equal keys, so one layout serves all of them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from torchvista_dash.layout.composed.groups import GROUP_PREFIX, MIN_CHILDREN, group_children
from torchvista_dash.layout.single.dot import node_size
from torchvista_dash.layout.textmetrics import HEADER_PT, text_width
from torchvista_dash.view.types import VisibleGraph

Size = tuple[float, float]
PortKey = tuple[str, str]  # (visible source id, tensor id): what a port carries
EdgeSpec = tuple[
    int, int, int, int, int
]  # tail, head, bus group (-1: none, <= -2: a collector), tail field, head field
# where a laid-out cluster's in-ports and out-ports sit on its border in its parent, per port (its index
# inside):
# the start of its 1-point cell, in whole points from the left (TB/BT) or the top (LR/RL) of the border's
# table
Fields = tuple[tuple[int, ...], tuple[int, ...]]

MARGIN = 8.0  # points between a cluster's border and its contents (dot's default)
HEADER = HEADER_PT * 1.4 + 4.0  # points above the contents for the cluster's title
LABEL_PAD = 34.0  # title width beyond its text: the collapse toggle and margins
MERGED = "->"  # the source of a port shared by the tensors leaving for one box
BUS_MIN = 4  # one tensor to at least this many children: drawn as a bus
CABLE_SHARE = 0.8  # buses sharing this share of their children (of the smaller's) share one trunk ...
CABLE_OVER = 200  # ... in a piece with more bus branches than this


@dataclass
class Piece:
    """One cluster's interior (``cid`` None: the top level) as built for one view."""

    cid: str | None
    children: list[str] = field(default_factory=list)  # visible node ids, then child cluster ids
    index: dict[str, int] = field(default_factory=dict)  # child id → position in ``children``
    is_cluster: list[bool] = field(default_factory=list)
    in_ports: dict[PortKey, int] = field(default_factory=dict)
    out_ports: dict[PortKey, int] = field(default_factory=dict)
    edges: list[tuple[str, int, str, int, PortKey]] = field(
        default_factory=list
    )  # (tail kind, i, head kind, j, port)
    edge_at: dict[tuple[str, int, str, int, PortKey], int] = field(default_factory=dict)

    def edge(self, tail: tuple[str, int], head: tuple[str, int], port: PortKey) -> int:
        """The index of the piece edge from ``tail`` to ``head`` carrying ``port``'s tensor (made once)."""
        k = (tail[0], tail[1], head[0], head[1], port)
        at = self.edge_at.get(k)
        if at is None:
            at = self.edge_at[k] = len(self.edges)
            self.edges.append(k)
        return at

    def n_children(self) -> int:
        return len(self.children)

    def slot(self, kind: str, i: int) -> int:
        """One index space for the piece's DOT nodes: children, then in-ports, then out-ports."""
        if kind == "c":
            return i
        if kind == "i":
            return len(self.children) + i
        return len(self.children) + len(self.in_ports) + i

    def key(
        self, sizes: list[Size], rankdir: str, pieces: dict[str | None, Piece], fields: dict[str, Fields]
    ) -> tuple[object, ...]:
        """Everything the piece's geometry depends on: equal keys, equal layouts. A child cluster is a box
        with its ports on its border where its own layout put them (``fields``)."""
        groups: dict[tuple[int, PortKey], list[int]] = {}
        for k, (tk, ti, _hk, _hj, port) in enumerate(self.edges):
            groups.setdefault((self.slot(tk, ti), port), []).append(k)
        # In a piece with many bus branches, tensors that feed the same children (an expert loop's hidden
        # states, routing weights and indices) share one bus, a *cable*: one trunk instead of one per tensor
        # running side by side, which is most of what dot spends on an eager MoE's expert loop. Fewer
        # branches are not merged: dot's time is small there, and one trunk for a decoder's cos, sin and
        # mask crosses more often than three (tests/layout/test_layout_quality.py's bounds).
        bus: dict[int, int] = {}
        cables: list[tuple[set[int], set[int]]] = []  # per cable: its tails, its heads
        buses = [(tail, members) for (tail, _p), members in groups.items() if len(members) >= BUS_MIN]
        share = CABLE_SHARE if sum(len(m) for _t, m in buses) > CABLE_OVER else math.inf
        for tail, members in buses:
            heads = {self.slot(self.edges[k][2], self.edges[k][3]) for k in members}
            # (a tensor from one of a cable's consumers is no part of it: DenseNet's layers, each feeding all
            # later ones, on one trunk cross more often than on their own)
            g = next(
                (
                    i
                    for i, (ts, hs) in enumerate(cables)
                    if len(heads & hs) >= share * min(len(heads), len(hs))
                    and tail not in hs
                    and not ts & heads
                ),
                len(cables),
            )
            if g == len(cables):
                cables.append(({tail}, heads))
            else:
                cables[g][0].add(tail)
                cables[g][1].update(heads)
            for k in members:
                bus[k] = g
        # Many children sending tensors out by one port (a shared port: the layers' cached keys and values)
        # join a *collector*, the bus's mirror: one trunk down the side of the stack, a short branch from each
        # child (group -2 - f). As one edge per layer down to the border, each spanning up to 80 ranks, they
        # would be thousands of virtual nodes: seconds of dot for the 80-layer Llama's own piece, a few
        # hundredths with the collector (bench/bench_layout_scale.py, "cache on"). Tensors leaving by ports
        # of their own are not bundled: one trunk down to all the out-ports crosses every edge between the
        # children it passes, once per tensor on it.
        into: dict[int, list[int]] = {}
        for k, (_tk, _ti, hk, hj, _port) in enumerate(self.edges):
            if k not in bus and hk == "o":
                into.setdefault(self.slot(hk, hj), []).append(k)
        f = 0
        for members in into.values():
            if len({self.edges[k][:2] for k in members}) >= BUS_MIN:
                for k in members:
                    bus[k] = -2 - f
                f += 1

        def field(kind: str, i: int, port: PortKey, side: int) -> int:
            if kind != "c" or not self.is_cluster[i]:
                return -1
            inner = pieces[self.children[i]]
            return (inner.in_ports if side == 0 else inner.out_ports)[port]  # its cell's name

        specs: tuple[EdgeSpec, ...] = tuple(
            (
                self.slot(tk, ti),
                self.slot(hk, hj),
                bus.get(k, -1),
                field(tk, ti, port, 1),
                field(hk, hj, port, 0),
            )
            for k, (tk, ti, hk, hj, port) in enumerate(self.edges)
        )
        kids = tuple(
            (size, *fields[c]) if cl else (size, (), ())
            for size, c, cl in zip(sizes, self.children, self.is_cluster, strict=True)
        )
        return (rankdir, kids, len(self.in_ports), len(self.out_ports), specs)


@dataclass
class Plan:
    """Every piece of a view, the order to lay them out in, and each visible edge's route."""

    pieces: dict[str | None, Piece]
    levels: list[list[str | None]]  # pieces by height: leaves first, the top level last
    routes: list[list[tuple[str | None, int]]]  # per visible edge: (piece, piece edge) from source to target
    labels: dict[str, float]  # cluster id → title width (points)
    groups: frozenset[str] = frozenset()  # layout-only clusters (``groups``): no border, no title


def cluster_size(interior: Size, title_width: float, group: bool = False) -> Size:
    """The box a cluster takes in its parent: its laid-out interior plus margins and its title (a group: its
    interior alone)."""
    w, h = interior
    if group:
        return w, h
    return max(w + 2 * MARGIN, title_width), h + MARGIN + HEADER


def plan(vg: VisibleGraph) -> Plan:
    """Cut ``vg`` into pieces and route every edge through them."""
    parent: dict[str, str | None] = {c.id: c.parent for c in vg.clusters}
    node_parent: dict[str, str | None] = {n.id: n.parent for n in vg.nodes}
    groups = _find_groups(vg, parent, node_parent)  # members' parents move into their groups
    pieces: dict[str | None, Piece] = {None: Piece(None)}
    for cid in parent:
        pieces[cid] = Piece(cid)
    for n in vg.nodes:
        p = pieces[node_parent[n.id]]
        p.index[n.id] = len(p.children)
        p.children.append(n.id)
        p.is_cluster.append(False)
    for cid, up in parent.items():
        p = pieces[up]
        p.index[cid] = len(p.children)
        p.children.append(cid)
        p.is_cluster.append(True)

    chains: dict[str | None, tuple[str, ...]] = {None: ()}

    def chain(cid: str | None) -> tuple[str, ...]:
        """Clusters from the top level down to ``cid`` (itself last)."""
        got = chains.get(cid)
        if got is None:
            assert cid is not None
            got = chains[cid] = chain(parent[cid]) + (cid,)
        return got

    splits: list[tuple[tuple[str, ...], tuple[str, ...], int]] = []
    into: dict[tuple[str, str], set[PortKey]] = {}  # (cluster, target box) → tensors leaving it for that box
    for e in vg.edges:
        cs, cd = chain(node_parent[e.src]), chain(node_parent[e.dst])
        k = 0
        while k < len(cs) and k < len(cd) and cs[k] == cd[k]:
            k += 1
        splits.append((cs, cd, k))
        for c in cs[k:]:
            into.setdefault((c, e.dst), set()).add((e.src, e.tensor))
    routes: list[list[tuple[str | None, int]]] = []
    for e, (cs, cd, k) in zip(vg.edges, splits, strict=True):
        lca = cs[k - 1] if k else None
        port: PortKey = (e.src, e.tensor)
        route: list[tuple[str | None, int]] = []
        # out of every cluster the source sits in below the common one, innermost first; tensors leaving a
        # cluster for one box leave it by one port (``MERGED``), and run on as one edge from there
        below = e.src
        for c in reversed(cs[k:]):
            p = pieces[c]
            leave = (MERGED, e.dst) if len(into[(c, e.dst)]) > 1 else port
            q = p.out_ports.setdefault(leave, len(p.out_ports))
            route.append((c, p.edge(("c", p.index[below]), ("o", q), port)))
            below, port = c, leave
        top = pieces[lca]
        rep_d = cd[k] if k < len(cd) else e.dst
        route.append((lca, top.edge(("c", top.index[below]), ("c", top.index[rep_d]), port)))
        # into every cluster the target sits in, outermost first
        for j in range(k, len(cd)):
            p = pieces[cd[j]]
            q = p.in_ports.setdefault(port, len(p.in_ports))
            inner = cd[j + 1] if j + 1 < len(cd) else e.dst
            route.append((cd[j], p.edge(("i", q), ("c", p.index[inner]), port)))
        routes.append(route)

    height: dict[str | None, int] = dict.fromkeys(parent, 0)
    height[None] = 0
    for cid in sorted(parent, key=lambda c: -len(chain(c))):  # children before their parents
        height[parent[cid]] = max(height[parent[cid]], height[cid] + 1)
    levels: list[list[str | None]] = [[] for _ in range(height[None] + 1)]
    for cid in parent:
        levels[height[cid]].append(cid)
    levels[height[None]].append(None)
    levels = [lv for lv in levels if lv]
    labels = {c.id: text_width(c.label, HEADER_PT) + LABEL_PAD for c in vg.clusters}
    labels.update(dict.fromkeys(groups, 0.0))
    return Plan(pieces, levels, routes, labels, frozenset(groups))


def _find_groups(
    vg: VisibleGraph, parent: dict[str, str | None], node_parent: dict[str, str | None]
) -> dict[str, str | None]:
    """The groups of every module with ``MIN_CHILDREN`` direct children or more (``groups``), each added to
    ``parent`` under its module and its members moved into it; returns group id → its module."""
    count: dict[str | None, int] = {}
    for up in (*node_parent.values(), *parent.values()):
        count[up] = count.get(up, 0) + 1
    big = {c for c, k in count.items() if k >= MIN_CHILDREN}
    if not big:
        return {}
    first: dict[str, int] = {}  # a cluster's place in the forward pass: its first node's
    pos: dict[str, int] = {}
    for i, n in enumerate(vg.nodes):
        pos[n.id] = i
        c = node_parent[n.id]
        while c is not None and c not in first:
            first[c] = i
            c = parent[c]
    kids: dict[str | None, list[str]] = {c: [] for c in big}
    for vid, up in (*node_parent.items(), *parent.items()):
        if up in big:
            kids[up].append(vid)
    order = {**pos, **first}
    for members in kids.values():
        members.sort(key=lambda m: order.get(m, len(vg.nodes)))
    at = {m: i for members in kids.values() for i, m in enumerate(members)}

    # per node: the (big module, its child holding the node) pairs along its chain, outermost first (mostly
    # none or one): an edge's pair is where its two lists first part under a big module
    under: dict[str | None, tuple[tuple[str | None, str], ...]] = {None: ()}

    def lifts(cid: str | None) -> tuple[tuple[str | None, str], ...]:
        got = under.get(cid)
        if got is None:
            assert cid is not None
            up = parent[cid]
            got = under[cid] = (*lifts(up), (up, cid)) if up in big else lifts(up)
        return got

    pairs: dict[str | None, list[tuple[int, int]]] = {c: [] for c in big}
    node_lifts = {
        n.id: (*lifts(node_parent[n.id]), (node_parent[n.id], n.id))
        if node_parent[n.id] in big
        else lifts(node_parent[n.id])
        for n in vg.nodes
    }
    for e in vg.edges:
        ls, ld = node_lifts[e.src], node_lifts[e.dst]
        for (bs, a), (bd, b) in zip(ls, ld, strict=False):
            if bs != bd:
                break
            if a != b:
                pairs[bs].append((at[a], at[b]))
                break
    label: dict[str, tuple[str, ...]] = {n.id: ("n", n.kind, n.label) for n in vg.nodes}
    label.update({c.id: ("c", c.label.split(" #")[0]) for c in vg.clusters})
    out: dict[str, str | None] = {}
    for up in sorted(big, key=lambda c: (c is not None, c or "")):
        for k, members in enumerate(group_children(kids[up], label.__getitem__, pairs[up])):
            gid = f"{GROUP_PREFIX}{up or ''}:{k}"
            out[gid] = parent[gid] = up
            for m in members:
                if m in node_parent:
                    node_parent[m] = gid
                else:
                    parent[m] = gid
    return out


def node_sizes(vg: VisibleGraph) -> dict[str, Size]:
    """The box size of every visible node (points)."""
    return {n.id: node_size(n) for n in vg.nodes}
