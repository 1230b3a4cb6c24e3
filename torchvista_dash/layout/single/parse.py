"""``dot -Tjson0`` output → Layout: node boxes, cluster boxes, edge polylines and label positions, in points
with y up (Graphviz's own coordinate system)."""

from __future__ import annotations

from collections.abc import Iterable
from operator import itemgetter
from typing import Any

import numpy as np
import orjson

from torchvista_dash.layout.graphviz.run import GraphvizError
from torchvista_dash.layout.single.dot import INVISIBLE, DotNames
from torchvista_dash.layout.types import Box, EdgePath, Layout, Point
from torchvista_dash.view.types import VisibleGraph

BEZIER_SAMPLES = 4  # polyline points per cubic Bézier segment


def _box(text: str) -> Box:
    x0, y0, x1, y1 = (float(v) for v in text.split(","))
    return (x0, y0, x1, y1)


# Bernstein weights of the sample points inside each cubic piece (t = 1/4, 2/4, 3/4, 1)
_WEIGHTS = tuple(
    ((1 - t) ** 3, 3 * t * (1 - t) ** 2, 3 * t * t * (1 - t), t**3)
    for t in (k / BEZIER_SAMPLES for k in range(1, BEZIER_SAMPLES + 1))
)


def spline_points(pos: str) -> tuple[Point, ...]:
    """An edge's ``pos`` ("e,x,y s,x,y p0 p1 ... p3n", a B-spline of cubic pieces) as a polyline from the
    tail to the arrow tip. Straight pieces (dot draws most edges straight) add only their end point."""
    return spline_polylines([pos])[0]


def _read_numbers(texts: Iterable[str]) -> list[float]:
    """The comma-separated numbers of all ``texts``, in order, in one orjson read."""
    return orjson.loads("[" + ",".join(texts) + "]")


def _numbers(positions: list[str]) -> list[float]:
    """Every number of every ``pos``, in order: one JSON array read by orjson (several times faster than
    ``float()`` on each token). Each point must have exactly two coordinates."""
    return _read_numbers([",".join(positions).replace("e,", "").replace("s,", "").replace(" ", ",")])


