"""``dot -Tjson0`` output → Layout: node boxes, cluster boxes, edge polylines and label positions, in points
with y up (Graphviz's own coordinate system)."""

from __future__ import annotations

import json
from typing import Any

from ..view_types import VisibleGraph
from .dot import DotNames
from .run import GraphvizError
from .types import Box, EdgePath, Layout, Point

BEZIER_SAMPLES = 4   # polyline points per cubic Bézier segment


def _point(text: str) -> Point:
    x, y = text.split(",")[:2]
    return (float(x), float(y))


def _box(text: str) -> Box:
    x0, y0, x1, y1 = (float(v) for v in text.split(","))
    return (x0, y0, x1, y1)


# Bernstein weights of the sample points inside each cubic piece (t = 1/4, 2/4, 3/4, 1)
_WEIGHTS = tuple(((1 - t) ** 3, 3 * t * (1 - t) ** 2, 3 * t * t * (1 - t), t ** 3)
                 for t in (k / BEZIER_SAMPLES for k in range(1, BEZIER_SAMPLES + 1)))


def spline_points(pos: str) -> tuple[Point, ...]:
    """An edge's ``pos`` ("e,x,y s,x,y p0 p1 ... p3n", a B-spline of cubic pieces) as a polyline from the
    tail to the arrow tip. Straight pieces (dot draws most edges straight) add only their end point."""
    start: Point | None = None
    end: Point | None = None
    xs: list[float] = []
    ys: list[float] = []
    for tok in pos.replace("\\\n", "").split():
        if tok[1] == ",":
            if tok[0] == "e":
                end = _point(tok[2:])
                continue
            if tok[0] == "s":
                start = _point(tok[2:])
                continue
        x, y = tok.split(",")[:2]
        xs.append(float(x))
        ys.append(float(y))
    pts: list[Point] = [start] if start is not None else []
    if xs:
        pts.append((xs[0], ys[0]))
    for i in range(0, len(xs) - 3, 3):
        x0, x1, x2, x3 = xs[i:i + 4]
        y0, y1, y2, y3 = ys[i:i + 4]
        dx, dy = x3 - x0, y3 - y0
        # control points on the chord (within 0.5 pt): the piece is a straight line
        if abs(dx * (y1 - y0) - dy * (x1 - x0)) <= 0.5 * (abs(dx) + abs(dy)) and \
                abs(dx * (y2 - y0) - dy * (x2 - x0)) <= 0.5 * (abs(dx) + abs(dy)):
            pts.append((x3, y3))
            continue
        for a, b, c, d in _WEIGHTS:
            pts.append((a * x0 + b * x1 + c * x2 + d * x3, a * y0 + b * y1 + c * y2 + d * y3))
    if end is not None:
        pts.append(end)
    return tuple(pts)


def parse_json(raw: bytes | str, vg: VisibleGraph, names: DotNames, rankdir: str) -> Layout:
    """Read ``dot -Tjson0`` (or ``-Tjson``) output for the DOT built by ``build_dot(vg)``."""
    try:
        data: dict[str, Any] = json.loads(raw)
    except ValueError as exc:
        raise GraphvizError(f"could not read Graphviz JSON output: {exc}") from None
    gvid_name: dict[int, str] = {}
    nodes: dict[str, Box] = {}
    clusters: dict[str, Box] = {}
    for obj in data.get("objects", []):
        name = obj.get("name", "")
        gvid_name[obj["_gvid"]] = name
        if name in names.clusters and "bb" in obj:
            clusters[names.clusters[name]] = _box(obj["bb"])
        elif name in names.nodes:
            x, y = _point(obj["pos"])
            hw, hh = float(obj["width"]) * 36.0, float(obj["height"]) * 36.0
            # dot gives sizes in inches to 4 decimals: round the box to 1/100 pt so it is not off by 0.0002
            nodes[names.nodes[name]] = (round(x - hw, 2), round(y - hh, 2), round(x + hw, 2), round(y + hh, 2))
    missing = [v.id for v in vg.nodes if v.id not in nodes]
    if missing:
        raise GraphvizError(f"Graphviz output has no position for {len(missing)} node(s), e.g. {missing[0]}")

    # dot numbers edges by tail node, not in DOT order: match them back by (tail, head, label), first come
    # first served (edges with all three equal are interchangeable on screen)
    queue: dict[tuple[str, str, str], list[int]] = {}
    for i, ve in enumerate(vg.edges):
        queue.setdefault((ve.src, ve.dst, ve.label), []).append(i)
    paths: list[EdgePath | None] = [None] * len(vg.edges)
    for obj in sorted(data.get("edges", []), key=lambda o: o["_gvid"]):
        key = (names.nodes.get(gvid_name.get(obj["tail"], ""), ""), names.nodes.get(gvid_name.get(obj["head"], ""), ""),
               obj.get("label", ""))
        todo = queue.get(key)
        if not todo or "pos" not in obj:
            raise GraphvizError(f"Graphviz output has an edge the view does not: {key}")
        i = todo.pop(0)
        ve = vg.edges[i]
        lp = _point(obj["lp"]) if "lp" in obj else None
        paths[i] = EdgePath(ve.src, ve.dst, spline_points(obj["pos"]), label=ve.label, label_pos=lp)
    if any(p is None for p in paths):
        raise GraphvizError("Graphviz output is missing some of the view's edges")
    edges = [p for p in paths if p is not None]

    parent: dict[str, str | None] = {v.id: v.parent for v in vg.nodes}
    parent.update({c.id: c.parent for c in vg.clusters})
    x0, y0, x1, y1 = _box(data.get("bb", "0,0,0,0"))
    return Layout(nodes=nodes, clusters=clusters, parent=parent, edges=tuple(edges),
                  width=x1 - x0, height=y1 - y0, rankdir=rankdir)
