"""The first picture: a page's initial view, drawn on the server as SVG and sent inside the page's HTML.

A Dash page draws nothing until its scripts have run, the renderer has fetched the layout and React has
mounted: about half a second on a cold browser cache, a floor of Dash's own (bench/bench_dash_floor.py).
The browser paints this picture as soon as the HTML arrives. It is the same geometry and colours as the
plotly figure (Graphviz draws the cached Layout, render/static.py), sits where the graph will be, and a CSS
rule hides it once plotly has drawn. It needs no JavaScript, and it takes no clicks (``pointer-events:
none``): the graph becomes interactive when plotly has drawn, as before.
"""

from __future__ import annotations

import html
import re
from dataclasses import replace

from ..options import DEFAULT_DRAW, DEFAULT_VIEW, DrawOptions, ViewOptions
from ..pipeline import paint_of
from ..render.figure import start_window
from ..render.static import static_image
from ..render.style import get_theme
from ..view_types import ViewSpec
from . import registry, state

PICTURE_ID = "tvd-first-picture"
# Bigger pictures (about 400 boxes and more) would slow the page they are meant to speed up: it has to parse
# them before it runs Dash's scripts. Such pages draw as before, when plotly is ready.
MAX_PICTURE_BYTES = 600_000
_COMMENTS_AND_TITLES = re.compile(r"<!--.*?-->|<title>.*?</title>", re.S)
# Graphviz draws layout point (x, y) at SVG (x + tx, ty - y) inside this group (pad and y flip)
_TRANSLATE = re.compile(r'<g id="graph0"[^>]*translate\(([-\d.]+) ([-\d.]+)\)')
GRAPH_TOP_PX = 130      # a ModelGraph's header, notes and two toolbar rows, above its plot (default fonts)

# Hidden as soon as any plotly graph on the page has drawn (plotly's main-svg appears in the same frame).
STYLE = f"""<style>
#{PICTURE_ID} {{position: absolute; top: 0; left: 0; right: 0; min-height: 100vh; z-index: 5;
  pointer-events: none; padding: 8px; box-sizing: border-box; font: 14px system-ui, sans-serif;}}
#{PICTURE_ID} .tvd-picture {{width: calc(100% - 366px); margin-left: 8px;}}
#{PICTURE_ID} .tvd-picture-head {{position: absolute; top: 8px; left: 8px;}}
body:has(.js-plotly-plot .main-svg) #{PICTURE_ID} {{display: none;}}
</style>"""


def picture_svg(trace_id: str, spec: ViewSpec, draw: DrawOptions) -> bytes:
    """The view drawn by Graphviz from the cached layout, as the SVG export draws it (cached in the trace's
    registry entry)."""
    entry = registry.entry(trace_id)

    def make() -> bytes:
        trace = entry.trace
        vg = state.visible(trace_id, spec)
        return static_image(trace.graph, vg, state.layout_of(trace_id, spec, draw.rankdir), "svg", draw.theme,
                            highlight=draw.highlight, paint=paint_of(trace.graph, vg, draw, trace.paint(vg, draw.theme)))

    return entry.pictures.get((spec, draw), make)


def first_picture_html(trace_id: str, view: ViewOptions = DEFAULT_VIEW, draw: DrawOptions = DEFAULT_DRAW, *,
                       height: str = "72vh", top_px: int = GRAPH_TOP_PX) -> str:
    """The overlay (style, picture, model name) for the view a ModelGraph with these options draws first; ""
    when the picture would be too big to be worth sending. ``top_px``: where the ModelGraph's plot starts
    on the page, so the picture sits where the graph will be drawn."""
    spec, highlight = state.first_view(trace_id, view)
    draw = replace(draw, highlight=highlight if draw.highlight is None else draw.highlight)
    svg = picture_svg(trace_id, spec, draw)
    graph = registry.get(trace_id).graph
    colours = get_theme(draw.theme).page_style()
    page = f"background: {colours['background']}; color: {colours['color']};"
    # the SVG inline (an <img> of it would wait for an image decode behind Dash's scripts), scaled to fit,
    # without Graphviz's comments and tooltips
    body = _COMMENTS_AND_TITLES.sub("", svg.decode("utf-8"))
    body = body[body.index("<svg"):]
    if len(body) > MAX_PICTURE_BYTES:
        return ""
    head_end = body.index(">")
    tag = re.sub(r'\s(width|height)="[^"]*"', "", body[:head_end])
    align = "xMidYMid"
    window = start_window(state.layout_of(trace_id, spec, draw.rankdir))
    shift = _TRANSLATE.search(body)
    if window is not None and shift is not None:     # the window the figure starts at, not the whole view
        tx, ty = float(shift.group(1)), float(shift.group(2))
        x0, y0, x1, y1 = window
        tag = re.sub(r'\sviewBox="[^"]*"', f' viewBox="{x0 + tx:.1f} {ty - y1:.1f} {x1 - x0:.1f} {y1 - y0:.1f}"', tag)
        align = "xMidYMin"
    body = f'{tag} width="100%" height="100%" preserveAspectRatio="{align} meet"' + body[head_end:]
    name = html.escape(graph.model_name or "model")
    # The header line comes after the picture in the page (CSS puts it on top), so when it is painted the
    # whole picture has been parsed: its element timing is the picture's first paint (bench/bench_app.py).
    return (f'{STYLE}<div id="{PICTURE_ID}" style="{page}" aria-hidden="true">'
            f'<div class="tvd-picture" style="height: {html.escape(height)}; margin-top: {int(top_px)}px;">{body}</div>'
            f'<div class="tvd-picture-head" elementtiming="{PICTURE_ID}"><b>{name}</b> · '
            f"{graph.total_params:,} parameters · {graph.op_count:,} ops · loading the interactive view…</div>"
            "</div>")
