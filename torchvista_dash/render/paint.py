"""Per-box paint on top of the kind styles: what colour-by and the diff of two traces change in a picture.

A ``Paint`` says, for some visible boxes and clusters, which fill/outline/text to use instead of the kind's,
which extra hover lines and second label lines to show and which extra traces (a colour bar) to draw. The
picture under the figure (picture.py) and the static export read it the same way, so a coloured or diffed
picture looks the same in both.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from torchvista_dash.view.reach import Reach
from torchvista_dash.view.types import VisibleGraph


@dataclass(frozen=True)
class BoxPaint:
    """A box's fill, outline and text colour; ``dash`` draws the outline dashed (a removed module,
    ghosted)."""

    fill: str
    line: str
    text: str
    dash: str | None = None
    width: float | None = None


@dataclass(frozen=True)
class Paint:
    """What to draw differently, keyed by visible node / cluster id; ``extra`` are plotly trace dicts."""

    boxes: dict[str, BoxPaint] = field(default_factory=dict)
    clusters: dict[str, BoxPaint] = field(default_factory=dict)  # outlines of expanded modules
    hover: dict[str, str] = field(default_factory=dict)  # extra hover lines (already escaped HTML)
    sublabels: dict[str, str] = field(default_factory=dict)  # second label line ("×2 → ×3: +1")
    edge_widths: dict[tuple[str, str], float] = field(default_factory=dict)  # (src, dst) → stroke width, px
    extra: tuple[dict[str, Any], ...] = ()  # colour bar / legend traces, drawn last
    title: str = ""  # a note for the figure ("coloured by FLOPs")
    # the key of a static picture (no plotly colour bar there): (swatch, text), top to bottom
    legend: tuple[tuple[BoxPaint, str], ...] = ()
    # a selection's reach (view/reach.py): boxes and clusters drawn faint, edges drawn lit in ``lit_colour``
    faded: frozenset[str] = frozenset()
    lit_edges: frozenset[tuple[str, str]] = frozenset()
    lit_colour: str | None = None

    def hover_of(self, vid: str, text: str) -> str:
        """A box's hover text with this paint's lines for it appended."""
        extra = self.hover.get(vid)
        return f"{text}<br>{extra}" if extra else text


def reach_paint(vg: VisibleGraph, reach: Reach, highlight: str, base: Paint | None = None) -> Paint:
    """``base`` (or no paint) with ``reach`` lit: its edges in ``highlight``, every box and open module
    outside it faded; its note added to the figure's title."""
    base = base or Paint()
    if not reach:
        return dataclasses.replace(base, title=_joined(base.title, reach.note)) if reach.note else base
    faded = frozenset(n.id for n in vg.nodes if n.id not in reach.boxes) | frozenset(
        c.id for c in vg.clusters if c.id not in reach.clusters
    )
    return dataclasses.replace(
        base,
        faded=faded,
        lit_edges=reach.edges,
        lit_colour=highlight,
        title=_joined(base.title, reach.note),
    )


def _joined(*notes: str) -> str:
    return " · ".join(n for n in notes if n)


def with_sublabels(vg: VisibleGraph, paint: Paint) -> VisibleGraph:
    """``vg`` with ``paint``'s second label lines ("×2 → ×3: +1") in place of the boxes' own."""
    if not paint.sublabels:
        return vg
    nodes = tuple(
        dataclasses.replace(vn, sublabel=paint.sublabels[vn.id]) if vn.id in paint.sublabels else vn
        for vn in vg.nodes
    )
    return dataclasses.replace(vg, nodes=nodes)
