"""Colour by cost: each box filled by its FLOPs, parameters, output bytes or time, with a colour bar.

A collapsed call is coloured by its totals (every op inside it), a folded run by the run's total, an op by
its own cost. Costs span orders of magnitude (an embedding lookup next to an MLP), so the scale is
logarithmic, in a few steps (one filled trace per step keeps the picture a handful of traces); boxes that
cost nothing are drawn neutral so the heavy ones stand out. Hover gives the value and its share of the
model's total.
"""

from __future__ import annotations

import math
from typing import Any

from plotly.colors import sample_colorscale

from torchvista_dash.model.costs import METRIC_LABELS as LABELS
from torchvista_dash.model.costs import METRICS, Costs, check_metric, costs_of, human
from torchvista_dash.model.graph import Graph
from torchvista_dash.render.hover import esc
from torchvista_dash.render.paint import BoxPaint, Paint
from torchvista_dash.view.types import VisibleGraph, VisibleNode

STEPS = 9
COLORSCALE = "YlOrRd"
SCALE_RANGE = (0.08, 0.92)  # the part of the scale used: its palest end is hard to tell from white
EDGE_WIDTHS = (0.8, 5.0)  # px: the lightest and the heaviest edge when colouring by bytes
_NEUTRAL = {
    "light": BoxPaint("#f3f4f7", "#c3c9d3", "#6b7380"),
    "dark": BoxPaint("#2a2e35", "#4a515c", "#9aa3ae"),
}


def step_colours() -> list[str]:
    lo, hi = SCALE_RANGE
    return sample_colorscale(COLORSCALE, [lo + (hi - lo) * i / (STEPS - 1) for i in range(STEPS)])


def _text_on(rgb: str) -> str:
    """Dark text on light fills, white on dark ones (relative luminance)."""
    r, g, b = (int(float(v)) for v in rgb[rgb.index("(") + 1 : rgb.index(")")].split(",")[:3])
    lum = 0.2126 * r + 0.7152 * g + 0.0722 * b
    return "#1b1b1b" if lum > 140 else "#ffffff"


def box_value(costs: Costs, graph: Graph, vn: VisibleNode, metric: str) -> float | None:
    """The cost a visible box stands for: an op's own, a collapsed call's total, a folded run's total."""
    node = graph.node_by_id.get(vn.id)
    if node is not None:
        if node.kind == "op" or (metric == "params" and node.kind == "parameter"):
            return costs.of_node(node, metric)
        return None
    if vn.kind in ("module", "folded"):
        return costs.of_calls(vn.members or (vn.id,), metric)
    return None


def colour_paint(graph: Graph, vg: VisibleGraph, metric: str, theme: str = "light") -> Paint:
    """The Paint that colours ``vg``'s boxes by ``metric`` (flops, params, bytes, time), plus its colour
    bar."""
    check_metric(graph, metric)
    costs = costs_of(graph)
    total = costs.model_total(metric) or 0.0
    values = {vn.id: box_value(costs, graph, vn, metric) for vn in vg.nodes}
    positive = [v for v in values.values() if v is not None and v > 0]
    colours = step_colours()
    neutral = _NEUTRAL.get(theme, _NEUTRAL["light"])
    lo = math.log10(min(positive)) if positive else 0.0
    hi = math.log10(max(positive)) if positive else 1.0
    if hi - lo < 1e-9:
        lo -= 1.0
    boxes: dict[str, BoxPaint] = {}
    hover: dict[str, str] = {}
    name = LABELS[metric]
    for vid, v in values.items():
        if v is None:
            continue
        if v > 0:
            k = round((math.log10(v) - lo) / (hi - lo) * (STEPS - 1))
            c = colours[max(0, min(STEPS - 1, k))]
            boxes[vid] = BoxPaint(c, c, _text_on(c))
        else:
            boxes[vid] = neutral
        hover[vid] = _share_line(name, v, total, metric)
    for cl in vg.clusters:  # an expanded call: its total in the header's hover
        v = costs.of_calls((cl.id,), metric)
        if v is not None:
            hover[cl.id] = _share_line(name, v, total, metric)
    extra = (_colour_bar(vg, lo, hi, metric, colours),) if positive and vg.nodes else ()
    widths = edge_widths(vg) if metric == "bytes" else {}
    return Paint(
        boxes=boxes,
        hover=hover,
        extra=extra,
        edge_widths=widths,
        title=f"coloured by {name}",
        legend=_legend(lo, hi, metric, colours, neutral, positive, values),
    )


