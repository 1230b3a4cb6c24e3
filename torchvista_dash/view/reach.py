"""What feeds a selection and what it feeds, and every path between two boxes: sets of visible ids, worked
out on the drawn view (``VisibleGraph``) so that a closed module is one box a path runs through.

Pure data; ``render.paint.reach_paint`` turns a ``Reach`` into a paint that lights it and dims the rest.
"""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from torchvista_dash.view.types import VisibleGraph

ReachMode = Literal["step", "up", "down", "all"]
REACH_MODES: tuple[ReachMode, ...] = (
    "step",
    "up",
    "down",
    "all",
)  # one step each way; all up; all down; both


@dataclass(frozen=True)
class Reach:
    """Lit boxes, open modules and edges ((src, dst) of ``VisibleGraph.edges``); ``note``: said in the page
    (e.g. "no path between a and b")."""

    boxes: frozenset[str] = frozenset()
    clusters: frozenset[str] = frozenset()
    edges: frozenset[tuple[str, str]] = frozenset()
    note: str = ""

    def __bool__(self) -> bool:
        return bool(self.boxes or self.clusters)


def _members(vg: VisibleGraph, cid: str) -> set[str]:
    """The boxes drawn inside the open module ``cid``, at any depth."""
    parent = {c.id: c.parent for c in vg.clusters}
    inside: set[str] = set()
    for n in vg.nodes:
        p = n.parent
        while p is not None and p != cid:
            p = parent.get(p)
        if p == cid:
            inside.add(n.id)
    return inside


def _seeds(vg: VisibleGraph, vid: str) -> set[str]:
    if any(c.id == vid for c in vg.clusters):
        return _members(vg, vid)
    return {vid} if any(n.id == vid for n in vg.nodes) else set()


def _walk(seeds: Iterable[str], nxt: dict[str, list[str]], steps: int | None) -> dict[str, int]:
    """Every box reached from ``seeds`` along ``nxt`` in at most ``steps`` edges (None: any), with its
    distance."""
    dist = {s: 0 for s in seeds}
    todo = deque(dist)
    while todo:
        v = todo.popleft()
        if steps is not None and dist[v] >= steps:
            continue
        for w in nxt.get(v, ()):
            if w not in dist:
                dist[w] = dist[v] + 1
                todo.append(w)
    return dist


def _adjacency(vg: VisibleGraph) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    down: dict[str, list[str]] = defaultdict(list)
    up: dict[str, list[str]] = defaultdict(list)
    for e in vg.edges:
        down[e.src].append(e.dst)
        up[e.dst].append(e.src)
    return down, up


def _clusters_of(vg: VisibleGraph, boxes: set[str]) -> frozenset[str]:
    """The open modules holding any of ``boxes`` (they stay undimmed around what is lit)."""
    parent = {c.id: c.parent for c in vg.clusters}
    out: set[str] = set()
    for n in vg.nodes:
        if n.id in boxes:
            p = n.parent
            while p is not None and p not in out:
                out.add(p)
                p = parent.get(p)
    return frozenset(out)


def around(vg: VisibleGraph, vid: str, mode: ReachMode = "step") -> Reach:
    """The selection ``vid`` (a box, or an open module: the boxes inside it) with what feeds it and what it
    feeds: one step each way (``step``), everything upstream (``up``) or downstream (``down``), or both
    (``all``)."""
    seeds = _seeds(vg, vid)
    if not seeds:
        return Reach()
    down, up = _adjacency(vg)
    steps = 1 if mode == "step" else None
    before = _walk(seeds, up, steps) if mode in ("step", "up", "all") else {s: 0 for s in seeds}
    after = _walk(seeds, down, steps) if mode in ("step", "down", "all") else {s: 0 for s in seeds}
    lit = set(before) | set(after)
    if mode == "step":  # the edges into and out of the selection, not those between its neighbours
        edges = {
            (e.src, e.dst)
            for e in vg.edges
            if (e.src in seeds and e.dst in lit) or (e.dst in seeds and e.src in lit)
        }
    else:
        edges = {
            (e.src, e.dst)
            for e in vg.edges
            if (e.src in before and e.dst in before) or (e.src in after and e.dst in after)
        }
    opened = frozenset({vid}) if vid not in seeds else frozenset()  # an open module selected
    return Reach(frozenset(lit), _clusters_of(vg, lit) | opened, frozenset(edges))


def path(vg: VisibleGraph, a: str, b: str) -> Reach:
    """Every box and edge on a path from ``a`` to ``b`` or from ``b`` to ``a`` (each a box or an open
    module), through closed modules as the view draws them."""
    sa, sb = _seeds(vg, a), _seeds(vg, b)
    if not sa or not sb:
        return Reach(note="the two ends of a path must both be in the view")
    down, up = _adjacency(vg)
    lit: set[str] = set()
    edges: set[tuple[str, str]] = set()
    for src, dst in ((sa, sb), (sb, sa)):
        ahead, behind = _walk(src, down, None), _walk(dst, up, None)
        on = set(ahead) & set(behind)
        lit |= on
        edges |= {(e.src, e.dst) for e in vg.edges if e.src in on and e.dst in on}
    if not lit:
        return Reach(
            frozenset(sa | sb), _clusters_of(vg, sa | sb), note="no path joins the two selected boxes"
        )
    opened = frozenset(x for x in (a, b) if any(c.id == x for c in vg.clusters))
    return Reach(frozenset(lit | sa | sb), _clusters_of(vg, lit) | opened, frozenset(edges))


def lit(
    vg: VisibleGraph, selected: str | None, mode: ReachMode = "step", path_to: str | None = None
) -> Reach:
    """What a selection lights: the paths to ``path_to`` when given, else its reach by ``mode``."""
    if selected is None:
        return Reach()
    return path(vg, selected, path_to) if path_to is not None else around(vg, selected, mode)
