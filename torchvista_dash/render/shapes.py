"""Outline polygons for node shapes and arrowheads, in Graphviz points (data units).

Shapes are plain polygons so that every box of one style goes into a single filled Scatter
path (``None`` between boxes): one SVG element per style instead of one per node.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from torchvista_dash.layout.types import Box, Point

ARROW_LENGTH = 8.0  # points
ARROW_HALF_WIDTH = 3.5
DOUBLE_INSET = 3.0  # folded groups: the inner border's inset


def _r(v: float) -> float:
    return round(v, 1)


def _arc(cx: float, cy: float, r: float, a0: float, a1: float, steps: int) -> list[Point]:
    return [
        (cx + r * math.cos(a0 + (a1 - a0) * i / steps), cy + r * math.sin(a0 + (a1 - a0) * i / steps))
        for i in range(steps + 1)
    ]


def _rounded(box: Box, r: float, steps: int) -> list[Point]:
    x0, y0, x1, y1 = box
    r = max(0.0, min(r, (x1 - x0) / 2, (y1 - y0) / 2))
    if r == 0:
        return [(x0, y0), (x1, y0), (x1, y1), (x0, y1)]
    h = math.pi / 2
    pts = _arc(x1 - r, y0 + r, r, -h, 0, steps)
    pts += _arc(x1 - r, y1 - r, r, 0, h, steps)
    pts += _arc(x0 + r, y1 - r, r, h, 2 * h, steps)
    pts += _arc(x0 + r, y0 + r, r, 2 * h, 3 * h, steps)
    return pts


def outline(shape: str, box: Box) -> list[Point]:
    """The closed outline (first point not repeated) of ``shape`` inscribed in ``box``."""
    x0, y0, x1, y1 = box
    w, h = x1 - x0, y1 - y0
    cy = (y0 + y1) / 2
    if shape == "rounded":
        return _rounded(box, min(6.0, w / 4, h / 4), 2)
    if shape == "pill":
        return _rounded(box, h / 2, 4)
    if shape == "hexagon":
        d = min(h * 0.3, w / 4)
        return [(x0, cy), (x0 + d, y0), (x1 - d, y0), (x1, cy), (x1 - d, y1), (x0 + d, y1)]
    if shape == "octagon":
        c = min(h / 4, w / 4)
        return [
            (x0 + c, y0),
            (x1 - c, y0),
            (x1, y0 + c),
            (x1, y1 - c),
            (x1 - c, y1),
            (x0 + c, y1),
            (x0, y1 - c),
            (x0, y0 + c),
        ]
    # "rect", "double" and anything unknown: a plain rectangle
    return [(x0, y0), (x1, y0), (x1, y1), (x0, y1)]


def rounded_box(box: Box, radius: float) -> list[Point]:
    """A cluster's rounded rectangle."""
    return _rounded(box, radius, 3)


def inset(box: Box, d: float = DOUBLE_INSET) -> Box:
    x0, y0, x1, y1 = box
    d = min(d, (x1 - x0) / 4, (y1 - y0) / 4)
    return (x0 + d, y0 + d, x1 - d, y1 - d)


def arrowhead(points: Sequence[Point]) -> list[Point] | None:
    """A triangle whose tip is the polyline's last point, pointing along its last non-zero segment."""
    if len(points) < 2:
        return None
    tx, ty = points[-1]
    for px, py in reversed(points[:-1]):
        dx, dy = tx - px, ty - py
        n = math.hypot(dx, dy)
        if n > 1e-9:
            break
    else:
        return None
    ux, uy = dx / n, dy / n
    bx, by = tx - ux * ARROW_LENGTH, ty - uy * ARROW_LENGTH
    return [
        (tx, ty),
        (bx - uy * ARROW_HALF_WIDTH, by + ux * ARROW_HALF_WIDTH),
        (bx + uy * ARROW_HALF_WIDTH, by - ux * ARROW_HALF_WIDTH),
    ]


def append_path(xs: list[float | None], ys: list[float | None], pts: Sequence[Point], close: bool) -> None:
    """Append one polygon/polyline to a multi-part Scatter path, ``None``-separated."""
    if not pts:
        return
    for x, y in pts:
        xs.append(_r(x))
        ys.append(_r(y))
    if close:
        xs.append(_r(pts[0][0]))
        ys.append(_r(pts[0][1]))
    xs.append(None)
    ys.append(None)
