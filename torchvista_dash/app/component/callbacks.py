"""The ModelGraph callbacks: pattern-matching (MATCH on ``aio_id``), one set per Dash app. What they answer is
worked out in viewstep.py (a view change), hitlayer.py (the hit bars after a zoom or pan), details.py,
search.py and exporting.py; here they are wired to the page's components.

``register(decorator)`` defines the set with ``app.callback`` (the apps this package creates, server.py) or
``dash.callback`` (the All-in-One pattern, for a ModelGraph in a user's app: aio.py). Dash moves a
``dash.callback`` set into the first app that starts; ``for_user_app`` defines a fresh one when an app took
the last one (``waiting``), so any number of apps in one process each get theirs; nothing is defined or
hooked into Dash at import. A callback that raises is answered by
its ``on_error`` handler, which shows the error in the page instead of a server log.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import dash
from dash import MATCH, Input, Output, State, _callback, ctx, no_update

from torchvista_dash.app.actions import hitlayer
from torchvista_dash.app.actions.details import error_text
from torchvista_dash.app.actions.search import browse, search
from torchvista_dash.app.actions.valuerows import first_nonfinite_id
from torchvista_dash.app.actions.viewstep import answer, clicked_id, details_for, with_controls
from torchvista_dash.app.component.ids import ids
from torchvista_dash.app.http import picture_routes
from torchvista_dash.app.traces import firstview, progress, registry

_MARK = str(Output(ids.graph(MATCH), "figure"))  # in the key of the set's first callback, in any app

_lock = threading.Lock()  # one set is defined at a time


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
    figure = (
        firstview.placeholder_figure(_store_theme(), "This view could not be drawn: see the message above.")
        if sub == "first_view"
        else no_update
    )
    return (
        figure,
        no_update,
        error_text(_message(exc), className="tvd-app-error"),
        no_update,
        no_update,
        no_update,
        no_update,
        None if searched else no_update,
    )


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
    (ids.graph, "clickData"),
    (ids.expand_all, "n_clicks"),
    (ids.collapse_all, "n_clicks"),
    (ids.depth, "value"),
    (ids.options, "value"),
    (ids.direction, "value"),
    (ids.theme, "value"),
    (ids.search, "value"),
    (ids.fit, "n_clicks"),
    (ids.color_by, "value"),
    (ids.first_nonfinite, "n_clicks"),
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
        running=[
            (Output(ids.progress_poll(MATCH), "disabled"), False, True),
            (Output(ids.progress(MATCH), "children"), "", ""),
            (Output(ids.progress(MATCH), "style"), PROGRESS_SHOWN, PROGRESS_HIDDEN),
        ],
    )
    def update_view(
        click, _ea, _ca, depth, options, direction, theme, search, _fit, color_by, _nf, _first, data, relayout
    ):
        trigger = ctx.triggered_id["subcomponent"] if isinstance(ctx.triggered_id, dict) else None
        if trigger == "first_nonfinite":  # shown as a search hit is: opened, centred, selected
            trigger, search = "search", first_nonfinite_id(data["trace"])
        value = {
            "graph": clicked_id(click),
            "depth": depth,
            "options": options,
            "direction": direction,
            "theme": theme,
            "search": search,
            "color_by": color_by,
        }.get(trigger)
        # a chosen search hit is shown (centred, highlighted, in the details), then the box is emptied: a box
        # holding a value puts the cursor on that option when reopened, and the next typing would be lost
        cleared = None if trigger == "search" and search else no_update
        key = progress.request_key(
            _aio(), data, click, _ea, _ca, depth, options, direction, theme, search, _fit, color_by, _nf
        )
        # a first view left to the page is known to be slow: its progress shows at once
        with progress.request(key, show_after=0.0 if trigger == "first_view" else progress.SHOW_AFTER_S):
            return *answer(
                trigger,
                value,
                data,
                relayout,
                with_controls(data, options, direction, theme),
                depth,
                click if trigger == "graph" else None,
                picture_base=picture_routes.base_url(dash.get_app()),
            ), cleared

    # Polled only while update_view runs: the same values update_view was sent find its progress record.
    @callback(
        Output(ids.progress(MATCH), "children"),
        Input(ids.progress_poll(MATCH), "n_intervals"),
        *(State(make(MATCH), prop) for make, prop in _VIEW_CONTROLS),
        State(ids.store(MATCH), "data"),
        prevent_initial_call=True,
    )
    def show_progress(_n, click, ea, ca, depth, options, direction, theme, search, fit, color_by, nf, data):
        return progress.text(
            progress.request_key(
                _aio(), data, click, ea, ca, depth, options, direction, theme, search, fit, color_by, nf
            )
        )

    # The hit bars near the viewport, renewed after a zoom or pan that leaves what they cover (hitlayer.py).
    # The
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
        from torchvista_dash.app.actions.exporting import export_current_view

        fmt = ctx.triggered_id["subcomponent"].removeprefix("export_")
        return export_current_view(data, fmt), ""


def registered_in(app: dash.Dash) -> bool:
    """Whether ``app`` holds a set of ModelGraph callbacks (its own, or a ``dash.callback`` set it took)."""
    return any(_MARK in key for key in app.callback_map)


def waiting() -> bool:
    """Whether a ``dash.callback`` set waits for the next app to start: Dash moves the process's waiting
    callbacks into the first app that starts (and empties them), so the set is there until an app took it."""
    return any(_MARK in key for key in _callback.GLOBAL_CALLBACK_MAP)


def for_user_app() -> None:
    """A ModelGraph is being made for a user's app: unless a ``dash.callback`` set waits already, define one
    for the app this ModelGraph goes in (as yet unstarted)."""
    with _lock:
        if not waiting():
            register(dash.callback)


def claim(app: dash.Dash) -> None:
    """Give an installed app its set, once Dash has set it up (its first request): ``app.callback``, or,
    when it took the waiting ``dash.callback`` set (a user's ModelGraph was made in this process), that one,
    and a fresh ``dash.callback`` set for the user's app."""
    with _lock:
        if not registered_in(app):
            register(app.callback)
        elif not waiting():
            register(dash.callback)
