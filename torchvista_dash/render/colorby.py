"""Colour by a metric (``model/metrics.py``: FLOPs, parameters, output bytes, time, ...), with a colour bar.

A collapsed call is coloured by its inside combined as the metric says (a cost's total, a statistic's
worst), a folded run by its members', an op by its own value. Costs span orders of magnitude (an embedding
lookup next to an MLP), so their scale is logarithmic (a bounded metric's is linear), in a few steps (one
filled trace per step keeps the picture a handful of traces); boxes whose value is 0 are drawn neutral so
the heavy ones stand out. Hover gives the value and, for a metric that adds up, its share of the model's
total.
"""

from __future__ import annotations

import math
from typing import Any

from plotly.colors import sample_colorscale

from torchvista_dash.model.graph import Graph
from torchvista_dash.model.metrics import Metric, MetricValues, UserValues, resolve
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


def box_value(values: MetricValues, graph: Graph, vn: VisibleNode) -> float | None:
    """The value a visible box stands for: an op's own, a collapsed call's (its inside combined as the metric
    says), a folded run's (its members'); a grouped input or output has none."""
    node = graph.node_by_id.get(vn.id)
    if node is not None:
        return values.node.get(node.id)
    if vn.kind in ("module", "folded"):
        return values.of_calls(vn.members or (vn.id,))
    return None


def colour_paint(graph: Graph, vg: VisibleGraph, color_by: str | UserValues, theme: str = "light") -> Paint:
    """The Paint that colours ``vg``'s boxes by ``color_by`` (a name in ``metrics.REGISTRY``, or the user's
    numbers), plus its colour bar."""
    spec, values_all = resolve(graph, color_by)
    total = (values_all.total or 0.0) if spec.share else 0.0
    values = {vn.id: box_value(values_all, graph, vn) for vn in vg.nodes}
    positive = [v for v in values.values() if v is not None and v > 0]
    colours = step_colours()
    neutral = _NEUTRAL.get(theme, _NEUTRAL["light"])
    lo, hi = _scale_ends(positive, spec.scale)
    boxes: dict[str, BoxPaint] = {}
    hover: dict[str, str] = {}
    name = spec.label
    for vid, v in values.items():
        if v is None:
            continue
        if v > 0:
            c = colours[_step(v, lo, hi, spec.scale)]
            boxes[vid] = BoxPaint(c, c, _text_on(c))
        else:
            boxes[vid] = neutral
        hover[vid] = _share_line(name, v, total, spec)
    for cl in vg.clusters:  # an expanded call: its value in the header's hover
        v = values_all.call.get(cl.id)
        if v is not None:
            hover[cl.id] = _share_line(name, v, total, spec)
    extra = (_colour_bar(lo, hi, spec, colours, spec.scale, spec.levels),) if positive and vg.nodes else ()
    widths = edge_widths(vg) if spec.edge_widths else {}
    return Paint(
        boxes=boxes,
        hover=hover,
        extra=extra,
        edge_widths=widths,
        title=f"coloured by {name}",
        legend=(
            _level_legend(spec.levels, lo, hi, spec, colours, neutral, values)
            if spec.levels
            else _legend(lo, hi, spec, colours, neutral, positive, values, spec.scale)
        ),
    )


def _text(v: float | None, spec: Metric) -> str:
    return "–" if v is None else spec.format(v)


def _step(v: float, lo: float, hi: float, scale: str) -> int:
    """The colour step of a positive value."""
    return max(0, min(STEPS - 1, round((_at(v, scale) - lo) / (hi - lo) * (STEPS - 1))))


def _level_legend(
    levels: tuple[float, ...],
    lo: float,
    hi: float,
    spec: Metric,
    colours: list[str],
    neutral: BoxPaint,
    values: dict[str, float | None],
) -> tuple[tuple[BoxPaint, str], ...]:
    """The key of a metric with a few named levels (NaN/Inf: first, downstream, finite): the levels shown."""
    shown = set(values.values())
    out = []
    for level in sorted(levels, reverse=True):
        if level not in shown:
            continue
        paint = neutral
        if level > 0:
            c = colours[_step(level, lo, hi, "linear")]
            paint = BoxPaint(c, c, _text_on(c))
        out.append((paint, _text(level, spec)))
    return tuple(out)


def _at(v: float, scale: str) -> float:
    """Where a value sits on the colour scale: its log10 on a log scale, itself on a linear one."""
    return math.log10(v) if scale == "log" else v


def _from(x: float, scale: str) -> float:
    return 10**x if scale == "log" else x


def _scale_ends(positive: list[float], scale: str) -> tuple[float, float]:
    """The colour scale's two ends: the smallest and the largest positive value (a linear scale starts at 0);
    never equal, so every value has a step."""
    if not positive:
        return 0.0, 1.0
    lo = _at(min(positive), scale) if scale == "log" else 0.0
    hi = _at(max(positive), scale)
    if hi - lo < 1e-9:
        lo -= 1.0 if scale == "log" else max(abs(hi), 1.0)
    return lo, hi


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
    spec: Metric,
    colours: list[str],
    neutral: BoxPaint,
    positive: list[float],
    values: dict[str, float | None],
    scale: str = "log",
) -> tuple[tuple[BoxPaint, str], ...]:
    """The static picture's key: each step's colour with the value at its centre (the top one is the largest
    box's value, the bottom one the smallest's unless every box costs the same), then the neutral colour if
    some box cost nothing."""
    if not positive:
        return ()
    k_max = STEPS - 1
    out = []
    for k in range(k_max, -1, -1):
        v = max(positive) if k == k_max else _from(lo + (hi - lo) * k / k_max, scale)
        c = colours[k]
        out.append((BoxPaint(c, c, _text_on(c)), _text(v, spec)))
    if any(v == 0 for v in values.values()):
        out.append((neutral, "0"))
    return tuple(out)


def _share_line(name: str, v: float | None, total: float, spec: Metric) -> str:
    if v is None:
        return f"<b>{esc(name)}:</b> –"
    share = f" ({100.0 * v / total:.1f} % of the model)" if total > 0 else ""
    return f"<b>{esc(name)}:</b> {esc(_text(v, spec))}{share}"


def _colour_bar(
    lo: float, hi: float, spec: Metric, colours: list[str], scale: str = "log", levels: tuple[float, ...] = ()
) -> dict[str, Any]:
    """An invisible marker trace whose only job is to show the colour bar (log ticks at powers of ten, five
    linear ones, or a metric's named levels; human units)."""
    ticks: list[float]
    if levels:
        ticks = [v for v in levels if lo - 1e-9 <= v <= hi + 1e-9]
    elif scale == "log":
        ticks = [p for p in range(math.floor(lo), math.ceil(hi) + 1) if lo - 1e-9 <= p <= hi + 1e-9]
    else:
        ticks = [lo + (hi - lo) * i / 4 for i in range(5)]
    if len(ticks) < 2:
        ticks = [lo, hi]
    steps = [[i / (len(colours) - 1), c] for i, c in enumerate(colours)]
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
            "colorscale": steps,
            "showscale": True,
            "size": 1,
            "opacity": 0,
            "colorbar": {
                "title": {"text": spec.label, "side": "right"},
                "thickness": 12,
                "len": 0.6,
                "tickvals": ticks,
                "ticktext": [_text(_from(t, scale), spec) for t in ticks],
                "x": 1.0,
                "xanchor": "right",
                "y": 0.5,
                "outlinewidth": 0,
            },
        },
    }


__all__ = ["box_value", "colour_paint", "edge_widths", "step_colours"]