def spline_polylines(positions: list[str]) -> list[tuple[Point, ...]]:
    """``spline_points`` of many edges at once: the numbers parsed in one go, then every piece tested for
    straightness and every curved piece sampled in a few numpy calls, not in a Python loop per coordinate."""
    # one spline per edge (no "concentrate"); line continuations only in very long lines
    positions = [p.split(";")[0].replace("\\\n", "") if (";" in p or "\\" in p) else p for p in positions]
    counts = [p.count(" ") + 1 for p in positions]  # points per pos, "e,"/"s," ones included
    numbers = np.array(_numbers(positions), dtype=float)
    if numbers.size != 2 * sum(counts):
        raise GraphvizError("Graphviz edge positions are not 2-D points")
    xy = numbers.reshape(-1, 2)
    vals = numbers.tolist()
    ends_at: list[int | None] = []  # index in xy of each edge's arrow tip ("e,"), start ("s,"), first point
    starts_at: list[int | None] = []
    firsts_at: list[int] = []
    pieces: list[int] = []
    piece_start: list[int] = []  # index in xy of each piece's first control point
    at = 0
    for p, c in zip(positions, counts, strict=True):
        e = s = None
        k = at
        while p[0] in "es" and p[1] == ",":
            if p[0] == "e":
                e = k
            else:
                s = k
            k += 1
            p = p[p.index(" ") + 1 :]
        n = (at + c - k - 1) // 3
        ends_at.append(e)
        starts_at.append(s)
        firsts_at.append(k)
        pieces.append(n)
        piece_start.extend(range(k, k + 3 * n, 3))
        at += c
    starts = np.array(piece_start, dtype=int)
    p0, p1, p2, p3 = (xy[starts + j] for j in range(4))
    d = p3 - p0
    tol = 0.5 * np.abs(d).sum(axis=1)
    # control points on the chord (within 0.5 pt): the piece is a straight line
    off1 = np.abs(d[:, 0] * (p1[:, 1] - p0[:, 1]) - d[:, 1] * (p1[:, 0] - p0[:, 0]))
    off2 = np.abs(d[:, 0] * (p2[:, 1] - p0[:, 1]) - d[:, 1] * (p2[:, 0] - p0[:, 0]))
    is_straight = (off1 <= tol) & (off2 <= tol)
    straight = is_straight.tolist()
    curved = ~is_straight
    q0, q1, q2, q3 = p0[curved], p1[curved], p2[curved], p3[curved]
    # samples of the curved pieces only, in piece order
    samples = np.stack([a * q0 + b * q1 + c * q2 + d * q3 for a, b, c, d in _WEIGHTS], axis=1).reshape(-1, 2)
    sample_pts = list(zip(*samples.T.tolist(), strict=True))  # BEZIER_SAMPLES points per curved piece
    pairs = list(
        zip(vals[0::2], vals[1::2], strict=True)
    )  # every point as an (x, y) tuple, made in one C loop
    out: list[tuple[Point, ...]] = []
    piece = 0
    bent = 0
    for e, s, f, n in zip(ends_at, starts_at, firsts_at, pieces, strict=True):
        pts: list[Point] = [pairs[s], pairs[f]] if s is not None else [pairs[f]]
        for j in range(piece, piece + n):
            if straight[j]:
                pts.append(pairs[piece_start[j] + 3])
            else:
                pts.extend(sample_pts[bent : bent + BEZIER_SAMPLES])
                bent += BEZIER_SAMPLES
        piece += n
        if e is not None:
            pts.append(pairs[e])
        out.append(tuple(pts))
    return out


