"""Where things are drawn: a ``Layout`` of plain floats in one coordinate system (y grows upward, as
Graphviz)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from torchvista_dash.view.types import VisibleGraph

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


def check_drawable(vg: VisibleGraph, layout: Layout, highlight: str | None = None) -> None:
    """Raise a ValueError that says what to do unless ``layout`` is ``vg``'s (a box for every visible node
    and cluster) and ``highlight``, if given, is drawn in it: what every drawer (the figure, the static
    export) checks before it draws."""
    missing = [n.id for n in vg.nodes if n.id not in layout.nodes]
    missing += [c.id for c in vg.clusters if c.id not in layout.clusters]
    if missing:
        raise ValueError(
            f"the layout does not match the view: no box for {', '.join(missing[:5])}"
            f"{' …' if len(missing) > 5 else ''}; lay out this same view (layout_view(vg)) before drawing it"
        )
    if highlight is not None and highlight not in layout.nodes and highlight not in layout.clusters:
        raise ValueError(
            f"highlight={highlight!r} is not drawn in this view; pass the id of a visible node "
            "or expanded module (a search result inside a collapsed module: highlight that module)"
        )
