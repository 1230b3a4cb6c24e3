"""The ModelGraph callbacks: pattern-matching (MATCH on ``aio_id``), registered once per process.

``dash.callback`` puts callbacks in a global list that the first app to start moves into itself;
``ensure_registered`` puts them back when a later app (a second server in one process, a notebook
next to a user's dashboard) needs them, so creating a ModelGraph is all the setup there is.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, replace
from typing import Any

import dash
from dash import MATCH, Input, Output, Patch, State, ctx, html, no_update
from dash import _callback as dash_callback_registry

from .. import view as view_mod
from ..options import depth_from_text
from ..render.style import get_theme
from ..view_types import ViewSpec
from . import registry, state, zoom
from .details import details, error_text
from .ids import ids
from .search import browse, search

_lock = threading.Lock()
_keys: set[str] = set()


def clicked_id(click: dict[str, Any] | None) -> str | None:
    """The visible id carried in ``customdata`` by the clicked point, if any."""
    if not click or not click.get("points"):
        return None
    cd = click["points"][0].get("customdata")
    if isinstance(cd, (list, tuple)):
        cd = cd[0] if cd else None
    return cd if isinstance(cd, str) and cd else None


def root_style(theme: str) -> dict[str, str]:
    """The ModelGraph's own box: the theme's page colours (the figure's), padding and font."""
    return {**get_theme(theme).page_style(), "padding": "8px", "fontFamily": "system-ui, sans-serif"}


def root_class(theme: str) -> str:
    """The ModelGraph's classes: ``tvd-dark`` lets the stylesheet (assets/tvd.css) dress the toolbar's controls
    and, on a served page, the whole page in the theme."""
    return f"tvd-model-graph tvd-{theme}"


@dataclass(frozen=True)
class NextView:
    """The view after one user action. ``zoom_back``: the zoom to return to when the module that an open click
    zoomed out for is closed again without the user moving meanwhile (``{"id", "before", "after"}``)."""

    spec: ViewSpec
    rankdir: str
    theme: str
    highlight: str | None
    ranges: state.Ranges
    zoom_back: dict[str, Any] | None = None


def next_view(trigger: str | None, value: Any, data: dict[str, Any], relayout: dict[str, Any] | None
              ) -> tuple[ViewSpec, str, str, str | None, state.Ranges] | None:
    """The view after one user action: (spec, rankdir, theme, highlight, ranges); None if nothing changes.

    A pure function of the browser's state, so it is tested without a browser.
    """
    nv = step(trigger, value, data, relayout)
    return None if nv is None else (nv.spec, nv.rankdir, nv.theme, nv.highlight, nv.ranges)


def step(trigger: str | None, value: Any, data: dict[str, Any], relayout: dict[str, Any] | None,
         click: dict[str, Any] | None = None) -> NextView | None:
    """``next_view`` with the zoom memory; ``click`` (plotly's clickData) tells the plot's scale."""
    tid = data["trace"]
    graph = registry.get(tid).graph
    spec = state.spec_from_store(data)
    rankdir, theme, highlight = data.get("rankdir", "TB"), data.get("theme", "light"), data.get("highlight")
    old_layout = state.layout_of(tid, spec, rankdir)
    sent = data.get("sent") or [data["ranges"]]
    fresh = relayout != data.get("relayout") and not state.is_echo(relayout, sent)
    seen = relayout if fresh else None     # a stale event, or plotly echoing our own ranges, is not a zoom
    ranges = state.ranges_from_relayout(seen, data["ranges"], state.full_ranges(old_layout))
    new_spec, fit, zoom_back = spec, False, None
    if trigger == "graph":
        vid = value
        vg = state.visible(tid, spec)
        boxes = {n.id: n for n in vg.nodes}
        clusters = {c.id for c in vg.clusters}
        if vid not in clusters and (vid not in boxes or boxes[vid].kind not in ("module", "folded")):
            return None                                   # an op, input or output: details only
        new_spec = view_mod.toggle(graph, spec, vid)
        new_layout = state.layout_of(tid, new_spec, rankdir)
        before = state.anchor_of(old_layout, vid)
        opened = vid if vid in new_layout.clusters else None
        after = state.anchor_of(new_layout, vid)
        if after is None and vid in boxes and boxes[vid].members:   # an unfolded group: its first call
            opened = boxes[vid].members[0] if boxes[vid].members[0] in new_layout.clusters else None
            after = state.anchor_of(new_layout, boxes[vid].members[0])
        back = data.get("zoom_back") or {}
        if vid in clusters and back.get("id") == vid and not fresh and zoom.same_ranges(back.get("after"), ranges):
            ranges = back["before"]                        # closed where it was opened: the user's own zoom
        elif before is not None and after is not None:
            seen_ranges = ranges
            ranges = state.shift(ranges, after[0] - before[0], after[1] - before[1])
            if opened is not None:
                scale = zoom.clicked_scale(click, old_layout.nodes.get(vid))
                ranges, k = zoom.fit_opened(ranges, after, new_layout.clusters[opened], scale)
                ranges = state.keep_inside(ranges, after)
                if k > 1.0:
                    zoom_back = {"id": opened, "before": seen_ranges, "after": ranges}
            else:
                ranges = state.keep_inside(ranges, after)
        highlight = None
    elif trigger in ("expand_all", "collapse_all", "depth"):
        if trigger == "depth" and value == view_mod.CUSTOM:
            return None
        depth = {"expand_all": None, "collapse_all": 0}.get(trigger) if trigger != "depth" else depth_from_text(value)
        opts: dict[str, Any] = {"fold_repeats": spec.fold_repeats, "show_params": spec.show_params}
        new_spec = (view_mod.expand_everything(graph, **opts) if depth is None    # folded repeats too
                    else view_mod.make_spec(graph, depth=depth, **opts))
        fit = True
    elif trigger == "options":
        value = value or []
        new_spec = replace(spec, fold_repeats="fold" in value, show_params="params" in value)
        fit = True
    elif trigger == "direction":
        rankdir, fit = value, True
    elif trigger == "theme":
        theme = value
    elif trigger == "search":
        if not value:
            highlight = None
        else:
            new_spec = view_mod.expand_to(graph, spec, value)
            highlight = view_mod.visible_id_of(graph, state.visible(tid, new_spec), value)
            ranges = state.centre_on(ranges, state.layout_of(tid, new_spec, rankdir), highlight)
    elif trigger == "fit":
        fit = True
    elif trigger == "color_by":
        pass                                  # the same view, painted otherwise (``_apply`` sets it)
    else:
        return None
    if fit:
        ranges = state.full_ranges(state.layout_of(tid, new_spec, rankdir))
    return NextView(new_spec, rankdir, theme, highlight, ranges, zoom_back)


def with_controls(data: dict[str, Any], options: list[str] | None, direction: str | None,
                  theme: str | None) -> dict[str, Any]:
    """The store with the toolbar's current values: they are always current in the browser, while the store
    may predate an action whose answer has not arrived yet (two quick actions would otherwise lose one)."""
    out = dict(data)
    if options is not None:
        out["fold"], out["params"] = "fold" in options, "params" in options
    if direction in ("TB", "LR"):
        out["rankdir"] = direction
    if theme in ("light", "dark"):
        out["theme"] = theme
    return out


def _apply(trigger: str | None, value: Any, data: dict[str, Any], relayout: dict[str, Any] | None,
           current: dict[str, Any] | None = None, shown_depth: Any = None,
           click: dict[str, Any] | None = None) -> tuple:
    """The six outputs of ``update_view`` for one action (the seventh, the search box, is its own); ``data`` is the store as the browser last drew it,
    ``current`` the same with the toolbar's current values, ``shown_depth`` the depth control's value,
    ``click`` the clickData of a click (its box's drawn size tells the plot's scale)."""
    result = step(trigger, value, current if current is not None else data, relayout, click)
    if result is None:
        return no_update, no_update, no_update, no_update, no_update, no_update
    spec, rankdir, theme, highlight, ranges = (result.spec, result.rankdir, result.theme, result.highlight,
                                               result.ranges)
    tid = data["trace"]
    spec = state.drawn_spec(tid, spec)
    old_draw = state.draw_from_store(data)
    draw = state.draw_from_store(data, rankdir=rankdir, theme=theme, highlight=highlight,
                                 **({"color_by": value or None} if trigger == "color_by" else {}))
    new_data = {**data, **state.spec_to_store(spec), **state.draw_to_store(draw), "ranges": ranges,
                "relayout": relayout, "zoom_back": result.zoom_back,
                "found": value if trigger == "search" and value else None,    # its details follow (show_found)
                "sent": ([ranges] + list(data.get("sent") or [data["ranges"]]))[:4]}
    old_spec = state.spec_from_store(data)
    if (spec, draw) == (old_spec, old_draw):
        fig: Any = Patch()                  # only the ranges move: send two numbers, not the figure
        fig["layout"]["xaxis"]["range"] = ranges[0]
        fig["layout"]["yaxis"]["range"] = ranges[1]
    else:
        fig = state.figure_with_ranges(tid, spec, draw, ranges)
    # unchanged outputs are not sent: each one sent costs the browser a React update on every click
    new_notes = state.visible(tid, spec).notes
    notes = (no_update if new_notes == state.visible(tid, old_spec).notes
             else [html.Div(n) for n in new_notes])
    same_theme = draw.theme == old_draw.theme
    style = no_update if same_theme else root_style(draw.theme)
    css_class = no_update if same_theme else root_class(draw.theme)
    state.precompute_neighbours(tid, spec, draw)
    depth = view_mod.depth_of(registry.get(tid).graph, spec)   # the control shows the view's state ("custom")
    return fig, new_data, notes, style, (no_update if depth == shown_depth else depth), css_class


def details_for(trigger: str | None, value: Any, data: dict[str, Any]) -> Any:
    """The details panel after one action: the clicked box or the chosen search hit (no_update otherwise)."""
    if trigger not in ("graph", "search") or not value:
        return no_update
    tid = data["trace"]
    members: tuple[str, ...] = ()
    if value.startswith(view_mod.FOLD_PREFIX):
        node = next((n for n in state.visible(tid, state.spec_from_store(data)).nodes if n.id == value), None)
        members = node.members if node is not None else ()
    return details(tid, value, members)


def _define() -> None:
    @dash.callback(
        Output(ids.graph(MATCH), "figure"),
        Output(ids.store(MATCH), "data"),
        Output(ids.notes(MATCH), "children"),
        Output(ids.root(MATCH), "style"),
        Output(ids.depth(MATCH), "value"),
        Output(ids.root(MATCH), "className"),
        Output(ids.search(MATCH), "value"),
        Input(ids.graph(MATCH), "clickData"),
        Input(ids.expand_all(MATCH), "n_clicks"),
        Input(ids.collapse_all(MATCH), "n_clicks"),
        Input(ids.depth(MATCH), "value"),
        Input(ids.options(MATCH), "value"),
        Input(ids.direction(MATCH), "value"),
        Input(ids.theme(MATCH), "value"),
        Input(ids.search(MATCH), "value"),
        Input(ids.fit(MATCH), "n_clicks"),
        Input(ids.color_by(MATCH), "value"),
        State(ids.store(MATCH), "data"),
        State(ids.graph(MATCH), "relayoutData"),
        prevent_initial_call=True,
    )
    def update_view(click, _ea, _ca, depth, options, direction, theme, search, _fit, color_by, data, relayout):
        trigger = ctx.triggered_id["subcomponent"] if isinstance(ctx.triggered_id, dict) else None
        value = {"graph": clicked_id(click), "depth": depth, "options": options, "direction": direction,
                 "theme": theme, "search": search, "color_by": color_by}.get(trigger)
        # a chosen search hit is shown (centred, highlighted, in the details), then the box is emptied: a box
        # holding a value puts the cursor on that option when reopened, and the next typing would be lost
        cleared = None if trigger == "search" and search else no_update
        try:
            return *_apply(trigger, value, data, relayout, with_controls(data, options, direction, theme), depth,
                           click if trigger == "graph" else None), cleared
        except Exception as exc:   # shown in the page, not lost in a server log
            return (no_update, no_update, error_text(f"{type(exc).__name__}: {exc}", className="tvd-app-error"),
                    no_update, no_update, no_update, cleared)

    # The details panel has its own callbacks: their answer is drawn after (not with) the graph's.
    @dash.callback(
        Output(ids.details(MATCH), "children"),
        Input(ids.graph(MATCH), "clickData"),
        State(ids.store(MATCH), "data"),
        prevent_initial_call=True,
    )
    def show_details(click, data):
        try:
            return details_for("graph", clicked_id(click), data)
        except Exception as exc:
            return error_text(f"{type(exc).__name__}: {exc}")

    # A search hit's details follow the view that shows it (the store names it). Not an input on the search
    # box: update_view empties the box, and that second change would cancel the first answer in flight.
    @dash.callback(
        Output(ids.details(MATCH), "children", allow_duplicate=True),
        Input(ids.store(MATCH), "data"),
        prevent_initial_call=True,
    )
    def show_found(data):
        found = (data or {}).get("found")
        if not found:
            return no_update
        try:
            return details_for("search", found, data)
        except Exception as exc:
            return error_text(f"{type(exc).__name__}: {exc}")

    @dash.callback(
        Output(ids.search(MATCH), "options"),
        Input(ids.search(MATCH), "search_value"),
        State(ids.search(MATCH), "value"),
        State(ids.store(MATCH), "data"),
        prevent_initial_call=True,
    )
    def search_options(text, current, data):
        try:
            graph = registry.get(data["trace"]).graph
            # the chosen value stays among the options: a dropdown drops a value its options no longer hold
            found = search(graph, text) if (text or "").strip() else browse(graph)
            if current and all(o["value"] != current for o in found):
                found.extend(o for o in search(graph, "", exact=current))
            return found
        except Exception as exc:   # said in the dropdown itself (e.g. the server restarted), not a silent 500
            return [{"label": f"{type(exc).__name__}: {exc}", "value": "", "disabled": True}]

    @dash.callback(
        Output(ids.download(MATCH), "data"),
        Output(ids.export_status(MATCH), "children"),
        Input(ids.export_html(MATCH), "n_clicks"),
        Input(ids.export_svg(MATCH), "n_clicks"),
        Input(ids.export_png(MATCH), "n_clicks"),
        Input(ids.export_json(MATCH), "n_clicks"),
        State(ids.store(MATCH), "data"),
        prevent_initial_call=True,
    )
    def export_view(_h, _s, _p, _j, data):
        from .exporting import export_current_view

        fmt = ctx.triggered_id["subcomponent"].removeprefix("export_")
        try:
            return export_current_view(data, fmt), ""
        except Exception as exc:
            return no_update, error_text(f"export failed: {exc}", display="inline")


def ensure_registered() -> None:
    """Make sure the next Dash app to start picks up the ModelGraph callbacks (idempotent)."""
    global _keys
    with _lock:
        pending = set(dash_callback_registry.GLOBAL_CALLBACK_MAP)
        if _keys and _keys <= pending:
            return
        _define()
        _keys = set(dash_callback_registry.GLOBAL_CALLBACK_MAP) - pending


ensure_registered()
