"""Export buttons: the whole current view (not only the visible area) as HTML, SVG, PNG or JSON."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path
from typing import Any

from dash import dcc

from ..render.export import html_page
from . import registry, state


def _filename(data: dict[str, Any], ext: str) -> str:
    name = registry.get(data["trace"]).graph.model_name or "model"
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name) + f"-view.{ext}"


def current_figure(data: dict[str, Any]) -> Any:
    """The browser's current view as a plotly Figure, framed to show all of it."""
    import plotly.graph_objects as go

    tid = data["trace"]
    spec = state.spec_from_store(data)
    rankdir, theme = data.get("rankdir", "TB"), data.get("theme", "light")
    ranges = state.full_ranges(state.layout_of(tid, spec, rankdir))
    return go.Figure(state.figure_with_ranges(tid, spec, rankdir, theme, data.get("highlight"), ranges))


def static_image(data: dict[str, Any], fmt: str) -> bytes:
    """SVG/PNG drawn by Graphviz from the same geometry as the figure (no browser, no kaleido)."""
    from ..render.static import render_static

    tid = data["trace"]
    spec = state.spec_from_store(data)
    rankdir = data.get("rankdir", "TB")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"view.{fmt}"
        render_static(registry.get(tid).graph, state.visible(tid, spec), state.layout_of(tid, spec, rankdir), path,
                      fmt, data.get("theme", "light"), highlight=data.get("highlight"))
        return path.read_bytes()


def export_current_view(data: dict[str, Any], fmt: str) -> dict[str, Any]:
    """A ``dcc.Download`` payload for one export button."""
    fig = current_figure(data)
    if fmt == "html":
        page = html_page(fig, registry.get(data["trace"]).graph.model_name)
        return dcc.send_string(page, _filename(data, "html"))
    if fmt == "json":
        return dcc.send_string(fig.to_json(), _filename(data, "json"))
    if fmt in ("svg", "png"):
        return dcc.send_bytes(static_image(data, fmt), _filename(data, fmt))
    raise ValueError(f"unknown export format {fmt!r}")
