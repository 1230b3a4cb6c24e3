"""The server-side pipeline a browser's view state drives: store → ViewSpec → VisibleGraph → Layout → figure.

Each stage is a pure function of the store, cached in the trace's registry entry (registry.py), so two tabs
on one graph never interfere, repeated views cost nothing and evicting a trace frees all of it. The store
itself (page_state.py), the on-screen geometry (viewport.py) and the background work (precompute.py) are their
own modules; their names are re-exported here because the callbacks use them together.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from torchvista_dash.app.traces import pictures, progress, registry, sharing
from torchvista_dash.app.traces.precompute import Precomputer
from torchvista_dash.layout import layout_view, reporting
from torchvista_dash.layout.types import Layout
from torchvista_dash.model.options import DEFAULT_NODE_BUDGET, DEFAULT_VIEW, DrawOptions, ViewOptions
from torchvista_dash.pipeline import paint_of
from torchvista_dash.render import UIREVISION, figure_dict
from torchvista_dash.render.viewport import (
    MARGIN,
    Ranges,
    anchor_of,
    box_of,
    centre_on,
    full_ranges,
    is_echo,
    keep_inside,
    ranges_from_relayout,
    shift,
    start_ranges,
)
from torchvista_dash.view import build as view_mod
from torchvista_dash.view.types import ViewSpec, VisibleGraph

__all__ = [
    "MARGIN",
    "NODE_BUDGET",
    "Ranges",
    "anchor_of",
    "box_of",
    "centre_on",
    "drawn_figure",
    "drawn_spec",
    "figure_with_ranges",
    "first_view",
    "full_ranges",
    "initial_spec",
    "is_echo",
    "keep_inside",
    "layout_of",
    "precompute_neighbours",
    "precomputer",
    "ranges_from_relayout",
    "shift",
    "start_ranges",
    "uirevision",
    "visible",
]

NODE_BUDGET = DEFAULT_NODE_BUDGET  # the app's budget (tests lower it); beyond it a view auto-collapses
NEIGHBOURS = 12  # views one click away laid out in the background after each answer


def initial_spec(trace_id: str, view: ViewOptions = DEFAULT_VIEW) -> ViewSpec:
    """The first view: ``view.depth`` levels open, the trace's ``default_expanded`` (a diff's changes) and the
    path to the failing op of a failed trace."""
    trace = registry.get(trace_id)
    graph = trace.graph
    spec = view_mod.make_spec(
        graph,
        depth=view.depth,
        expanded=trace.default_expanded,
        fold_repeats=view.fold_repeats,
        show_params=view.show_params,
    )
    if graph.error is not None and graph.error.node is not None and graph.error.node in graph.node_by_id:
        spec = view_mod.expand_to(graph, spec, graph.error.node)
    return spec


def first_view(trace_id: str, view: ViewOptions = DEFAULT_VIEW) -> tuple[ViewSpec, str | None]:
    """The spec a ModelGraph draws first (after any budget collapse) and the visible id it highlights (the
    failing op of a failed trace)."""
    spec = drawn_spec(trace_id, initial_spec(trace_id, view))
    graph = registry.get(trace_id).graph
    highlight = graph.error.node if graph.error is not None else None
    if highlight is not None:
        highlight = view_mod.visible_id_of(graph, visible(trace_id, spec), highlight)
    return spec, highlight


# ---- cached pipeline (one registry entry per trace) ----------------------------------------
def visible(trace_id: str, spec: ViewSpec) -> VisibleGraph:
    entry = registry.entry(trace_id)
    return entry.views.get(
        spec, lambda: view_mod.build_view(entry.trace.graph, spec, node_budget=NODE_BUDGET)
    )


def drawn_spec(trace_id: str, spec: ViewSpec) -> ViewSpec:
    """The spec actually drawn: over the node budget, ``build_view`` collapses deeper calls, and the store
    must hold that spec, or a click on a box the budget closed would toggle the requested state instead."""
    return visible(trace_id, spec).spec


def layout_of(trace_id: str, spec: ViewSpec, rankdir: str) -> Layout:
    work = ("layout", trace_id, spec, rankdir)

    def make() -> Layout:
        vg = visible(trace_id, spec)
        key = sharing.layout_key(trace_id, spec, rankdir, NODE_BUDGET)
        try:
            with reporting(progress.reporter(work)):  # whichever thread lays it out, the waiting page sees
                # made once across the workers sharing a store, and read by the others
                return sharing.shared_layout(key, vg, rankdir, lambda: layout_view(vg, rankdir=rankdir))
        finally:
            progress.finished(work)

    with progress.waiting_for(work, "laying out"):
        return registry.entry(trace_id).layouts.get((spec, rankdir), make)


def drawn_figure(trace_id: str, spec: ViewSpec, draw: DrawOptions) -> pictures.Drawn:
    """The figure as plain JSON-able dicts, its pictures set aside (pictures.py); built once per view, the
    ranges and the pictures' sources are set per request on a copy (``figure_with_ranges``)."""
    entry = registry.entry(trace_id)

    def make() -> pictures.Drawn:
        graph = entry.trace.graph
        vg = visible(trace_id, spec)
        lay = layout_of(trace_id, spec, draw.rankdir)
        paint = paint_of(graph, vg, draw, entry.trace.paint(vg, draw.theme))
        collect = pictures.Collector()
        return collect.drawn(
            figure_dict(graph, vg, lay, paint=paint, picture_source=collect, **draw.for_render())
        )

    if (spec, draw) not in entry.figures:
        # said before the cache: a request waiting for another thread's drawing of this figure says so too
        layout_of(trace_id, spec, draw.rankdir)
        progress.stage(f"drawing {len(visible(trace_id, spec).nodes):,} boxes")
    return entry.figures.get((spec, draw), make)


