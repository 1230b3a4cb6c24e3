"""The ModelGraph callbacks: pattern-matching (MATCH on ``aio_id``), one set per Dash app.

``register(decorator)`` defines the set with ``app.callback`` (the apps this package creates, server.py) or
``dash.callback`` (the All-in-One pattern, for a ModelGraph in a user's app: aio.py). Dash moves a
``dash.callback`` set into the first app that starts; ``for_user_app`` defines a fresh one when an app took
the last one, so any number of apps in one process each get theirs. A callback that raises is answered by
its ``on_error`` handler, which shows the error in the page instead of a server log.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import dash
from dash import MATCH, Input, Output, Patch, State, ctx, html, no_update

from .. import view as view_mod
from ..options import depth_from_text
from ..render.style import get_theme
from ..view_types import ViewSpec
from . import firstview, hitlayer, progress, registry, state, zoom
from .details import details, error_text, selection
from .ids import ids
from .search import browse, search

_MARK = str(Output(ids.graph(MATCH), "figure"))   # in the key of the set's first callback, in any app

_lock = threading.Lock()
_armed = False                                           # a dash.callback set waits for the next app to start
_seen: weakref.WeakSet[dash.Dash] = weakref.WeakSet()     # every Dash app made in this process
_waiting: weakref.WeakSet[dash.Dash] = weakref.WeakSet()  # of those, the ones that may take the waiting set


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
        return NextView(new_spec, rankdir, theme, highlight, state.full_ranges(old_layout), zoom_back)
    elif trigger == "color_by":
        pass                                  # the same view, painted otherwise (``_apply`` sets it)
    elif trigger == "first_view":             # a first view the constructor left to the page (firstview.py)
        if not data.get("pending"):
            return None
        fit = True
    else:
        return None
    if fit:
        ranges = state.start_ranges(state.layout_of(tid, new_spec, rankdir))
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
    """The first seven outputs of ``update_view`` for one action (the last, the search box, is its own: figure,
    store, notes, style, depth, class, hits); ``data`` is the store as the browser last drew it,
    ``current`` the same with the toolbar's current values, ``shown_depth`` the depth control's value,
    ``click`` the clickData of a click (its box's drawn size tells the plot's scale)."""
    result = step(trigger, value, current if current is not None else data, relayout, click)
    if result is None:
        return no_update, no_update, no_update, no_update, no_update, no_update, no_update
    spec, rankdir, theme, highlight, ranges = (result.spec, result.rankdir, result.theme, result.highlight,
                                               result.ranges)
    tid = data["trace"]
    spec = state.drawn_spec(tid, spec)
    old_draw = state.draw_from_store(data)
    draw = state.draw_from_store(data, rankdir=rankdir, theme=theme, highlight=highlight,
                                 **({"color_by": value or None} if trigger == "color_by" else {}))
    rev = int(data.get("rev", 0)) + 1      # this answer's ranges win over the user's zoom (state.uirevision)
    new_data = {**data, **state.spec_to_store(spec), **state.draw_to_store(draw), "ranges": ranges, "rev": rev,
                "relayout": relayout, "zoom_back": result.zoom_back,
                "found": value if trigger == "search" and value else None,    # its details follow (show_found)
                "sent": ([ranges] + list(data.get("sent") or [data["ranges"]]))[:4]}
    pending = new_data.pop("pending", False)          # the placeholder goes, whatever the action
    old_spec = state.spec_from_store(data)
    if (spec, draw) == (old_spec, old_draw) and not pending:
        fig: Any = Patch()                  # only the ranges move: two numbers, and the hit bars there
        fig["layout"]["xaxis"]["range"] = ranges[0]
        fig["layout"]["yaxis"]["range"] = ranges[1]
        fig["layout"]["uirevision"] = state.uirevision(rev)
        hits = hitlayer.patch(tid, spec, draw, ranges, rev, fig)[1]
    else:
        fig, hits = hitlayer.sent_figure(tid, spec, draw, ranges, rev)
    # unchanged outputs are not sent: each one sent costs the browser a React update on every click
    new_notes = state.visible(tid, spec).notes
    notes = (no_update if new_notes == state.visible(tid, old_spec).notes
             else [html.Div(n) for n in new_notes])
    same_theme = draw.theme == old_draw.theme
    style = no_update if same_theme else root_style(draw.theme)
    css_class = no_update if same_theme else root_class(draw.theme)
    state.precompute_neighbours(tid, spec, draw)
    depth = view_mod.depth_of(registry.get(tid).graph, spec)   # the control shows the view's state ("custom")
    return fig, new_data, notes, style, (no_update if depth == shown_depth else depth), css_class, hits


def details_for(trigger: str | None, value: Any, data: dict[str, Any]) -> tuple[Any, Any]:
    """The details panel and the ``selected`` store after one action: the clicked box or the chosen search
    hit (no_update otherwise)."""
    if trigger not in ("graph", "search") or not value:
        return no_update, no_update
    tid = data["trace"]
    members: tuple[str, ...] = ()
    if value.startswith(view_mod.FOLD_PREFIX):
        node = next((n for n in state.visible(tid, state.spec_from_store(data)).nodes if n.id == value), None)
        members = node.members if node is not None else ()
    return details(tid, value, members), selection(tid, value, members)


PROGRESS_SHOWN = {"display": "block", "fontSize": "12px", "minHeight": "18px"}
PROGRESS_HIDDEN = {"display": "none"}


def _aio() -> Any:
    """The ModelGraph a callback serves (the MATCHed ``aio_id`` of what triggered it)."""
    return ctx.triggered_id.get("aio_id") if isinstance(ctx.triggered_id, dict) else None


def _message(exc: Exception) -> str:
    return f"{type(exc).__name__}: {exc}"


def _view_error(exc: Exception) -> tuple[Any, ...]:
    """``update_view``'s answer when it raised: the message in the notes line, the search box emptied as
    after any search, nothing else changed."""
    sub = ctx.triggered_id.get("subcomponent") if isinstance(ctx.triggered_id, dict) else None
    searched = sub == "search" and bool(ctx.triggered and ctx.triggered[0].get("value"))
    # a first view left to the page (firstview.py) failed: its placeholder stops saying it is being laid out
    figure = firstview.placeholder_figure(_store_theme(), "This view could not be drawn: see the message above.") \
        if sub == "first_view" else no_update
    return (figure, no_update, error_text(_message(exc), className="tvd-app-error"), no_update, no_update,
            no_update, no_update, None if searched else no_update)


def _store_theme() -> str:
    """The theme of the ModelGraph whose callback runs (from its store, as the callback was sent it)."""
    for key, value in (ctx.states or {}).items():
        if '"store"' in key and isinstance(value, dict) and value.get("theme") in ("light", "dark"):
            return str(value["theme"])
    return "light"


def _details_error(exc: Exception) -> tuple[Any, ...]:
    return error_text(_message(exc)), no_update


def _search_error(exc: Exception) -> list[dict[str, Any]]:
    """Said in the dropdown itself (e.g. the server restarted), not a silent 500."""
    return [{"label": _message(exc), "value": "", "disabled": True}]


def _export_error(exc: Exception) -> tuple[Any, ...]:
    return no_update, error_text(f"export failed: {exc}", display="inline")


# What a view change reads, in update_view's argument order; the progress poll reads the same as State to
# find that change's progress record.
_VIEW_CONTROLS: tuple[tuple[Callable[[Any], Any], str], ...] = (
    (ids.graph, "clickData"), (ids.expand_all, "n_clicks"), (ids.collapse_all, "n_clicks"), (ids.depth, "value"),
    (ids.options, "value"), (ids.direction, "value"), (ids.theme, "value"), (ids.search, "value"),
    (ids.fit, "n_clicks"), (ids.color_by, "value"),
)


def register(callback: Callable[..., Any]) -> None:
    """Define the ModelGraph callbacks with ``callback``: an app's ``app.callback``, or ``dash.callback``."""
    @callback(
        Output(ids.graph(MATCH), "figure"),
        Output(ids.store(MATCH), "data"),
        Output(ids.notes(MATCH), "children"),
        Output(ids.root(MATCH), "style"),
        Output(ids.depth(MATCH), "value"),
        Output(ids.root(MATCH), "className"),
        Output(ids.hits(MATCH), "data"),
        Output(ids.search(MATCH), "value"),
        *(Input(make(MATCH), prop) for make, prop in _VIEW_CONTROLS),
        Input(ids.first_view(MATCH), "n_intervals"),
        State(ids.store(MATCH), "data"),
        State(ids.graph(MATCH), "relayoutData"),
        prevent_initial_call=True,
        on_error=_view_error,
        # while it runs, the progress line polls how far it got (progress.py); off again with the answer
        running=[(Output(ids.progress_poll(MATCH), "disabled"), False, True),
                 (Output(ids.progress(MATCH), "children"), "", ""),
                 (Output(ids.progress(MATCH), "style"), PROGRESS_SHOWN, PROGRESS_HIDDEN)],
    )
    def update_view(click, _ea, _ca, depth, options, direction, theme, search, _fit, color_by, _first, data,
                    relayout):
        trigger = ctx.triggered_id["subcomponent"] if isinstance(ctx.triggered_id, dict) else None
        value = {"graph": clicked_id(click), "depth": depth, "options": options, "direction": direction,
                 "theme": theme, "search": search, "color_by": color_by}.get(trigger)
        # a chosen search hit is shown (centred, highlighted, in the details), then the box is emptied: a box
        # holding a value puts the cursor on that option when reopened, and the next typing would be lost
        cleared = None if trigger == "search" and search else no_update
        key = progress.request_key(_aio(), data, click, _ea, _ca, depth, options, direction, theme, search, _fit,
                                   color_by)
        # a first view left to the page is known to be slow: its progress shows at once
        with progress.request(key, show_after=0.0 if trigger == "first_view" else progress.SHOW_AFTER_S):
            return *_apply(trigger, value, data, relayout, with_controls(data, options, direction, theme), depth,
                           click if trigger == "graph" else None), cleared

    # Polled only while update_view runs: the same values update_view was sent find its progress record.
    @callback(
        Output(ids.progress(MATCH), "children"),
        Input(ids.progress_poll(MATCH), "n_intervals"),
        *(State(make(MATCH), prop) for make, prop in _VIEW_CONTROLS),
        State(ids.store(MATCH), "data"),
        prevent_initial_call=True,
    )
    def show_progress(_n, click, ea, ca, depth, options, direction, theme, search, fit, color_by, data):
        return progress.text(progress.request_key(_aio(), data, click, ea, ca, depth, options, direction, theme,
                                                  search, fit, color_by))

    # The hit bars near the viewport, renewed after a zoom or pan that leaves what they cover (hitlayer.py). The
    # store is an input too: Dash then holds a cull back while a view change runs, and drops an older cull's
    # answer still on its way when the view change's store arrives.
    @callback(
        Output(ids.graph(MATCH), "figure", allow_duplicate=True),
        Output(ids.hits(MATCH), "data", allow_duplicate=True),
        Input(ids.graph(MATCH), "relayoutData"),
        Input(ids.store(MATCH), "data"),
        State(ids.hits(MATCH), "data"),
        prevent_initial_call=True,
    )
    def renew_hits(relayout, data, hits):
        by_store = any(str(t.get("prop_id", "")).endswith(".data") for t in ctx.triggered or ())
        return hitlayer.renew(None if by_store else relayout, data, hits)

    # The details panel has its own callbacks: their answer is drawn after (not with) the graph's. Both also
    # say what is selected in the ``selected`` store, for the user's own callbacks.
    @callback(
        Output(ids.details(MATCH), "children"),
        Output(ids.selected(MATCH), "data"),
        Input(ids.graph(MATCH), "clickData"),
        State(ids.store(MATCH), "data"),
        prevent_initial_call=True,
        on_error=_details_error,
    )
    def show_details(click, data):
        return details_for("graph", clicked_id(click), data)

    # A search hit's details follow the view that shows it (the store names it). Not an input on the search
    # box: update_view empties the box, and that second change would cancel the first answer in flight.
    @callback(
        Output(ids.details(MATCH), "children", allow_duplicate=True),
        Output(ids.selected(MATCH), "data", allow_duplicate=True),
        Input(ids.store(MATCH), "data"),
        prevent_initial_call=True,
        on_error=_details_error,
    )
    def show_found(data):
        found = (data or {}).get("found")
        if not found:
            return no_update, no_update
        return details_for("search", found, data)

    @callback(
        Output(ids.search(MATCH), "options"),
        Input(ids.search(MATCH), "search_value"),
        State(ids.search(MATCH), "value"),
        State(ids.store(MATCH), "data"),
        prevent_initial_call=True,
        on_error=_search_error,
    )
    def search_options(text, current, data):
        graph = registry.get(data["trace"]).graph
        # the chosen value stays among the options: a dropdown drops a value its options no longer hold
        found = search(graph, text) if (text or "").strip() else browse(graph)
        if current and all(o["value"] != current for o in found):
            found.extend(o for o in search(graph, "", exact=current))
        return found

    @callback(
        Output(ids.download(MATCH), "data"),
        Output(ids.export_status(MATCH), "children"),
        Input(ids.export_html(MATCH), "n_clicks"),
        Input(ids.export_svg(MATCH), "n_clicks"),
        Input(ids.export_png(MATCH), "n_clicks"),
        Input(ids.export_json(MATCH), "n_clicks"),
        State(ids.store(MATCH), "data"),
        prevent_initial_call=True,
        on_error=_export_error,
    )
    def export_view(_h, _s, _p, _j, data):
        from .exporting import export_current_view

        fmt = ctx.triggered_id["subcomponent"].removeprefix("export_")
        return export_current_view(data, fmt), ""


