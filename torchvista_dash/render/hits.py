"""The hit layer: invisible bars over every box and header row (clicks and hover anywhere on them), and the
part of it worth sending for one viewport.

Plotly redraws every bar at every relayout, on screen or not: at thousands of boxes that is most of a zoom
step (``bench/bench_zoom_parts.py``, column "hit bars only"). A figure with a server behind it (the app)
therefore carries only the bars near the viewport that are drawn big enough to click (``cull``), and gets the
bars of a new viewport when the user zooms or pans far (app/actions/hitlayer.py). A figure without a server
(exports, ``Trace.figure()``) keeps every bar (``hit_traces``).

Both work on the figure's plain trace dicts, so the app culls a cached figure's JSON without plotly objects.
"""

from __future__ import annotations

import math
from typing import Any

from torchvista_dash.layout.types import Box, Layout
from torchvista_dash.render.hover import HoverIndex
from torchvista_dash.render.paint import Paint
from torchvista_dash.view.types import VisibleGraph

NODES = "nodes:labels"  # one bar per box, exactly the box
HEADERS = "clusters:headers"  # one bar per expanded cluster, its whole header row
EDGES = "edges:hover"  # small bars along each edge: its own hover (what it carries, its two ends)
HIT_TRACES = (EDGES, NODES, HEADERS)
EDGE_BAR = 7.0  # points: an edge's hover targets, squares on its line
EDGE_STEP = 28.0  # points between two of them
EDGE_BARS_PER_EDGE = 3
EDGE_BAR_BUDGET = 6_000  # past it, one target per edge (its middle): a figure's bars stay bounded
HEADER_ROW = 20.0  # points: a cluster's header row (the layout leaves about 26 above its contents)
_HIDDEN = "rgba(0,0,0,0)"
# the per-bar arrays of a hit trace, all culled alike
_ARRAYS = ("x", "width", "base", "y", "customdata", "hovertext")


def header_rows(vg: VisibleGraph, layout: Layout) -> dict[str, Box]:
    """Each expanded cluster's header row: its full width, from its top edge down to just above its
    contents."""
    tops: dict[str, float] = {}
    for vid, parent in layout.parent.items():
        box = layout.nodes.get(vid) or layout.clusters.get(vid)
        if parent is not None and box is not None:
            tops[parent] = max(tops.get(parent, box[3]), box[3])
    out: dict[str, Box] = {}
    for cl in vg.clusters:
        x0, y0, x1, y1 = layout.clusters[cl.id]
        bottom = y1 - HEADER_ROW
        if cl.id in tops:
            bottom = max(bottom, min(tops[cl.id] + 1.0, y1 - 8.0))
        out[cl.id] = (x0, max(bottom, y0), x1, y1)
    return out


def bars(name: str, boxes: list[Box], ids: list[str], hover: list[str]) -> dict[str, Any]:
    """Invisible bars exactly covering ``boxes``: plotly's hover finds the bar the pointer is inside."""
    return {
        "type": "bar",
        "name": name,
        "orientation": "v",
        "x": [round((b[0] + b[2]) / 2, 2) for b in boxes],
        "width": [round(b[2] - b[0], 2) for b in boxes],
        "base": [round(b[1], 2) for b in boxes],
        "y": [round(b[3] - b[1], 2) for b in boxes],
        "marker": {"color": _HIDDEN, "line": {"width": 0}},
        "textposition": "none",
        "hovertext": hover,
        "hoverinfo": "text",
        "customdata": ids,
        "showlegend": False,
    }