def figure_with_ranges(
    trace_id: str, spec: ViewSpec, draw: DrawOptions, ranges: Ranges, *, picture_base: str | None
) -> dict[str, Any]:
    """The view's figure at ``ranges``, every hit bar in it. Its pictures are URLs under ``picture_base`` (the
    picture route of the app the figure is for), or data URIs for ``None`` (a figure that stands alone)."""
    base = drawn_figure(trace_id, spec, draw)
    lay = dict(base.figure.get("layout", {}))
    lay["xaxis"] = {**lay.get("xaxis", {}), "range": list(ranges[0]), "autorange": False}
    lay["yaxis"] = {**lay.get("yaxis", {}), "range": list(ranges[1]), "autorange": False}
    lay.pop("uirevision", None)  # our ranges must win over plotly's remembered zoom
    if base.pictures:
        lay["images"] = base.images(picture_base)
    return {"data": base.figure.get("data", []), "layout": lay}


def uirevision(rev: int) -> str:
    """The figure's ``uirevision`` after the ``rev``-th view change: new at each one, so its ranges win over
    the user's zoom; the same in a hit-bar Patch, so plotly keeps the zoom (hitlayer.py)."""
    return f"{UIREVISION}:{rev}"


# ---- the likely next clicks, in the background ---------------------------------------------
precomputer = Precomputer()  # no thread until the first submission; it watches the requests of installed apps


def precompute_neighbours(trace_id: str, spec: ViewSpec, draw: DrawOptions, limit: int = NEIGHBOURS) -> None:
    """Queue the views one click away (each collapsed module opened) for the background worker, so a click
    usually finds its layout and figure cached (precompute.py bounds and deduplicates the queue)."""
    entry = registry.entry(trace_id)
    draw = replace(draw, highlight=None)  # a click clears the highlight
    candidates = [n.id for n in visible(trace_id, spec).nodes if n.kind in ("module", "folded")][:limit]
    for vid in reversed(candidates):  # the first boxes (the top of the picture) run first

        def work(vid: str = vid) -> None:
            nxt = drawn_spec(trace_id, view_mod.toggle(entry.trace.graph, spec, vid))
            if (nxt, draw) not in entry.figures:
                drawn_figure(trace_id, nxt, draw)

        precomputer.submit((trace_id, spec, draw, vid), work)