def registered_in(app: dash.Dash) -> bool:
    """Whether ``app`` holds a set of ModelGraph callbacks (its own, or a ``dash.callback`` set it took)."""
    return any(_MARK in key for key in app.callback_map)


def arm() -> None:
    """Define a ``dash.callback`` set for the next app to start (the All-in-One pattern)."""
    with _lock:
        _arm()


def _arm() -> None:
    global _armed
    register(dash.callback)
    _armed = True
    _waiting.clear()       # the apps that could take this set: those that have none yet
    _waiting.update(a for a in _seen if not registered_in(a))


@dash.hooks.setup()
def _track(app: dash.Dash) -> None:
    """Dash calls this for every app it makes (its documented setup hook): any of them may take the waiting
    set when it starts."""
    with _lock:
        _seen.add(app)
        if _armed:
            _waiting.add(app)


def for_user_app() -> None:
    """A ModelGraph is being made for a user's app: if an app took the waiting ``dash.callback`` set since it
    was defined, define a fresh one for the app this ModelGraph goes in (as yet unstarted)."""
    global _armed
    with _lock:
        if _armed and any(registered_in(a) for a in _waiting):
            _armed = False
        if not _armed:
            _arm()


def claim(app: dash.Dash) -> None:
    """Give one of this package's apps its set, once Dash has set it up (its first request): ``app.callback``,
    or, when it took the waiting ``dash.callback`` set (a user's ModelGraph was made in this process), that
    one, and a fresh ``dash.callback`` set for the user's app."""
    with _lock:
        _waiting.discard(app)    # from now on it has a set of its own: it takes no waiting one
        _seen.discard(app)
        if registered_in(app):
            _arm()
        else:
            register(app.callback)
