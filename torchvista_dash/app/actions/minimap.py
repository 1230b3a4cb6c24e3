"""The minimap: a small figure of the whole view in a corner of the plot, the visible area drawn on it as a
rectangle; a click on it centres the main view there, a box dragged on it shows that box.

A second ``dcc.Graph`` and plain plotly (no JavaScript of ours): the same pictures as the main figure (URLs
the browser has fetched already), invisible bars in a grid that take the clicks (plotly reports a click only
on a trace: the bar under the pointer says where), and one rectangle shape that the answers move.
"""

from __future__ import annotations

from typing import Any

from dash import Patch

from torchvista_dash.app.traces import state
from torchvista_dash.model.options import DrawOptions
from torchvista_dash.render.style import get_theme
from torchvista_dash.render.viewport import Ranges
from torchvista_dash.view.types import ViewSpec

GRID = 32  # click cells per side: a click lands within 1/32 of the view of where it was aimed
MINIMAP_PX = (220, 170)  # its size on the page (CSS pixels)
CONFIG: Any = {"displayModeBar": False, "scrollZoom": False, "doubleClick": False}
_HIDDEN = "rgba(0,0,0,0)"


def _full(trace_id: str, spec: ViewSpec, draw: DrawOptions) -> Ranges:
    return state.full_ranges(state.layout_of(trace_id, spec, draw.rankdir))


def _window(ranges: Ranges, colour: str) -> dict[str, Any]:
    (x0, x1), (y0, y1) = ranges
    return {
        "type": "rect",
        "xref": "x",
        "yref": "y",
        "x0": min(x0, x1),
        "x1": max(x0, x1),
        "y0": min(y0, y1),
        "y1": max(y0, y1),
        "line": {"color": colour, "width": 2},
        "fillcolor": "rgba(245,158,11,0.12)",
    }


def _cells(full: Ranges) -> dict[str, Any]:
    """GRID × GRID invisible bars over the whole view; each carries its centre, where a click there goes."""
    (x0, x1), (y0, y1) = full
    w, h = (x1 - x0) / GRID, (y1 - y0) / GRID
    xs, bases, centres = [], [], []
    for i in range(GRID):
        for j in range(GRID):
            xs.append(round(x0 + (i + 0.5) * w, 2))
            bases.append(round(y0 + j * h, 2))
            centres.append([round(x0 + (i + 0.5) * w, 2), round(y0 + (j + 0.5) * h, 2)])
    return {
        "type": "bar",
        "name": "minimap:cells",
        "x": xs,
        "base": bases,
        "y": [round(h, 2)] * len(xs),
        "width": [round(w, 2)] * len(xs),
        "marker": {"color": _HIDDEN, "line": {"width": 0}},
        "customdata": centres,
        "hoverinfo": "none",
        "showlegend": False,
    }


def figure(
    trace_id: str, spec: ViewSpec, draw: DrawOptions, ranges: Ranges, *, picture_base: str | None
) -> dict[str, Any]:
    """The minimap of a view shown at ``ranges``: its pictures, the click cells and the visible area."""
    full = _full(trace_id, spec, draw)
    main = state.figure_with_ranges(trace_id, spec, draw, full, picture_base=picture_base)
    th = get_theme(draw.theme)
    layout = {
        "images": main["layout"].get("images", []),
        "xaxis": {"range": full[0], "visible": False, "fixedrange": False},
        "yaxis": {"range": full[1], "visible": False, "scaleanchor": "x", "scaleratio": 1},
        "margin": {"l": 0, "r": 0, "t": 0, "b": 0},
        "paper_bgcolor": th.paper,
        "plot_bgcolor": th.paper,
        "dragmode": "zoom",
        "shapes": [_window(ranges, th.highlight)],
        "showlegend": False,
        "barmode": "overlay",
        "uirevision": f"minimap:{state.uirevision(0)}",
    }
    return {"data": [_cells(full)], "layout": layout}


def moved(trace_id: str, spec: ViewSpec, draw: DrawOptions, ranges: Ranges, *, reset: bool = False) -> Any:
    """A Patch moving the visible area's rectangle to ``ranges`` (and, after a box dragged on the minimap,
    its own axes back to the whole view)."""
    fig: Any = Patch()
    fig["layout"]["shapes"] = [_window(ranges, get_theme(draw.theme).highlight)]
    if reset:
        full = _full(trace_id, spec, draw)
        fig["layout"]["xaxis"]["range"] = full[0]
        fig["layout"]["yaxis"]["range"] = full[1]
    return fig


def centred(ranges: Ranges, point: Any) -> Ranges | None:
    """``ranges`` moved so ``point`` (a click cell's centre) is in the middle; None for anything else."""
    if not (isinstance(point, (list, tuple)) and len(point) == 2):
        return None
    try:
        x, y = float(point[0]), float(point[1])
    except (TypeError, ValueError):
        return None
    mx, my = (ranges[0][0] + ranges[0][1]) / 2, (ranges[1][0] + ranges[1][1]) / 2
    return state.shift(ranges, x - mx, y - my)


def dragged(relayout: dict[str, Any] | None, ranges: Ranges) -> Ranges | None:
    """The box a drag on the minimap drew (plotly's zoom there; a drag along one axis only keeps the other
    axis of ``ranges``), or None for any other relayout."""
    if not relayout:
        return None
    out: list[list[float]] = [list(ranges[0]), list(ranges[1])]
    found = False
    for i, axis in enumerate(("xaxis", "yaxis")):
        try:
            out[i] = sorted([float(relayout[f"{axis}.range[0]"]), float(relayout[f"{axis}.range[1]"])])
            found = True
        except (KeyError, TypeError, ValueError):
            continue
    return out if found else None