def _along(points: tuple[tuple[float, float], ...], step: float, most: int) -> list[tuple[float, float]]:
    """Points every ``step`` along a polyline: at most ``most``, spread over it, at least its middle."""
    lengths = [math.dist(a, b) for a, b in zip(points, points[1:], strict=False)]
    total = sum(lengths)
    if total <= 0:
        return []
    n = max(1, min(most, int(total // step)))
    out: list[tuple[float, float]] = []
    targets = [total * (k + 0.5) / n for k in range(n)]
    walked, seg = 0.0, 0
    for t in targets:
        while seg < len(lengths) - 1 and walked + lengths[seg] < t:
            walked += lengths[seg]
            seg += 1
        f = 0.0 if lengths[seg] == 0 else (t - walked) / lengths[seg]
        (ax, ay), (bx, by) = points[seg], points[seg + 1]
        out.append((ax + f * (bx - ax), ay + f * (by - ay)))
    return out


def _inside(p: tuple[float, float], box: Box | None, pad: float) -> bool:
    return box is not None and box[0] - pad <= p[0] <= box[2] + pad and box[1] - pad <= p[1] <= box[3] + pad


def edge_bars(vg: VisibleGraph, layout: Layout, hov: HoverIndex) -> dict[str, Any] | None:
    """Small invisible squares along every edge, off the boxes at its ends, whose hover tells the edge;
    clicking one does nothing (no customdata id)."""
    edges = {(e.src, e.dst): e for e in vg.edges}
    paths = [p for p in layout.edges if (p.src, p.dst) in edges and len(p.points) >= 2]
    if not paths:
        return None
    most = EDGE_BARS_PER_EDGE if len(paths) * EDGE_BARS_PER_EDGE <= EDGE_BAR_BUDGET else 1
    labels = {n.id: n.label for n in vg.nodes} | {c.id: c.label for c in vg.clusters}
    half = EDGE_BAR / 2
    boxes: list[Box] = []
    texts: list[str] = []
    for p in paths:
        text = hov.edge_text(edges[(p.src, p.dst)], labels)
        ends = (layout.nodes.get(p.src), layout.nodes.get(p.dst))
        for x, y in _along(p.points, EDGE_STEP, most):
            if _inside((x, y), ends[0], half) or _inside((x, y), ends[1], half):
                continue
            boxes.append((x - half, y - half, x + half, y + half))
            texts.append(text)
    if not boxes:
        return None
    return bars(EDGES, boxes, [""] * len(boxes), texts)


def hit_traces(vg: VisibleGraph, layout: Layout, hov: HoverIndex, paint: Paint) -> list[dict[str, Any]]:
    """Every edge's hover targets, then every box's and every header row's bar (``EDGES``, ``NODES``,
    ``HEADERS``: boxes drawn over edges win where they meet; a trace only when it has bars)."""
    along = edge_bars(vg, layout, hov)
    out = [along] if along is not None else []
    if vg.nodes:
        out.append(
            bars(
                NODES,
                [layout.nodes[vn.id] for vn in vg.nodes],
                [vn.id for vn in vg.nodes],
                [paint.hover_of(vn.id, hov.node_text(vn)) for vn in vg.nodes],
            )
        )
    if vg.clusters:
        rows = header_rows(vg, layout)
        out.append(
            bars(
                HEADERS,
                [rows[c.id] for c in vg.clusters],
                [c.id for c in vg.clusters],
                [paint.hover_of(c.id, hov.cluster_text(c)) for c in vg.clusters],
            )
        )
    return out


def is_hit_trace(trace: dict[str, Any]) -> bool:
    return trace.get("type") == "bar" and trace.get("name") in HIT_TRACES


def count(data: list[dict[str, Any]]) -> int:
    """How many boxes and header rows have bars in a figure's ``data`` (what decides whether the app culls
    them; an edge's hover targets go along with the rest, but do not count)."""
    return sum(len(t.get("x") or ()) for t in data if is_hit_trace(t) and t.get("name") != EDGES)


def cull(
    data: list[dict[str, Any]], view: Box, floor: float, cap: int, pads: tuple[float, ...] = (1.0, 0.25)
) -> tuple[list[dict[str, Any]], Box, float, bool]:
    """The hit traces of ``data`` cut down to the bars that overlap ``view`` widened by ``pads[0]`` viewports
    on each side and whose shorter side is at least ``floor`` points: (new data, the window they cover, the
    floor kept, whether ``cap`` cut them).

    At most ``cap`` bars: past it the window narrows to the next of ``pads``, then the floor rises (the
    biggest bars stay; bars tied at the cut all go). So whatever the view's size the bars sent are bounded,
    and what they cover is always "every bar overlapping the window whose shorter side is at least the floor
    kept". Other traces are returned as they are.
    """
    vx0, vy0, vx1, vy1 = view
    w, h = vx1 - vx0, vy1 - vy0
    for pad in pads:
        # rounded outwards: the window never covers less than was culled for
        window = (_down(vx0 - pad * w), _down(vy0 - pad * h), _up(vx1 + pad * w), _up(vy1 + pad * h))
        picks = _overlapping(data, window, floor)
        if sum(len(p) for p in picks.values()) <= cap:
            break
    capped = sum(len(p) for p in picks.values()) > cap
    if capped:
        sides = sorted((side for p in picks.values() for _, side in p), reverse=True)
        floor = min((s for s in sides[:cap] if s > sides[cap]), default=sides[0] * 2 + 1.0)
        picks = {i: [(j, s) for j, s in p if s >= floor] for i, p in picks.items()}
    out = []
    for i, trace in enumerate(data):
        if i not in picks:
            out.append(trace)
            continue
        keep = [j for j, _ in picks[i]]
        out.append({**trace, **{k: [trace[k][j] for j in keep] for k in _ARRAYS if k in trace}})
    return out, window, floor, capped


def _down(v: float) -> float:
    return math.floor(v * 100) / 100


def _up(v: float) -> float:
    return math.ceil(v * 100) / 100


def _overlapping(data: list[dict[str, Any]], window: Box, floor: float) -> dict[int, list[tuple[int, float]]]:
    """Per hit trace (by index in ``data``): its bars overlapping ``window`` with both sides ≥ ``floor``, as
    (index in the trace, shorter side)."""
    wx0, wy0, wx1, wy1 = window
    out: dict[int, list[tuple[int, float]]] = {}
    for i, trace in enumerate(data):
        if not is_hit_trace(trace):
            continue
        kept = []
        for j, (x, bw, base, bh) in enumerate(
            zip(trace["x"], trace["width"], trace["base"], trace["y"], strict=True)
        ):
            side = bw if bw < bh else bh
            if side >= floor and x + bw / 2 >= wx0 and x - bw / 2 <= wx1 and base + bh >= wy0 and base <= wy1:
                kept.append((j, side))
        out[i] = kept
    return out
