"""Where things are drawn: a ``Layout`` of plain floats in one coordinate system (y grows upward, as
Graphviz)."""

from __future__ import annotations

from dataclasses import dataclass

Box = tuple[float, float, float, float]  # x0, y0, x1, y1 with x0 < x1 and y0 < y1
Point = tuple[float, float]


@dataclass(frozen=True)
class EdgePath:
    src: str
    dst: str
    points: tuple[Point, ...]  # polyline from the tail (at src's box) to the arrow tip (at dst's box)
    label: str = ""
    label_pos: Point | None = None


@dataclass(frozen=True)
class Layout:
    nodes: dict[str, Box]  # visible node id → box
    clusters: dict[str, Box]  # expanded ModuleCall id → box
    parent: dict[str, str | None]  # node or cluster id → id of the cluster it sits directly in
    edges: tuple[EdgePath, ...]
    width: float
    height: float
    rankdir: str = "TB"