def edge_widths(vg: VisibleGraph) -> dict[tuple[str, str], float]:
    """Each edge's width by the bytes it carries, on a log scale from ``EDGE_WIDTHS[0]`` to ``[1]``: where
    the activations are big (a 1×8×50257 logits tensor beside a 1×8 mask) shows at a glance."""
    sized = [(e.src, e.dst, e.nbytes) for e in vg.edges if e.nbytes > 0]
    if not sized:
        return {}
    lo, hi = math.log10(min(b for *_, b in sized)), math.log10(max(b for *_, b in sized))
    thin, thick = EDGE_WIDTHS
    span = hi - lo
    return {
        (s, d): round(thin + (thick - thin) * ((math.log10(b) - lo) / span if span > 1e-9 else 1.0), 1)
        for s, d, b in sized
    }


def _legend(
    lo: float,
    hi: float,
    metric: str,
    colours: list[str],
    neutral: BoxPaint,
    positive: list[float],
    values: dict[str, float | None],
) -> tuple[tuple[BoxPaint, str], ...]:
    """The static picture's key: each step's colour with the value at its centre (the top one is the largest
    box's value, the bottom one the smallest's unless every box costs the same), then the neutral colour if
    some box cost nothing."""
    if not positive:
        return ()
    k_max = STEPS - 1
    out = []
    for k in range(k_max, -1, -1):
        v = max(positive) if k == k_max else 10 ** (lo + (hi - lo) * k / k_max)
        c = colours[k]
        out.append((BoxPaint(c, c, _text_on(c)), human(v, metric)))
    if any(v == 0 for v in values.values()):
        out.append((neutral, "0"))
    return tuple(out)


def _share_line(name: str, v: float | None, total: float, metric: str) -> str:
    if v is None:
        return f"<b>{esc(name)}:</b> –"
    share = f" ({100.0 * v / total:.1f} % of the model)" if total > 0 else ""
    return f"<b>{esc(name)}:</b> {esc(human(v, metric))}{share}"


def _colour_bar(vg: VisibleGraph, lo: float, hi: float, metric: str, colours: list[str]) -> dict[str, Any]:
    """An invisible marker trace whose only job is to show the colour bar (log ticks, human units)."""
    first = math.floor(lo)
    ticks = [p for p in range(first, math.ceil(hi) + 1) if lo - 1e-9 <= p <= hi + 1e-9]
    if len(ticks) < 2:
        ticks = [lo, hi]
    scale = [[i / (len(colours) - 1), c] for i, c in enumerate(colours)]
    return {
        "type": "scatter",
        "name": "colorbar",
        "x": [None],
        "y": [None],
        "mode": "markers",
        "hoverinfo": "skip",
        "showlegend": False,
        "marker": {
            "color": [lo],
            "cmin": lo,
            "cmax": hi,
            "colorscale": scale,
            "showscale": True,
            "size": 1,
            "opacity": 0,
            "colorbar": {
                "title": {"text": LABELS[metric], "side": "right"},
                "thickness": 12,
                "len": 0.6,
                "tickvals": ticks,
                "ticktext": [human(10**t, metric) for t in ticks],
                "x": 1.0,
                "xanchor": "right",
                "y": 0.5,
                "outlinewidth": 0,
            },
        },
    }


__all__ = ["LABELS", "METRICS", "box_value", "colour_paint", "edge_widths", "step_colours"]
