"""Export buttons: the whole current view (not only the visible area) as HTML, SVG or PNG, and the trace
itself as JSON (the file ``load_trace`` and ``serve`` read: a picture can be redrawn from it, not the other
way)."""

from __future__ import annotations

import re
from typing import Any

from dash import dcc

from torchvista_dash.app.traces import registry, state
from torchvista_dash.app.traces.page_state import PageState
from torchvista_dash.render.static.graphviz import static_image as draw_static
from torchvista_dash.render.static.html import html_page


def _filename(page: PageState, ext: str, suffix: str = "-view") -> str:
    name = registry.get(page.trace).graph.model_name or "model"
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name) + f"{suffix}.{ext}"


def current_figure(page: PageState) -> dict[str, Any]:
    """The browser's current view as a plotly figure (JSON-able dicts), framed to show all of it."""
    tid, spec, draw = page.trace, page.spec, page.draw
    ranges = state.full_ranges(state.layout_of(tid, spec, draw.rankdir))
    return state.figure_with_ranges(tid, spec, draw, ranges, picture_base=None)  # the file stands alone


def static_image(page: PageState, fmt: str) -> bytes:
    """SVG/PNG drawn by Graphviz from the same geometry as the figure (no browser, no kaleido)."""
    tid, spec, draw = page.trace, page.spec, page.draw
    return draw_static(
        registry.get(tid).graph,
        state.visible(tid, spec),
        state.layout_of(tid, spec, draw.rankdir),
        fmt,
        draw.theme,
        highlight=draw.highlight,
    )


def export_current_view(page: PageState, fmt: str) -> dict[str, Any]:
    """A ``dcc.Download`` payload for one export button."""
    if fmt == "json":
        return dcc.send_bytes(registry.get(page.trace).graph.to_bytes(), _filename(page, "json", "-trace"))
    fig = current_figure(page)
    if fmt == "html":
        text = html_page(fig, registry.get(page.trace).graph.model_name)
        return dcc.send_string(text, _filename(page, "html"))
    if fmt in ("svg", "png"):
        return dcc.send_bytes(static_image(page, fmt), _filename(page, fmt))
    raise ValueError(f"unknown export format {fmt!r}")
