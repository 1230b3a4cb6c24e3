"""Per-box paint on top of the kind styles: what colour-by and the diff of two traces change in a picture.

A ``Paint`` says, for some visible boxes and clusters, which fill/outline/text to use instead of the kind's,
which extra hover lines to add and which extra traces (a colour bar, a legend) to draw. The figure and the
static export read it the same way, so a coloured or diffed picture looks the same in both.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..layout.types import Layout
from . import shapes


@dataclass(frozen=True)
class BoxPaint:
    """A box's fill, outline and text colour; ``dash`` draws the outline dashed (a removed module, ghosted)."""

    fill: str
    line: str
    text: str
    dash: str | None = None
    width: float | None = None


@dataclass(frozen=True)
class Paint:
    """What to draw differently, keyed by visible node / cluster id; ``extra`` are plotly trace dicts."""

    boxes: dict[str, BoxPaint] = field(default_factory=dict)
    clusters: dict[str, BoxPaint] = field(default_factory=dict)   # outlines of expanded modules
    hover: dict[str, str] = field(default_factory=dict)           # extra hover lines (already escaped HTML)
    sublabels: dict[str, str] = field(default_factory=dict)       # second label line ("×2 → ×3: +1")
    extra: tuple[dict[str, Any], ...] = ()                        # colour bar / legend traces, drawn last
    title: str = ""                                               # a note for the figure ("coloured by FLOPs")


def cluster_outline_traces(paint: Paint, layout: Layout, radius: float, gl: bool) -> list[dict[str, Any]]:
    """One outline trace per distinct cluster paint (changed / added / removed clusters marked)."""
    groups: dict[BoxPaint, tuple[list, list]] = {}
    for cid, bp in sorted(paint.clusters.items()):
        box = layout.clusters.get(cid)
        if box is None:
            continue
        shapes.append_path(*groups.setdefault(bp, ([], [])), shapes.rounded_box(box, radius), close=True)
    out = []
    for i, (bp, (xs, ys)) in enumerate(groups.items()):
        line: dict[str, Any] = {"color": bp.line, "width": bp.width or 2.5}
        if bp.dash:
            line["dash"] = bp.dash
        out.append({"type": "scattergl" if gl else "scatter", "name": f"clusters:paint{i}", "x": xs, "y": ys,
                    "mode": "lines", "line": line, "fill": "toself", "fillcolor": bp.fill,
                    "hoverinfo": "skip", "showlegend": False})
    return out
