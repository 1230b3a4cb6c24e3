"""A piece's geometry read back from dot's JSON: node centres and edge polylines moved to the piece's own
corner, bus members joined along their trunk, and the gap dot leaves beside the rows of ports closed."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from torchvista_dash.layout.graphviz.run import GraphvizError
from torchvista_dash.layout.single.dot import RANKSEP
from torchvista_dash.layout.single.parse import spline_polylines
from torchvista_dash.layout.types import Point

Polyline = tuple[Point, ...]
KEEP = 4.0  # points kept between a row of ports and the boxes next to it
RANK_GAP = float(RANKSEP) * 72 - KEEP  # points cut beside a row of ports: the rank gap (ranksep) but KEEP


@dataclass(frozen=True, eq=False)
class PieceLayout:
    """A piece laid out in its own coordinates (points, y up, lower-left corner at 0, 0)."""

    width: float
    height: float
    centres: tuple[Point, ...]  # per DOT slot: children, then in-ports, then out-ports
    points: np.ndarray  # every piece edge's polyline (tail's border to head's), one after another
    starts: tuple[int, ...]  # piece edge k is points[starts[k]:starts[k + 1]]


def read_piece(
    doc: dict,
    key: tuple,
    edges: list[tuple[int, int, dict[str, object]]],
    follow: list[list[int]],
    n_real: int,
) -> PieceLayout:
    """One piece's PieceLayout from its JSON document (coordinates moved so the piece starts at 0, 0)."""
    precise = "_draw_" in doc  # -Tjson: xdot drawing ops, 2 decimals at any size
    if precise:
        x0, y0, x1, y1 = _extent(doc["_draw_"])
    else:
        x0, y0, x1, y1 = (float(v) for v in doc.get("bb", "0,0,0,0").split(","))
    name_of: dict[int, int] = {}
    pos_of: dict[int, Point] = {}
    for obj in doc.get("objects", ()):
        if "pos" in obj:
            s = int(obj["name"])
            name_of[obj["_gvid"]] = s
            if precise:
                a0, b0, a1, b1 = _extent(obj["_draw_"])
                pos_of[s] = ((a0 + a1) / 2, (b0 + b1) / 2)
            else:
                px, py = (float(v) for v in obj["pos"].split(","))
                pos_of[s] = (px, py)
    if any(s not in pos_of for s in range(n_real)):
        raise GraphvizError("Graphviz output misses a node of a piece")
    found = sorted(doc.get("edges", ()), key=lambda e: e["_gvid"])
    # dot numbers edges in its own order: match them back by (tail, head), in the order they were written
    written: dict[tuple[int, int], list[int]] = {}
    for k, (t, h, _attrs) in enumerate(edges):
        written.setdefault((t, h), []).append(k)
    polys: list[Polyline] = [()] * len(edges)
    lines = spline_polylines([_spline(e) if precise else e["pos"] for e in found]) if found else []
    for e, line in zip(found, lines, strict=True):
        t, h = name_of[e["tail"]], name_of[e["head"]]
        todo = written.get((t, h))
        if not todo:
            raise GraphvizError("Graphviz output has an edge the piece does not")
        k = todo.pop(0)
        a, b = line[0], line[-1]
        if math.dist(a, pos_of[t]) + math.dist(b, pos_of[h]) > math.dist(a, pos_of[h]) + math.dist(
            b, pos_of[t]
        ):
            line = line[::-1]  # dot may list a reversed edge's points from its head
        polys[k] = line
    for k, (t, h, attrs) in enumerate(edges):
        if attrs.get("constraint") == "false" and key[0] == "TB":  # not given to dot (piecedot)
            polys[k] = _column_jump(pos_of[t], pos_of[h], key[1][t][0], key[1][h][0])
    if any(not p for p in polys):
        raise GraphvizError("Graphviz output misses an edge of a piece")
    # every point moved and rounded in one numpy call; inside each dot edge, the points strictly inside a run
    # along one axis-parallel line (dot's one point per rank of a long edge) dropped there too
    sizes = np.array([len(p) for p in polys], dtype=np.intp)
    ends = np.cumsum(sizes)
    # (a piece may have no edges at all: boxes that nothing joins)
    xy = (
        np.round(np.array([p for line in polys for p in line], dtype=float).reshape(-1, 2) - (x0, y0), 2)
        + 0.0
    )
    keep = np.ones(len(xy), dtype=bool)
    keep[1:-1] = ~_on_a_run(xy)
    keep[ends - sizes] = True
    keep[ends - 1] = True
    kept_before = np.concatenate(([0], np.cumsum(keep)))
    lo_k, hi_k = kept_before[ends - sizes].tolist(), kept_before[ends].tolist()
    kept = xy[keep].tolist()
    out: list[Polyline] = []
    for path in follow:
        pts: list = []
        for k in path:
            seg = kept[lo_k[k] : hi_k[k]]
            pts.extend(seg[1:] if pts and pts[-1] == seg[0] else seg)
        out.append(_straighten(pts))
    centres = tuple((round(pos_of[s][0] - x0, 2), round(pos_of[s][1] - y0, 2)) for s in range(n_real))
    starts = [0]
    for line in out:
        starts.append(starts[-1] + len(line))
    flat = np.array([p for line in out for p in line], dtype=float).reshape(-1, 2)
    width, height, centres, flat = _trim(key, round(x1 - x0, 2), round(y1 - y0, 2), centres, flat, starts)
    return PieceLayout(width, height, centres, flat, tuple(starts))


