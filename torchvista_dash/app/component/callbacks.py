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
from dataclasses import replace
from typing import Any

import dash
from dash import MATCH, Input, Output, State, _callback, ctx, no_update

from torchvista_dash.app.actions import hitlayer, keys
from torchvista_dash.app.actions.details import error_text
from torchvista_dash.app.actions.search import browse, search
from torchvista_dash.app.actions.valuerows import first_nonfinite_id
from torchvista_dash.app.actions.viewstep import ViewAnswer, answer, clicked_id, details_for, with_controls
from torchvista_dash.app.component.component import HAS_KEYS, find_field
from torchvista_dash.app.component.ids import ids
from torchvista_dash.app.http import picture_routes
from torchvista_dash.app.traces import firstview, page_state, progress, registry

_MARK = str(Output(ids.graph(MATCH), "figure"))  # in the key of the set's first callback, in any app

_lock = threading.Lock()  # one set is defined at a time


PROGRESS_SHOWN = {"display": "block", "fontSize": "12px", "minHeight": "18px"}
PROGRESS_HIDDEN = {"display": "none"}


def _aio() -> Any:
    """The ModelGraph a callback serves (the MATCHed ``aio_id`` of what triggered it)."""
    return ctx.triggered_id.get("aio_id") if isinstance(ctx.triggered_id, dict) else None


def _trigger() -> str | None:
    """What started a view change: the part's name. Enter in a text field (find, style) is also a key press
    on the page; the field wins."""
    subs = [
        str(t.get("prop_id", "")) for t in ctx.triggered or () if str(t.get("prop_id", "")).startswith("{")
    ]
    for field in ("find", "style"):
        if any(f'"subcomponent":"{field}"' in p for p in subs):
            return field
    return ctx.triggered_id["subcomponent"] if isinstance(ctx.triggered_id, dict) else None


def _message(exc: Exception) -> str:
    return f"{type(exc).__name__}: {exc}"


def _view_error(exc: Exception) -> dict[str, Any]:
    """``update_view``'s answer when it raised (a bad store included): the message in the notes line, the
    search box emptied as after any search, nothing else changed."""
    sub = ctx.triggered_id.get("subcomponent") if isinstance(ctx.triggered_id, dict) else None
    searched = sub == "search" and bool(ctx.triggered and ctx.triggered[0].get("value"))
    # a first view left to the page (firstview.py) failed: its placeholder stops saying it is being laid out
    figure = (
        firstview.placeholder_figure(_store_theme(), "This view could not be drawn: see the message above.")
        if sub == "first_view"
        else no_update
    )
    return ViewAnswer(
        figure=figure,
        notes=error_text(_message(exc), className="tvd-app-error"),
        search=None if searched else no_update,
    ).outputs()


def _store_theme() -> str:
    """The theme of the ModelGraph whose callback runs (from its store, as the callback was sent it)."""
    for key, value in (ctx.states or {}).items():
        if '"store"' in key and isinstance(value, dict) and value.get("theme") in ("light", "dark"):
            return str(value["theme"])
    return "light"


def _hits_error(exc: Exception) -> tuple[Any, ...]:
    """The hit bars stay as they are; the view's own callbacks say what is wrong (a bad store, a gone
    trace)."""
    return no_update, no_update


def _details_error(exc: Exception) -> tuple[Any, ...]:
    return error_text(_message(exc)), no_update


def _search_error(exc: Exception) -> list[dict[str, Any]]:
    """Said in the dropdown itself (e.g. the server restarted), not a silent 500."""
    return [{"label": _message(exc), "value": "", "disabled": True}]


def _export_error(exc: Exception) -> tuple[Any, ...]:
    return no_update, error_text(f"export failed: {exc}", display="inline")


# What a view change reads, by update_view's argument name; the progress poll reads the same as State to find
# that change's progress record.
_VIEW_CONTROLS: dict[str, tuple[Callable[[Any], Any], str]] = {
    "click": (ids.graph, "clickData"),
    "expand_all": (ids.expand_all, "n_clicks"),
    "collapse_all": (ids.collapse_all, "n_clicks"),
    "depth": (ids.depth, "value"),
    "options": (ids.options, "value"),
    "direction": (ids.direction, "value"),
    "theme": (ids.theme, "value"),
    "search": (ids.search, "value"),
    "fit": (ids.fit, "n_clicks"),
    "color_by": (ids.color_by, "value"),
    "reach": (ids.reach, "value"),
    "path_to": (ids.path_to, "value"),
    "clear": (ids.clear, "n_clicks"),
    "first_nonfinite": (ids.first_nonfinite, "n_clicks"),
    "find": (ids.find, "n_submit"),
    "style": (ids.style, "n_submit"),
    **({"keys": (ids.keys, "n_events")} if HAS_KEYS else {}),
}
# What it sends, by ``ViewAnswer`` field
_VIEW_OUTPUTS: dict[str, tuple[Callable[[Any], Any], str]] = {
    "figure": (ids.graph, "figure"),
    "store": (ids.store, "data"),
    "notes": (ids.notes, "children"),
    "style": (ids.root, "style"),
    "depth": (ids.depth, "value"),
    "css_class": (ids.root, "className"),
    "hits": (ids.hits, "data"),
    "search": (ids.search, "value"),
}


def _request_key(data: Any, controls: dict[str, Any]) -> str:
    return progress.request_key(_aio(), data, *(controls.get(name) for name in _VIEW_CONTROLS))