class LayoutReader:
    """Builds a Layout from dot's JSON objects and edges, given in batches in dot's order.

    ``parse_json`` gives it a whole document; ``layout.graphviz.stream`` gives it each run of complete
    elements while dot is still writing the rest, so most of the reading happens before dot has finished.
    """

    def __init__(self, vg: VisibleGraph, names: DotNames, rankdir: str) -> None:
        self.vg, self.names, self.rankdir = vg, names, rankdir
        self.gvid_id: dict[int, str] = {}  # dot's object number → visible node id
        self.placed: list[tuple[str, str, str, str]] = []  # visible id, pos, width, height
        self.boxed: list[tuple[str, str]] = []  # cluster id, bb
        # dot numbers edges by tail node, not in DOT order: they are matched back by (tail, head, label),
        # first come first served (edges with all three equal are interchangeable on screen)
        self.queue: dict[tuple[str, str, str], list[int]] = {}
        for i, ve in enumerate(vg.edges):
            self.queue.setdefault((ve.src, ve.dst, ve.label), []).append(i)
        self.paths: list[EdgePath | None] = [None] * len(vg.edges)
        self.last_edge = -1  # _gvid of the last edge read: edges must come in dot's numbering order

    def objects(self, batch: list[dict[str, Any]]) -> None:
        node_ids, cluster_ids = self.names.nodes, self.names.clusters
        for obj in batch:
            name = obj.get("name", "")
            vid = node_ids.get(name)
            if vid is not None:
                self.gvid_id[obj["_gvid"]] = vid
                self.placed.append((vid, obj["pos"], obj["width"], obj["height"]))
            elif name in cluster_ids and "bb" in obj:
                self.boxed.append((cluster_ids[name], obj["bb"]))

    def edges(self, batch: list[dict[str, Any]]) -> None:
        """Edges in ascending ``_gvid`` (dot's own output order); all objects must have been read before."""
        gvid_id, queue, vg = self.gvid_id, self.queue, self.vg
        order: list[int] = []
        for obj in batch:
            if obj["_gvid"] <= self.last_edge:
                raise GraphvizError("Graphviz edges are not in their numbering order")
            self.last_edge = obj["_gvid"]
        batch = [obj for obj in batch if obj.get("style") != INVISIBLE]  # rank-keeping edges (dot.py)
        for obj in batch:
            key = (gvid_id.get(obj["tail"], ""), gvid_id.get(obj["head"], ""), obj.get("label", ""))
            todo = queue.get(key)
            if not todo or "pos" not in obj:
                raise GraphvizError(f"Graphviz output has an edge the view does not: {key}")
            order.append(todo.pop(0))
        labelled = [obj["lp"] for obj in batch if "lp" in obj]
        nums = _read_numbers(labelled)
        if len(nums) != 2 * len(labelled):
            raise GraphvizError("Graphviz edge label positions are not 2-D points")
        label_at = iter(zip(nums[0::2], nums[1::2], strict=True))
        for i, obj, points in zip(order, batch, spline_polylines([o["pos"] for o in batch]), strict=True):
            ve = vg.edges[i]
            self.paths[i] = EdgePath(
                ve.src, ve.dst, points, ve.label, next(label_at) if "lp" in obj else None
            )

    def layout(self, bb: str) -> Layout:
        """The Layout, once every object and edge has been read; ``bb`` is the graph's bounding box."""
        vg, placed, boxed = self.vg, self.placed, self.boxed
        # the numbers of all cluster boxes ("x0,y0,x1,y1") and of all node boxes ("x,y" + width, height) are
        # read in one orjson call each, not with one float() per token
        nums = _read_numbers(b for _, b in boxed)
        clusters: dict[str, Box] = {
            cid: (nums[4 * k], nums[4 * k + 1], nums[4 * k + 2], nums[4 * k + 3])
            for k, (cid, _) in enumerate(boxed)
        }
        centre_size = np.array(_read_numbers(f"{p},{w},{h}" for _, p, w, h in placed), dtype=float).reshape(
            -1, 4
        )
        centre, half = centre_size[:, :2], centre_size[:, 2:] * 36.0  # sizes are in inches
        # dot gives sizes in inches to 4 decimals: round the box to 1/100 pt so it is not off by 0.0002
        corners = np.round(np.hstack([centre - half, centre + half]), 2).tolist()
        nodes: dict[str, Box] = dict(zip([vid for vid, *_ in placed], map(tuple, corners), strict=True))
        if len(nodes) < len(vg.nodes):
            missing = [v.id for v in vg.nodes if v.id not in nodes]
            raise GraphvizError(
                f"Graphviz output has no position for {len(missing)} node(s), e.g. {missing[0]}"
            )
        edges = [p for p in self.paths if p is not None]
        if len(edges) < len(self.paths):
            raise GraphvizError("Graphviz output is missing some of the view's edges")
        parent: dict[str, str | None] = {v.id: v.parent for v in vg.nodes}
        parent.update({c.id: c.parent for c in vg.clusters})
        x0, y0, x1, y1 = _box(bb)
        return Layout(
            nodes=nodes,
            clusters=clusters,
            parent=parent,
            edges=tuple(edges),
            width=x1 - x0,
            height=y1 - y0,
            rankdir=self.rankdir,
        )


def parse_json(raw: bytes | str, vg: VisibleGraph, names: DotNames, rankdir: str) -> Layout:
    """Read ``dot -Tjson0`` (or ``-Tjson``) output for the DOT built by ``build_dot(vg)``, as a whole."""
    try:
        data: dict[str, Any] = orjson.loads(raw)  # a third of the time json.loads takes on dot's output
    except ValueError as exc:
        raise GraphvizError(f"could not read Graphviz JSON output: {exc}") from None
    reader = LayoutReader(vg, names, rankdir)
    reader.objects(data.get("objects", []))
    reader.edges(sorted(data.get("edges", ()), key=itemgetter("_gvid")))
    return reader.layout(data.get("bb", "0,0,0,0"))