def _column_jump(
    tail: Point, head: Point, tail_size: tuple[float, float], head_size: tuple[float, float]
) -> Polyline:
    """A wrapped stack's jump from the foot of one column (``tail``: the last layer's centre) to the head of
    the next (``head``), drawn by hand: down out of the last layer, across to the gap between the two
    columns, up it, and across and down into the next column's first layer (routed by dot, the jumps of a
    wide grid run round the side of the whole stack, side by side, and take room there)."""
    ax, ay = tail[0], tail[1] - tail_size[1] / 2
    bx, by = head[0], head[1] + head_size[1] / 2
    gap = (tail[0] + tail_size[0] / 2 + head[0] - head_size[0] / 2) / 2
    low, high = ay - KEEP, by + KEEP
    return ((ax, ay), (ax, low), (gap, low), (gap, high), (bx, high), (bx, by))


def _trim(
    key: tuple, width: float, height: float, centres: tuple[Point, ...], flat: np.ndarray, starts: list[int]
) -> tuple[float, float, tuple[Point, ...], np.ndarray]:
    """Close the gap dot leaves between the ports' rank and the first (last) rank of boxes: ports are points
    on the border, not a rank of their own, and each one cost a cluster a rank's height at both ends. ``flat``
    holds every piece edge's polyline, edge k at ``starts[k]:starts[k + 1]`` (numpy: a tall piece has tens of
    thousands of points)."""
    rankdir, children, n_in, n_out, specs = key
    n = len(children)
    extent, across = (height, width) if rankdir in ("TB", "BT") else (width, height)
    pts = _frame_xy(rankdir, width, height, np.array(centres, dtype=float).reshape(-1, 2))
    polys = _frame_xy(rankdir, width, height, flat)
    # the free band between the ports and the nearest box (sources without inputs share the ports' rank)
    half = np.array([(h if rankdir in ("TB", "BT") else w) / 2 for (w, h), _i, _o in children], dtype=float)
    hi = float((pts[:n, 1] + half).max()) if n else 0.0
    lo = float((pts[:n, 1] - half).min()) if n else extent
    cut_top = max(0.0, min(RANK_GAP, extent - hi - KEEP)) if n_in else 0.0
    cut_bottom = max(0.0, min(RANK_GAP, lo - KEEP)) if n_out else 0.0
    top = max(extent - cut_top - cut_bottom, 1.0)
    pts[:, 1] -= cut_bottom
    pts[n : n + n_in, 1] = top
    pts[n + n_in : n + n_in + n_out, 1] = 0.0
    polys[:, 1] = np.minimum(np.maximum(polys[:, 1] - cut_bottom, 0.0), top)
    for k, (tail, head, *_rest) in enumerate(specs):
        if n <= tail < n + n_in:
            polys[starts[k]] = pts[tail]
        if n + n_in <= head < n + n_in + n_out:
            polys[starts[k + 1] - 1] = pts[head]
    w, h = (across, top) if rankdir in ("TB", "BT") else (top, across)
    back = _unframe_xy(rankdir, top, pts)
    return w, h, tuple(map(tuple, back.tolist())), _unframe_xy(rankdir, top, polys)


