"""Open, then fit: after a click opens a module, zoom out just enough to show what opened, and back on close.

Pure geometry on the Layout's coordinates (points), so it is tested without a browser. The browser's zoom is
``scale`` (pixels per point): a click on a box reports the box's drawn size (plotly's ``bbox`` in clickData),
which gives it exactly; without one the nominal plot size of the first view stands in.
"""

from __future__ import annotations

from typing import Any

from torchvista_dash.layout.types import Box
from torchvista_dash.render import viewport
from torchvista_dash.render.svg.picture import LOD_SCALE
from torchvista_dash.render.viewport import Ranges

FIT_MARGIN = 16.0  # points kept around an opened cluster when the view zooms out to show it
# never zoom out so far that the opened module's op names are hidden; the click measures the real scale, so a
# small margin keeps the view off the threshold itself (a CSS max-width query includes it: at exactly the
# threshold every op name of a just-opened layer can be hidden)
MIN_FIT_SCALE = LOD_SCALE["o"] * 1.02


def clicked_scale(click: dict[str, Any] | None, box: Box | None) -> float | None:
    """Pixels per point of the plot when ``click`` hit ``box``: the drawn width of the box over its width."""
    if not click or not click.get("points") or box is None:
        return None
    bbox = click["points"][0].get("bbox") or {}
    try:
        px = float(bbox["x1"]) - float(bbox["x0"])
    except (KeyError, TypeError, ValueError):
        return None
    width = box[2] - box[0]
    return px / width if px > 0 and width > 0 else None


def fit_opened(
    ranges: Ranges,
    anchor: tuple[float, float],
    box: Box,
    scale: float | None,
    min_scale: float = MIN_FIT_SCALE,
) -> tuple[Ranges, float]:
    """``ranges`` zoomed out about ``anchor`` (which keeps its place on screen) just enough that ``box`` shows
    whole, never below ``min_scale`` px per point; (new ranges, zoom factor ≥ 1; 1 = unchanged)."""
    s = scale if scale and scale > 0 else viewport.scale(ranges)  # the nominal plot's, when no click told
    ax, ay = anchor
    (x0, x1), (y0, y1) = ranges
    need = 1.0
    # the anchor is the opened cluster's top centre: its header stays put, the rest must come into view
    for a, lo, hi, b_lo, b_hi in (
        (ax, x0, x1, box[0] - FIT_MARGIN, box[2] + FIT_MARGIN),
        (ay, y0, y1, box[1] - FIT_MARGIN, box[3]),
    ):
        if a - lo > 1e-9:
            need = max(need, (a - b_lo) / (a - lo))
        if hi - a > 1e-9:
            need = max(need, (b_hi - a) / (hi - a))
    k = min(need, max(1.0, s / min_scale))
    if k <= 1.0 + 1e-6:
        return ranges, 1.0
    return [[ax - k * (ax - x0), ax + k * (x1 - ax)], [ay - k * (ay - y0), ay + k * (y1 - ay)]], k


def same_ranges(a: Ranges | None, b: Ranges | None, tol: float = 1e-3) -> bool:
    """Two views equal up to rounding (plotly reports ranges back with float noise)."""
    if not a or not b:
        return False
    return all(
        abs(p - q) <= tol * max(1.0, abs(q))
        for ra, rb in zip(a, b, strict=True)
        for p, q in zip(ra, rb, strict=True)
    )