def _options(text: str | None, current: str | None, data: Any) -> list[dict[str, Any]]:
    """A search box's options for what is typed in it (the search box and the "path to" box)."""
    graph = registry.get(page_state.load(data).trace).graph
    # the chosen value stays among the options: a dropdown drops a value its options no longer hold
    found = search(graph, text or "") if (text or "").strip() else browse(graph)
    if current and all(o["value"] != current for o in found):
        found.extend(o for o in search(graph, "", exact=current))
    return found


def register(callback: Callable[..., Any]) -> None:
    """Define the ModelGraph callbacks with ``callback``: an app's ``app.callback``, or ``dash.callback``."""

    @callback(
        output={name: Output(make(MATCH), prop) for name, (make, prop) in _VIEW_OUTPUTS.items()},
        inputs={
            **{name: Input(make(MATCH), prop) for name, (make, prop) in _VIEW_CONTROLS.items()},
            "first_view": Input(ids.first_view(MATCH), "n_intervals"),
        },
        state={
            "data": State(ids.store(MATCH), "data"),
            "relayout": State(ids.graph(MATCH), "relayoutData"),
            "find_text": State(ids.find(MATCH), "value"),
            "style_text": State(ids.style(MATCH), "value"),
            **(
                {
                    "pointer": State(ids.pointer(MATCH), "event"),
                    "keydown": State(ids.keys(MATCH), "event"),
                }
                if HAS_KEYS
                else {}
            ),
        },
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
        data: Any,
        relayout: Any,
        first_view: Any,
        find_text: Any = None,
        style_text: Any = None,
        pointer: Any = None,
        keydown: Any = None,
        **controls: Any,
    ) -> dict[str, Any]:
        page = page_state.load(data)
        trigger = _trigger()
        click = controls["click"]
        value = clicked_id(click) if trigger == "graph" else controls.get(trigger or "")
        if trigger == "find":  # Enter in the find box (a box mounted anew fires too, with no Enter: ignored)
            value = find_text if controls.get("find") else None
        elif trigger == "style":
            value = style_text
        elif trigger == "keys":  # a shortcut is the action it names (keys.py)
            trigger, value = keys.action_of(keydown) or (None, None)
        elif trigger == "first_nonfinite":  # shown as a search hit is: opened, centred, selected
            trigger, value = "search", first_nonfinite_id(page.trace)
        # a first view left to the page is known to be slow: its progress shows at once
        show_after = 0.0 if trigger == "first_view" else progress.SHOW_AFTER_S
        with progress.request(_request_key(data, controls), show_after=show_after):
            result = answer(
                trigger,
                value,
                page,
                relayout,
                with_controls(page, controls["options"], controls["direction"], controls["theme"]),
                controls["depth"],
                click if trigger == "graph" else None,
                shift=isinstance(pointer, dict) and pointer.get("shiftKey") is True,
                picture_base=picture_routes.base_url(dash.get_app()),
            )
        # a chosen search hit is shown (centred, highlighted, in the details), then the box is emptied: a box
        # holding a value puts the cursor on that option when reopened, and the next typing would be lost
        if trigger == "search" and value:
            result = replace(result, search=None)
        return result.outputs()

    # Polled only while update_view runs: the same values update_view was sent find its progress record.
    @callback(
        output=Output(ids.progress(MATCH), "children"),
        inputs={"_n": Input(ids.progress_poll(MATCH), "n_intervals")},
        state={
            "controls": {name: State(make(MATCH), prop) for name, (make, prop) in _VIEW_CONTROLS.items()},
            "data": State(ids.store(MATCH), "data"),
        },
        prevent_initial_call=True,
    )
    def show_progress(_n: Any, controls: dict[str, Any], data: Any) -> Any:
        return progress.text(_request_key(data, controls))

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
        on_error=_hits_error,
    )
    def renew_hits(relayout, data, hits):
        by_store = any(str(t.get("prop_id", "")).endswith(".data") for t in ctx.triggered or ())
        return hitlayer.renew(None if by_store else relayout, page_state.load(data), hits)

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
        return details_for("graph", clicked_id(click), page_state.load(data))

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
        page = page_state.load(data)
        if not page.found:
            return no_update, no_update
        return details_for("search", page.found, page)

    @callback(
        Output(ids.search(MATCH), "options"),
        Input(ids.search(MATCH), "search_value"),
        State(ids.search(MATCH), "value"),
        State(ids.store(MATCH), "data"),
        prevent_initial_call=True,
        on_error=_search_error,
    )
    def search_options(text, current, data):
        return _options(text, current, data)

    if HAS_KEYS:

        @callback(
            Output(ids.find_box(MATCH), "children"),
            Input(ids.keys(MATCH), "n_events"),
            State(ids.keys(MATCH), "event"),
            prevent_initial_call=True,
        )
        def open_find(n, keydown):
            action = (keys.action_of(keydown) or ("",))[0]
            if action == "open_find":
                return find_field(_aio(), shown=True, turn=int(n or 0))
            if action in ("find_close", "clear"):
                return find_field(_aio(), shown=False)
            return no_update

    @callback(
        Output(ids.path_to(MATCH), "options"),
        Input(ids.path_to(MATCH), "search_value"),
        State(ids.path_to(MATCH), "value"),
        State(ids.store(MATCH), "data"),
        prevent_initial_call=True,
        on_error=_search_error,
    )
    def path_options(text, current, data):
        return _options(text, current, data)

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
        return export_current_view(page_state.load(data), fmt), ""


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