def _frame_xy(rankdir: str, width: float, height: float, xy: np.ndarray) -> np.ndarray:
    """The points in a frame where ranks run down from the in-ports' side (v = extent) to the out-ports'
    (v = 0), as an (n, 2) array (a new array)."""
    x, y = xy[:, 0], xy[:, 1]
    if rankdir == "TB":
        return xy.astype(float, copy=True)
    if rankdir == "BT":
        return np.column_stack((x, height - y))
    if rankdir == "LR":
        return np.column_stack((y, width - x))
    return np.column_stack((y, x))


def _unframe_xy(rankdir: str, extent: float, xy: np.ndarray) -> np.ndarray:
    """``from_frame``'s map applied to an (n, 2) array, rounded to 1/100 pt."""
    u, v = xy[:, 0], xy[:, 1]
    if rankdir == "TB":
        out = np.column_stack((u, v))
    elif rankdir == "BT":
        out = np.column_stack((u, extent - v))
    elif rankdir == "LR":
        out = np.column_stack((extent - v, u))
    else:
        out = np.column_stack((v, u))
    return np.round(out, 2) + 0.0  # + 0.0: no negative zeros


def from_frame(rankdir: str, extent: float) -> Callable[[Point], Point]:
    """The inverse of ``_frame_xy`` for a piece now ``extent`` long along its ranks (rounded to 1/100 pt)."""
    if rankdir == "TB":
        return lambda p: (round(p[0], 2), round(p[1], 2))
    if rankdir == "BT":
        return lambda p: (round(p[0], 2), round(extent - p[1], 2))
    if rankdir == "LR":
        return lambda p: (round(extent - p[1], 2), round(p[0], 2))
    return lambda p: (round(p[1], 2), round(p[0], 2))


def _straighten(pts: list[Point]) -> Polyline:
    """The polyline without the points that lie on the line through their neighbours (within half a point):
    an edge through many ranks is one point per rank from dot, a bus member the whole trunk before its
    branch."""
    if len(pts) <= 2:
        return tuple(pts)
    out = [pts[0]]
    for b, c in zip(pts[1:], pts[2:], strict=False):
        a = out[-1]
        cross = (b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0])
        if (
            abs(cross) > 0.5 * (abs(c[0] - a[0]) + abs(c[1] - a[1]))
            or (b[0] - a[0]) * (c[0] - b[0]) + (b[1] - a[1]) * (c[1] - b[1]) < 0
        ):
            out.append(b)  # a bend, or a turn back: kept
    out.append(pts[-1])
    return tuple(out)


def _on_a_run(xy: np.ndarray) -> np.ndarray:
    """For each point but the first and last: whether it lies strictly inside a run along one axis-parallel
    line (the same x, or the same y, with its neighbours, going on the same way)."""
    a, b, c = xy[:-2], xy[1:-1], xy[2:]
    same_x = (a[:, 0] == b[:, 0]) & (b[:, 0] == c[:, 0]) & ((b[:, 1] - a[:, 1]) * (c[:, 1] - b[:, 1]) > 0)
    same_y = (a[:, 1] == b[:, 1]) & (b[:, 1] == c[:, 1]) & ((b[:, 0] - a[:, 0]) * (c[:, 0] - b[:, 0]) > 0)
    return same_x | same_y


def _extent(ops: list[dict]) -> tuple[float, float, float, float]:
    """The bounding box of the points of xdot drawing ops (a node's polygon, the graph's background)."""
    pts = [p for op in ops for p in op.get("points", ())]
    if not pts:
        return (0.0, 0.0, 0.0, 0.0)
    xs, ys = [p[0] for p in pts], [p[1] for p in pts]
    return (min(xs), min(ys), max(xs), max(ys))


def _spline(edge: dict) -> str:
    """An edge's spline from its xdot ``b`` op, written as a ``pos`` (the ``pos`` itself has 5 digits)."""
    for op in edge.get("_draw_", ()):
        if op.get("op") in ("b", "B"):
            return " ".join(f"{x!r},{y!r}" for x, y in op["points"])
    if edge.get("style") == "invis" and "pos" in edge:  # drawn by no op: its 5-digit pos (never shown)
        return str(edge["pos"])
    raise GraphvizError("Graphviz output has an edge without a spline")
