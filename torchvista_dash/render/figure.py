"""Layout → plotly Figure: the view drawn as one SVG picture, under an invisible layer of click and hover
targets.

Why a picture (bench/bench_render.py measures it against plotly text re-sized per zoom): plotly draws text at
a fixed pixel size and re-lays every text element on each zoom; on views of hundreds of boxes that makes text
either unreadable or spilling, and each zoom slow. The picture (``svg/picture.py``) is plotly layout images in
data coordinates (tiles of a big view, ``svg/tiles.py``), so the browser scales boxes, edges and text
together, and their own CSS drops detail as the user zooms out. No server round trip on zoom, no JavaScript.

On top, in the same coordinates, plotly holds what must react (the hit layer, ``hits.py``; this figure has
every bar, the app sends only those near the viewport):

- ``nodes:labels``: one invisible bar per box, exactly the box (x centre, width, base, height): a click or
  hover anywhere inside a box, corners included, is that box. ``customdata`` is the visible id (graph node id,
  ModuleCall id of a collapsed module, ``fold:...`` id of a folded group); ``hovertext`` its details.
- ``clusters:headers``: one invisible bar per expanded cluster over its whole header row (the ⊖ mark and the
  header text): a click there closes it; the hover shows the whole header, also when the drawn one is
  shortened.
- ``highlight``: an outline around a search hit.

Boxes never overlap and header rows lie above their cluster's contents, so every point has at most one target.
Coordinates are Graphviz points (y up): axis ranges, ``relayoutData`` and the app's viewport shifts all speak
the layout's units. Equal aspect: ``yaxis.scaleanchor = "x"``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import plotly.graph_objects as go
import plotly.io as pio

from torchvista_dash.layout.types import Box, Layout, check_drawable
from torchvista_dash.model.graph import Graph
from torchvista_dash.render import hits, shapes
from torchvista_dash.render.hover import HoverIndex, esc
from torchvista_dash.render.paint import Paint, with_sublabels
from torchvista_dash.render.style import Theme, get_theme
from torchvista_dash.render.svg import picture
from torchvista_dash.render.viewport import NOMINAL_PLOT_PX, PAD, READABLE_SCALE, fit_scale, start_window
from torchvista_dash.view.types import VisibleGraph

# Constant uirevision: Dash keeps the user's zoom across figure updates while it stays the same.
# The app sets ``fig.layout.uirevision`` to something else when it wants the new ranges applied.
UIREVISION = "torchvista_dash"

FAILED_WINDOW = (900.0, 600.0)  # points shown around the failing op in a failed trace's initial view
# points per side of the picture's tiles (render/svg/tiles.py; the fastest zoom step of the sizes
# bench/bench_zoom_parts.py compares)
TILE_PT = 1200.0
SCROLL_CONFIG = {"scrollZoom": True, "displaylogo": False, "doubleClick": "reset"}


def _initial_ranges(graph: Graph, vg: VisibleGraph, layout: Layout, bounds: Box) -> tuple[list, list]:
    """The whole graph, or ``start_window`` when it does not read whole; for a failed trace, a window centred
    on the failing op (or the box that holds it): the smallest one that still shows the whole graph if its
    labels stay drawn, else ``FAILED_WINDOW``."""
    x0, y0, x1, y1 = bounds
    xr, yr = [x0 - PAD, x1 + PAD], [y0 - PAD, y1 + PAD]
    failed = [n.id for n in vg.nodes if n.failed]
    start = start_window(layout, bounds)
    if start is not None and not (graph.error is not None and failed):
        xr, yr = [start[0], start[2]], [start[1], start[3]]
    elif graph.error is not None and failed:
        target = graph.error.node if graph.error.node in layout.nodes else failed[0]
        bx0, by0, bx1, by1 = layout.nodes[target]
        cx, cy = (bx0 + bx1) / 2, (by0 + by1) / 2
        hw, hh = max(cx - x0, x1 - cx) + PAD, max(cy - y0, y1 - cy) + PAD
        if fit_scale((cx - hw, cy - hh, cx + hw, cy + hh)) < READABLE_SCALE:
            hw = min(xr[1] - xr[0], FAILED_WINDOW[0]) / 2
            hh = min(yr[1] - yr[0], FAILED_WINDOW[1]) / 2
        xr, yr = [cx - hw, cx + hw], [cy - hh, cy + hh]
    return [round(v, 1) for v in xr], [round(v, 1) for v in yr]


def make_figure(
    graph: Graph,
    vg: VisibleGraph,
    layout: Layout,
    theme: str = "light",
    *,
    highlight: str | None = None,
    details: bool | None = None,
    labels: bool | None = None,
    uirevision: Any = UIREVISION,
    paint: Paint | None = None,
    tile: float | None = TILE_PT,
    picture_source: Callable[[str], str] = picture.data_uri,
) -> go.Figure:
    """Draw one laid-out view as a plotly Figure; every box and header row is a click target carrying its id.
    (``figure_dict``'s figure, validated by plotly; its arguments are ``figure_dict``'s.)"""
    return go.Figure(
        figure_dict(
            graph,
            vg,
            layout,
            theme,
            highlight=highlight,
            details=details,
            labels=labels,
            uirevision=uirevision,
            paint=paint,
            tile=tile,
            picture_source=picture_source,
        )
    )


def figure_dict(
    graph: Graph,
    vg: VisibleGraph,
    layout: Layout,
    theme: str = "light",
    *,
    highlight: str | None = None,
    details: bool | None = None,
    labels: bool | None = None,
    uirevision: Any = UIREVISION,
    paint: Paint | None = None,
    tile: float | None = TILE_PT,
    picture_source: Callable[[str], str] = picture.data_uri,
) -> dict[str, Any]:
    """``make_figure``'s figure as plain JSON-able dicts (``{"data", "layout"}``), not validated: what the app
    sends (building and validating a ``go.Figure`` of an 80-layer view, then reading it back as dicts, costs
    a cold first figure about a second more; bench/bench_figure_build.py compares the two).

    ``highlight`` outlines one visible node or expanded cluster (a search hit). ``labels=False`` draws no text
    and ``details=False`` no shape lines or edge labels (default for both: drawn, as the zoom allows; hover
    shows them either way). ``paint`` (paint.py) recolours boxes, adds hover lines and a colour bar: colour by
    cost, a diff. ``tile``: the picture is cut into images about this many points square (render/svg/tiles.py:
    a zoom step then costs the browser only the images on screen); None: one image. ``picture_source``: what
    each image's ``source`` is made from its SVG text (default: a self-contained data URI; the app stores
    the SVG and serves it by URL instead, without encoding it first).
    """
    th: Theme = get_theme(theme)
    check_drawable(vg, layout, highlight)
    paint = paint or Paint()
    vg = with_sublabels(vg, paint)
    bounds = picture.extent(layout, 0.0)
    ext = picture.canvas_extent(layout, PAD, NOMINAL_PLOT_PX[0] / NOMINAL_PLOT_PX[1])
    xr, yr = _initial_ranges(graph, vg, layout, bounds)
    show_labels = labels is not False
    show_details = details is not False
    pieces = picture.picture_pieces(
        vg, layout, th, ext, labels=show_labels, details=show_details, paint=paint, tile=tile
    )
    hov = HoverIndex(graph, vg)
    traces = (
        hits.hit_traces(vg, layout, hov, paint) + _highlight_trace(layout, highlight, th) + list(paint.extra)
    )
    notes = list(vg.notes) + ([paint.title] if paint.title else [])
    fig_layout: dict[str, Any] = {
        "template": _template(th.template),
        "showlegend": False,
        "hovermode": "closest",
        "dragmode": "pan",
        "clickmode": "event",
        "margin": {"l": 4, "r": 4, "t": 4, "b": 4},
        "uirevision": uirevision,
        "barmode": "overlay",
        "paper_bgcolor": th.paper,
        "plot_bgcolor": th.paper,
        "hoverlabel": {"align": "left", "font": {"size": 12}},
        "xaxis": {"range": xr, "visible": False, "showgrid": False, "zeroline": False},
        "yaxis": {
            "range": yr,
            "visible": False,
            "showgrid": False,
            "zeroline": False,
            "scaleanchor": "x",
            "scaleratio": 1,
        },
        "images": [
            {
                "source": picture_source(p.svg),
                "xref": "x",
                "yref": "y",
                "x": p.box[0],
                "y": p.box[3],
                "sizex": round(p.box[2] - p.box[0], 1),
                "sizey": round(p.box[3] - p.box[1], 1),
                "xanchor": "left",
                "yanchor": "top",
                "sizing": "stretch",
                "layer": "below",
                "name": "picture",
            }
            for p in pieces
        ],
        "meta": {
            "torchvista_dash": {
                "bounds": [round(v, 1) for v in bounds],
                "picture": [round(v, 1) for v in ext],
                "lod": dict(picture.LOD_SCALE),
                "details": show_details,
                "labels": show_labels,
                "notes": notes,
                "boxes": len(vg.nodes),
                "clusters": len(vg.clusters),
            }
        },
    }
    annotations = (
        [
            {
                "text": esc(" · ".join(notes)),
                "xref": "paper",
                "yref": "paper",
                "x": 0,
                "y": 1,
                "xanchor": "left",
                "yanchor": "top",
                "showarrow": False,
                "font": {"size": 11, "color": th.muted},
            }
        ]
        if notes
        else []
    )
    if paint.legend and not paint.extra:  # a diff's key (colour by cost has its colour bar instead)
        annotations.append(
            {
                "text": "   ".join(
                    f'<span style="color:{esc(bp.line)}">■</span> {esc(text)}' for bp, text in paint.legend
                ),
                "xref": "paper",
                "yref": "paper",
                "x": 1,
                "y": 1,
                "xanchor": "right",
                "yanchor": "top",
                "name": "key",
                "showarrow": False,
                "font": {"size": 12, "color": th.muted},
                "bgcolor": th.paper,
            }
        )
    if annotations:
        fig_layout["annotations"] = annotations
    return {"data": traces, "layout": fig_layout}


@functools.lru_cache(maxsize=8)
def _template(name: str) -> dict[str, Any]:
    """A plotly template by name, as the dicts a validated figure carries (plotly.js knows no template names).
    Shared by every figure: never modified."""
    return pio.templates[name].to_plotly_json()


def _highlight_trace(layout: Layout, highlight: str | None, th: Theme) -> list[dict[str, Any]]:
    if highlight is None:
        return []
    box = layout.nodes.get(highlight) or layout.clusters[highlight]
    hx: list = []
    hy: list = []
    shapes.append_path(
        hx, hy, shapes.rounded_box((box[0] - 3, box[1] - 3, box[2] + 3, box[3] + 3), 6.0), close=True
    )
    return [
        {
            "type": "scatter",
            "name": "highlight",
            "x": hx,
            "y": hy,
            "mode": "lines",
            "line": {"color": th.highlight, "width": 3.5},
            "hoverinfo": "skip",
            "showlegend": False,
        }
    ]
