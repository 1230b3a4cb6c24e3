"""``dot -Tjson`` output → Layout: node boxes, cluster boxes, edge polylines and label positions, in points
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
    return (round(float(x), 2), round(float(y), 2))


def _box(text: str) -> Box:
    x0, y0, x1, y1 = (float(v) for v in text.split(","))
    return (round(x0, 2), round(y0, 2), round(x1, 2), round(y1, 2))


def spline_points(pos: str) -> tuple[Point, ...]:
    """An edge's ``pos`` ("e,x,y s,x,y p0 p1 ... p3n", a B-spline of cubic pieces) as a polyline from the
    tail to the arrow tip."""
    start: Point | None = None
    end: Point | None = None
    ctrl: list[Point] = []
    for tok in pos.replace("\\\n", "").split():
        if tok.startswith("e,"):
            end = _point(tok[2:])
        elif tok.startswith("s,"):
            start = _point(tok[2:])
        else:
            ctrl.append(_point(tok))
    pts: list[Point] = [start] if start is not None else []
    if ctrl:
        pts.append(ctrl[0])
    for i in range(0, len(ctrl) - 3, 3):
        p0, p1, p2, p3 = ctrl[i:i + 4]
        for k in range(1, BEZIER_SAMPLES + 1):
            t = k / BEZIER_SAMPLES
            a, b, c, d = (1 - t) ** 3, 3 * t * (1 - t) ** 2, 3 * t * t * (1 - t), t ** 3
            pts.append((round(a * p0[0] + b * p1[0] + c * p2[0] + d * p3[0], 2),
                        round(a * p0[1] + b * p1[1] + c * p2[1] + d * p3[1], 2)))
    if end is not None:
        pts.append(end)
    return tuple(pts)


def parse_json(raw: bytes | str, vg: VisibleGraph, names: DotNames, rankdir: str) -> Layout:
    """Read ``dot -Tjson`` output for the DOT built by ``build_dot(vg)``."""
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
            nodes[names.nodes[name]] = (round(x - hw, 2), round(y - hh, 2), round(x + hw, 2), round(y + hh, 2))
    missing = [v.id for v in vg.nodes if v.id not in nodes]
    if missing:
        raise GraphvizError(f"Graphviz output has no position for {len(missing)} node(s), e.g. {missing[0]}")

    edges: list[EdgePath | None] = [None] * len(vg.edges)
    for obj in data.get("edges", []):
        i = names.edges.get(obj.get("id", ""))
        if i is None or "pos" not in obj:
            continue
        ve = vg.edges[i]
        lp = _point(obj["lp"]) if "lp" in obj else None
        edges[i] = EdgePath(ve.src, ve.dst, spline_points(obj["pos"]), label=ve.label, label_pos=lp)
    if any(e is None for e in edges):
        raise GraphvizError("Graphviz output is missing some edges")

    parent: dict[str, str | None] = {v.id: v.parent for v in vg.nodes}
    parent.update({c.id: c.parent for c in vg.clusters})
    x0, y0, x1, y1 = _box(data.get("bb", "0,0,0,0"))
    return Layout(nodes=nodes, clusters=clusters, parent=parent, edges=tuple(e for e in edges if e is not None),
                  width=round(x1 - x0, 2), height=round(y1 - y0, 2), rankdir=rankdir)
