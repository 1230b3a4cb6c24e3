"""The first picture: a page's initial view, painted from the page's HTML before Dash's scripts have run.

A Dash page draws nothing until its scripts have run, the renderer has fetched the layout and React has
mounted: about half a second on a cold browser cache, a floor of Dash's own (bench/bench_dash_floor.py).
The page's HTML carries the first view's own pictures (the figure's layout images, render/svg/picture.py) as
``<img>`` elements of their URLs on the picture route (pictures.py): the browser fetches them at once, beside
Dash's scripts, and paints them where plotly will draw them, at the scale the figure starts at. The HTML grows
by a few hundred bytes whatever the view's size, and plotly then draws the same URLs from the browser's memory
cache. A CSS rule hides the picture once plotly has drawn. No JavaScript; it takes no clicks
(``pointer-events: none``): the graph becomes interactive when plotly has drawn, as it does without it.

Where each image goes is worked out by CSS from the plot's size, which the server does not know: the plot area
is a size container, and an image's scale is ``min(plot width / x range, plot height / y range)`` (plotly's
equal-aspect axes widen the range that has room to spare, about the centre), so its left, top, width and
height are ``calc()``s of the container's ``cqw``/``cqh``. Inside each image its SVG sees the size it is drawn
at, so its level of detail is the figure's.
"""

from __future__ import annotations

import html
from dataclasses import replace
from typing import Any

from torchvista_dash.app.traces import registry, state
from torchvista_dash.model.options import DEFAULT_DRAW, DEFAULT_VIEW, DrawOptions, ViewOptions
from torchvista_dash.render.style import get_theme

PICTURE_ID = "tvd-first-picture"
GRAPH_TOP_PX = 171  # a ModelGraph's header, notes and three toolbar rows, above its plot (default fonts)
_X_ANCHOR = {"left": 0.0, "center": 0.5, "right": 1.0}
_Y_ANCHOR = {"top": 0.0, "middle": 0.5, "bottom": 1.0}
_FIT = {"stretch": "fill", "contain": "contain", "fill": "cover"}
NEAR = 1.0  # images within this many start windows' widths (heights) of it are placed in the first picture

# Hidden as soon as any plotly graph on the page has drawn (plotly's main-svg appears in the same frame).
STYLE = f"""<style>
#{PICTURE_ID} {{position: absolute; top: 0; left: 0; right: 0; min-height: 100vh; z-index: 5;
  pointer-events: none; padding: 8px; box-sizing: border-box; font: 14px system-ui, sans-serif;}}
#{PICTURE_ID} .tvd-picture {{width: calc(100% - 366px); margin-left: 8px; position: relative;}}
#{PICTURE_ID} .tvd-plot {{position: absolute; overflow: hidden; container-type: size;}}
#{PICTURE_ID} .tvd-plot img {{position: absolute; max-width: none; max-height: none;}}
#{PICTURE_ID} .tvd-picture-head {{position: absolute; top: 8px; left: 8px;}}
body:has(.js-plotly-plot .main-svg) #{PICTURE_ID} {{display: none;}}
</style>"""


def _n(v: float) -> str:
    return f"{v:.3f}".rstrip("0").rstrip(".")


def images_html(figure: dict[str, Any]) -> str | None:
    """The plot area (a ``div.tvd-plot`` at the figure's margins) with ``<img>`` elements placing the figure's
    data-coordinate layout images as plotly will draw them, inside a plot area that is a CSS size container
    (whose ``--s`` is the scale, a length per point); None when an image is not a URL (a data URI would bloat
    the page). Only the images on or near the figure's start window are placed (a tiled picture of a big view
    has thousands: the others are not on screen before plotly draws)."""
    lay = figure.get("layout", {})
    (x0, x1), (y0, y1) = lay["xaxis"]["range"], lay["yaxis"]["range"]
    cx, cy, rw, rh = (x0 + x1) / 2, (y0 + y1) / 2, max(x1 - x0, 1e-6), max(y1 - y0, 1e-6)
    near = (x0 - NEAR * rw, y0 - NEAR * rh, x1 + NEAR * rw, y1 + NEAR * rh)
    out = []
    for im in lay.get("images", ()):
        if im.get("visible") is False or im.get("xref") != "x" or im.get("yref") != "y":
            continue
        src = im.get("source")
        if not isinstance(src, str) or src.startswith("data:"):
            return None
        w, h = float(im["sizex"]), float(im["sizey"])
        left = float(im["x"]) - w * _X_ANCHOR.get(im.get("xanchor", "left"), 0.0)
        top = float(im["y"]) + h * _Y_ANCHOR.get(im.get("yanchor", "top"), 0.0)
        if left > near[2] or left + w < near[0] or top < near[1] or top - h > near[3]:
            continue
        style = (
            f"left: calc(50cqw + var(--s) * {_n(left - cx)}); top: calc(50cqh + var(--s) * {_n(cy - top)}); "
            f"width: calc(var(--s) * {_n(w)}); height: calc(var(--s) * {_n(h)}); "
            f"object-fit: {_FIT.get(im.get('sizing', 'contain'), 'contain')};"
        )
        if im.get("opacity") is not None:
            style += f" opacity: {_n(float(im['opacity']))};"
        out.append(
            f'<img src="{html.escape(src)}" alt="" fetchpriority="high" elementtiming="{PICTURE_ID}" '
            f'style="{style}">'
        )
    m = {"l": 0, "r": 0, "t": 0, "b": 0, **lay.get("margin", {})}
    area = (
        f"left: {int(m['l'])}px; right: {int(m['r'])}px; top: {int(m['t'])}px; bottom: {int(m['b'])}px; "
        f"--s: min(calc(100cqw / {_n(rw)}), calc(100cqh / {_n(rh)}));"
    )
    return f'<div class="tvd-plot" style="{area}">' + "".join(out) + "</div>"


def first_picture_html(
    trace_id: str,
    view: ViewOptions = DEFAULT_VIEW,
    draw: DrawOptions = DEFAULT_DRAW,
    *,
    height: str = "72vh",
    top_px: int = GRAPH_TOP_PX,
    picture_base: str | None = None,
) -> str:
    """The overlay (style, picture, model name) for the view a ModelGraph with these options draws first; ""
    when its pictures cannot be referenced by URL (``picture_base`` None: the app serves no picture route).
    ``top_px``: where the ModelGraph's plot starts on the page, so the picture sits where the graph will
    be."""
    spec, highlight = state.first_view(trace_id, view)
    draw = replace(draw, highlight=highlight if draw.highlight is None else draw.highlight)
    ranges = state.start_ranges(state.layout_of(trace_id, spec, draw.rankdir))
    figure = state.figure_with_ranges(
        trace_id,
        spec,
        draw,
        ranges,  # what the ModelGraph starts with
        picture_base=picture_base,
    )
    body = images_html(figure)
    if body is None:
        return ""
    graph = registry.get(trace_id).graph
    colours = get_theme(draw.theme).page_style()
    page = f"background: {colours['background']}; color: {colours['color']};"
    name = html.escape(graph.model_name or "model")
    return (
        f'{STYLE}<div id="{PICTURE_ID}" style="{page}" aria-hidden="true">'
        f'<div class="tvd-picture" style="height: {html.escape(height)}; margin-top: {int(top_px)}px;">'
        f"{body}</div>"
        f'<div class="tvd-picture-head"><b>{name}</b> · '
        f"{graph.total_params:,} parameters · {graph.op_count:,} ops · loading the interactive view…</div>"
        "</div>"
    )
