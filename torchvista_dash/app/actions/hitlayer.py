"""The hit bars the app sends: those near the viewport and big enough to click, renewed as the user zooms or
pans.

Plotly redraws every hit bar at every relayout (render/hits.py), so a big view's zoom step and every click's
redraw grew with the view's size. The app's figures carry instead, for a view of at least ``MIN_CULLED`` bars,
the bars overlapping the viewport padded by one viewport on each side whose shorter side is drawn at least
``MIN_PX`` / ``ZOOM_SLACK`` pixels; at most ``MAX_BARS`` (past it, a narrower window, then only the biggest).
Their ``hits`` store says what they cover. A relayout
event that leaves that window, or zooms in far enough that smaller boxes become clickable, is answered with a
``Patch`` of the hit traces alone: the figure's ``uirevision`` stays, so plotly keeps the user's zoom (the
view-changing answers of update_view set a new one, so their ranges apply).

The plot's size in pixels is not sent by Dash; the scale is taken for the biggest plot assumed (``PLOT_PX``),
so the bars kept are never too few: at worst a bar drawn a pixel tall is sent. Smaller views keep every bar
and cost no round trip. Dash orders the answers: the main store is an input here, so a cull waits for a view
change in flight, and a view change's answer makes Dash drop an older cull's answer still on its way.
"""

from __future__ import annotations

from typing import Any

from dash import Patch, no_update

from torchvista_dash.app.traces import state
from torchvista_dash.app.traces.page_state import PageState
from torchvista_dash.layout.types import Box
from torchvista_dash.model.options import DrawOptions
from torchvista_dash.render import hits, viewport
from torchvista_dash.render.viewport import Ranges
from torchvista_dash.view.types import ViewSpec

MIN_CULLED = 1000  # bars: a smaller view keeps them all (as render/svg/tiles.py keeps one image below 1,000)
MIN_PX = 3.0  # a bar whose shorter side is drawn smaller is not a click target anyone aims at
ZOOM_SLACK = 2.0  # bars down to MIN_PX / ZOOM_SLACK are sent: zooming in 2x needs no new bars
PADS = (1.0, 0.25)  # viewports of bars sent on each side of the viewport (the second: past MAX_BARS)
MAX_BARS = 1500  # at most this many bars per figure, whatever the view
PLOT_PX = (2560.0, 1600.0)  # the biggest plot assumed (CSS pixels)

# the ``hits`` store: {"rev", "all"} or {"rev", "window", "floor", "scale", "capped"}
Hits = dict[str, Any]


def _view(ranges: Ranges) -> Box:
    (x0, x1), (y0, y1) = ranges
    return (min(x0, x1), min(y0, y1), max(x0, x1), max(y0, y1))


def culled(data: list[dict[str, Any]], ranges: Ranges, rev: int) -> tuple[list[dict[str, Any]], Hits]:
    """A figure's ``data`` with the hit bars worth sending at ``ranges``, and the ``hits`` record of them."""
    if hits.count(data) < MIN_CULLED:
        return data, {"rev": rev, "all": True}
    scale = viewport.scale(ranges, PLOT_PX)
    out, window, floor, capped = hits.cull(data, _view(ranges), MIN_PX / (ZOOM_SLACK * scale), MAX_BARS, PADS)
    return out, {"rev": rev, "window": list(window), "floor": floor, "scale": scale, "capped": capped}


def covers(record: Hits | None, ranges: Ranges, rev: int) -> bool:
    """Whether the bars ``record`` describes are all the figure needs at ``ranges``: every bar overlapping the
    viewport that is drawn at least ``MIN_PX`` (or, where ``MAX_BARS`` cut them, the same bars as at a zoom no
    closer than theirs)."""
    if not record or record.get("rev") != rev:
        return False
    if record.get("all"):
        return True
    x0, y0, x1, y1 = _view(ranges)
    wx0, wy0, wx1, wy1 = record["window"]
    if not (wx0 <= x0 and wy0 <= y0 and x1 <= wx1 and y1 <= wy1):
        return False
    scale = viewport.scale(ranges, PLOT_PX)
    if record.get("capped"):
        return scale <= record["scale"] * (1 + 1e-6)
    return MIN_PX / scale >= record["floor"] * (1 - 1e-6)


def _cull_patch(data: list[dict[str, Any]], ranges: Ranges, rev: int, fig: Any = None) -> tuple[Any, Hits]:
    out, record = culled(data, ranges, rev)
    if record.get("all"):
        return (no_update if fig is None else fig), record
    fig = Patch() if fig is None else fig
    for i, trace in enumerate(out):
        if hits.is_hit_trace(trace):
            fig["data"][i] = trace
    return fig, record


# ---- the app's figures ------------------------------------------------------------------------
def sent_figure(
    trace_id: str,
    spec: ViewSpec,
    draw: DrawOptions,
    ranges: Ranges,
    rev: int,
    *,
    picture_base: str | None = None,
) -> tuple[dict[str, Any], Hits]:
    """The figure a ModelGraph is sent at ``ranges`` (its ``rev``-th view change), with only the hit bars
    worth sending there, and the ``hits`` record of them. Its pictures are URLs under ``picture_base`` (the
    app's picture route, ``picture_routes.base_url``), or data URIs for None."""
    fig = state.figure_with_ranges(trace_id, spec, draw, ranges, picture_base=picture_base)
    data, record = culled(fig["data"], ranges, rev)
    return {"data": data, "layout": {**fig["layout"], "uirevision": state.uirevision(rev)}}, record


def patch(
    trace_id: str, spec: ViewSpec, draw: DrawOptions, ranges: Ranges, rev: int, fig: Any = None
) -> tuple[Any, Hits]:
    """A Patch replacing the figure's hit traces by those worth sending at ``ranges`` (added to ``fig``, a
    Patch, when given), and their record. Nothing else: the axes stay where the user put them. ``no_update``
    (or ``fig``) for a view that keeps every bar."""
    return _cull_patch(state.drawn_figure(trace_id, spec, draw).figure.get("data", []), ranges, rev, fig)


def renew(relayout: dict[str, Any] | None, page: PageState | None, record: Hits | None) -> tuple[Any, Any]:
    """The answer to a relayout event (``relayout``) or to a new store (``relayout`` None: the figure just
    sent, at the store's ranges): (figure Patch, hits record), or no_update for both when the bars the
    browser holds cover the view."""
    if page is None or page.pending:
        return no_update, no_update
    rev = page.rev
    if record and record.get("all") and record.get("rev") == rev:
        return no_update, no_update  # a small view: every bar is there
    tid, spec, draw = page.trace, page.spec, page.draw
    ranges = page.ranges
    if relayout:
        ranges = state.ranges_from_relayout(
            relayout, ranges, state.full_ranges(state.layout_of(tid, spec, draw.rankdir))
        )
    if covers(record, ranges, rev):
        return no_update, no_update
    return patch(tid, spec, draw, ranges, rev)
