"""``ModelGraph``: a Dash All-in-One component drawing one trace; any number per page, no setup.

    app.layout = html.Div([ModelGraph(t1, id="enc"), ModelGraph(t2, id="dec")])

The constructor registers the trace in the server-side registry and draws the first view on the
server, so the page shows the graph without waiting for a callback. Its callbacks (``callbacks.py``), with
pattern-matching ids, go on an app by ``install(app)``, or, in a user's app that was not installed, as a
``dash.callback`` set defined when the first ModelGraph is made (aio.py).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import dash
from dash import dcc, html

from torchvista_dash.app.actions import hitlayer, viewstep
from torchvista_dash.app.actions.details import details, header, selection
from torchvista_dash.app.actions.search import browse
from torchvista_dash.app.component.ids import ids as _ids
from torchvista_dash.app.http import picture_routes
from torchvista_dash.app.traces import firstview, progress, registry, state
from torchvista_dash.app.traces.page_state import PageState
from torchvista_dash.model.graph import Graph
from torchvista_dash.model.options import (
    DEFAULT_NODE_BUDGET,
    EVERYTHING,
    REACH_MODES,
    THEMES,
    DrawOptions,
    ViewOptions,
    option_names,
    split_options,
    style_text,
)
from torchvista_dash.traced import Trace
from torchvista_dash.view import build as view_mod
from torchvista_dash.view.types import ViewSpec

try:  # key events come from a maintained component library (no JavaScript of our own); Python 3.11+
    from dash_extensions import EventListener
except ImportError:  # pragma: no cover - without it the page has no shortcuts; clicks and controls still work
    EventListener = None
HAS_KEYS = EventListener is not None

APP_RANKDIRS = ("TB", "LR")  # the toolbar's directions
REACH_LABELS = {
    "step": "inputs and outputs",
    "up": "all upstream",
    "down": "all downstream",
    "all": "all connected",
}
# what a key event tells the server: the key, its modifiers, and where it was typed (a text field's own)
KEY_EVENTS = [
    {
        "event": "keydown",
        "props": ["key", "code", "shiftKey", "ctrlKey", "metaKey", "altKey", "target.tagName"],
    }
]
# a press on the plot: whether Shift was held (plotly's clickData does not say); it comes before the click
POINTER_EVENTS = [{"event": "pointerdown", "props": ["shiftKey"]}]
# The mode bar keeps the tools that mean something on a graph of boxes: zoom and pan modes, zoom in/out and
# "reset" (back to the whole view). No selection tools (nothing to select), no autoscale (the same as reset
# here), no camera (the export buttons draw the whole view, not the visible part), no share link.
MODE_BAR = ["zoom2d", "pan2d", "zoomIn2d", "zoomOut2d", "resetScale2d"]
PLOT_CONFIG: Any = {
    "scrollZoom": True,
    "displaylogo": False,
    "doubleClick": "reset",
    "modeBarButtons": [MODE_BAR],
}
BUTTON = {"marginRight": "6px", "padding": "3px 10px", "cursor": "pointer"}
ROW = {"display": "flex", "flexWrap": "wrap", "alignItems": "center", "gap": "10px", "margin": "6px 0"}


def first_nonfinite_button(cid: dict[str, Any], graph: Graph) -> html.Button:
    """The "first NaN/Inf" button: opens the module where NaN or Inf first appears, selects the op and
    centres it (disabled, saying why, when the trace has no values or every value is finite)."""
    from torchvista_dash.app.actions.valuerows import first_nonfinite_title

    title, enabled = first_nonfinite_title(graph)
    return html.Button(
        "first NaN/Inf",
        id=cid,
        n_clicks=0,
        disabled=not enabled,
        title=title,
        # a trace without values has nothing to go to: the button is there (the callbacks read it) but hidden
        style=BUTTON if "values" in graph.measured else {**BUTTON, "display": "none"},
        className="tvd-first-nonfinite",
    )


def color_by_control(cid: dict[str, Any], graph: Graph, value: str | None) -> dcc.Dropdown:
    """The "colour by" menu: boxes coloured by a cost, with a colour bar (metrics the trace lacks are
    disabled, e.g. time in a trace made without ``timing=True``)."""
    from torchvista_dash.model.metrics import REGISTRY, has_metric

    options = [{"label": "colour by: kind", "value": ""}] + [
        {"label": f"colour by: {m.label}", "value": name, "disabled": not has_metric(graph, name)}
        for name, m in REGISTRY.items()
    ]
    return dcc.Dropdown(
        id=cid,
        options=options,
        value=value or "",
        clearable=False,
        searchable=False,
        className="tvd-color-by",
        style={"width": "190px"},
    )


def find_field(aio_id: Any, shown: bool, turn: int = 0) -> html.Div | html.Span | html.P:
    """The find box: hidden, or shown with the cursor in it. A text field takes the focus only when it is
    mounted (``autoFocus``), so each opening wraps it in another element than the last (React mounts it
    anew) and no JavaScript of our own is needed."""
    field = dcc.Input(
        id=_ids.find(aio_id),
        type="text",
        debounce=False,  # its value is read (State) when Enter is pressed: always the text typed
        autoFocus=shown,
        placeholder="Find… (Enter: first match, N / Shift+N: next / previous)",
        style={"width": "320px"} if shown else {"display": "none"},
    )
    if not shown:
        return html.Span(field)
    return html.Div(field) if turn % 2 else html.P(field, style={"margin": "0"})


def _label(text: str) -> html.Span:
    """Toolbar option text in a grey that reads on both themes (Dash's own label colour is fixed)."""
    return html.Span(text, style={"color": "#8a94a6"})


class ModelGraph(html.Div):
    """An interactive, collapsible picture of one traced forward pass.

    ``trace``: a ``Trace`` (or a ``Graph``); ``id``: any JSON-able value unique on the page (default: random).
    ``height``: CSS height of the plot. Options, by name (``options.ViewOptions``/``DrawOptions``): ``depth``
    (module levels open at first, ``None``: every op), ``theme`` ("light", "dark"), ``rankdir`` ("TB", "LR"),
    ``fold_repeats``, ``show_params``, ``labels``, ``details``; or whole ``view=``/``draw=`` objects;
    ``spec``: an exact first view (``view.build.make_spec``), as a shared link names it; ``bookmarks``: the
    views keys 1-9 recall (the page's address keeps them). ``root="layers.3"``: one module as its own graph.
    ``app``: the Dash app it is shown in, whose picture route serves its first figure's pictures
    (``torchvista_dash.install(app)``; without it they travel inside the figure). Other keywords go to the
    outer ``html.Div``.
    """

    ids = _ids

    def __init__(
        self,
        trace: Trace | Graph,
        id: Any = None,
        *,
        height: str = "72vh",
        view: ViewOptions | None = None,
        draw: DrawOptions | None = None,
        spec: ViewSpec | None = None,
        bookmarks: Mapping[int, str] | None = None,
        app: dash.Dash | None = None,
        **kwargs: Any,
    ) -> None:
        picture_base = picture_routes.base_url(app)
        if isinstance(trace, Graph):
            trace = Trace(trace)
        if not isinstance(trace, Trace):
            raise TypeError(
                f"ModelGraph needs a Trace (from trace_model(model, inputs) or load_trace(path)), "
                f"not {type(trace).__name__}"
            )
        names = option_names()
        view, draw = split_options(
            {k: kwargs.pop(k) for k in list(kwargs) if k in names}, where="ModelGraph", view=view, draw=draw
        )
        div_props = kwargs
        trace = trace.focused(view.root)  # one module as its own graph
        if draw.rankdir not in APP_RANKDIRS:
            raise ValueError(f"rankdir must be 'TB' or 'LR' in the app, not {draw.rankdir!r}")
        if draw.color_by is not None and not isinstance(draw.color_by, str):
            raise TypeError(
                "ModelGraph colours by the metrics of its menu (color_by='flops', 'absmax', ...); your "
                "own numbers per module colour Trace.figure(color_by={...}) and Trace.export(color_by=...)"
            )
        if view.node_budget != DEFAULT_NODE_BUDGET:
            raise ValueError(
                f"ModelGraph draws at most {DEFAULT_NODE_BUDGET:,} boxes per view; node_budget is "
                "an option of Trace.view/figure/export, not of the app"
            )
        aio_id = str(uuid.uuid4()) if id is None else id
        tid = registry.register(trace)
        graph = trace.graph
        if spec is None:
            spec, highlight = state.first_view(tid, view)
        else:  # an exact view (a shared link): its ids checked against the trace
            view_mod.check_spec(trace.graph, spec)
            spec, highlight = state.drawn_spec(tid, spec), None
        draw = replace(draw, highlight=highlight if draw.highlight is None else draw.highlight)
        vg = state.visible(tid, spec)
        ready = firstview.prepared(tid, spec, draw)  # else the page asks for it, and shows its progress
        if ready:
            ranges = state.start_ranges(state.layout_of(tid, spec, draw.rankdir))
            figure, hits = hitlayer.sent_figure(tid, spec, draw, ranges, 0, picture_base=picture_base)
            state.precompute_neighbours(tid, spec, draw)
        else:
            ranges, hits = firstview.PENDING_RANGES, None
            figure = firstview.placeholder_figure(
                draw.theme, f"Laying out {graph.model_name or 'the model'}…"
            )
        marks = tuple(sorted((int(d), str(t)) for d, t in (bookmarks or {}).items() if 1 <= int(d) <= 9))
        store = PageState(
            trace=tid, spec=spec, draw=draw, ranges=ranges, pending=not ready, bookmarks=marks
        ).to_store()
        theme, rankdir, fold_repeats, show_params = (
            draw.theme,
            draw.rankdir,
            view.fold_repeats,
            view.show_params,
        )
        max_depth = max((c.depth for c in graph.module_calls), default=0)
        depth_options = [{"label": f"depth {d}", "value": d} for d in range(0, max_depth + 1)]
        depth_options.append({"label": "every op", "value": EVERYTHING})
        depth_options.append({"label": "custom", "value": view_mod.CUSTOM, "disabled": True})
        options = [o for o, on in (("fold", fold_repeats), ("params", show_params)) if on]

        toolbar = html.Div(
            [
                html.Button("Expand all", id=_ids.expand_all(aio_id), n_clicks=0, style=BUTTON),
                html.Button("Collapse all", id=_ids.collapse_all(aio_id), n_clicks=0, style=BUTTON),
                dcc.Dropdown(
                    id=_ids.depth(aio_id),
                    options=depth_options,
                    value=view_mod.depth_of(graph, spec),
                    clearable=False,
                    searchable=False,
                    style={"width": "120px"},
                    className="tvd-depth",
                ),
                dcc.Checklist(
                    id=_ids.options(aio_id),
                    value=options,
                    inline=True,
                    options=[
                        {"label": _label(" fold repeats"), "value": "fold"},
                        {"label": _label(" parameters/constants"), "value": "params"},
                    ],
                    inputStyle={"marginLeft": "8px"},
                ),
                dcc.RadioItems(
                    id=_ids.direction(aio_id),
                    value=rankdir,
                    inline=True,
                    options=[
                        {"label": _label(" top→bottom"), "value": "TB"},
                        {"label": _label(" left→right"), "value": "LR"},
                    ],
                    inputStyle={"marginLeft": "8px"},
                ),
                dcc.RadioItems(
                    id=_ids.theme(aio_id),
                    value=theme,
                    inline=True,
                    options=[{"label": _label(f" {t}"), "value": t} for t in THEMES],
                    inputStyle={"marginLeft": "8px"},
                ),
                html.Button("Fit to screen", id=_ids.fit(aio_id), n_clicks=0, style=BUTTON),
            ],
            style=ROW,
            className="tvd-toolbar",
        )
        toolbar2 = html.Div(
            [
                dcc.Dropdown(
                    id=_ids.search(aio_id),
                    options=browse(graph),
                    placeholder="Search modules and ops (name, qualname, class)…",
                    searchable=True,
                    clearable=True,
                    style={"minWidth": "380px", "flex": "1"},
                    className="tvd-search",
                ),
                color_by_control(
                    _ids.color_by(aio_id), graph, draw.color_by if isinstance(draw.color_by, str) else None
                ),
                first_nonfinite_button(_ids.first_nonfinite(aio_id), graph),
                html.Span("Export view:", className="tvd-export-label"),
                html.Button("HTML", id=_ids.export_html(aio_id), n_clicks=0, style=BUTTON),
                html.Button("SVG", id=_ids.export_svg(aio_id), n_clicks=0, style=BUTTON),
                html.Button("PNG", id=_ids.export_png(aio_id), n_clicks=0, style=BUTTON),
                html.Button(
                    "Trace JSON",
                    id=_ids.export_json(aio_id),
                    n_clicks=0,
                    style=BUTTON,
                    title=(
                        "the trace itself: load_trace(path) and "
                        "`python -m torchvista_dash serve path` read it"
                    ),
                ),
                html.Span(id=_ids.export_status(aio_id), style={"fontSize": "12px"}),
                dcc.Download(id=_ids.download(aio_id)),
            ],
            style=ROW,
            className="tvd-toolbar",
        )
        toolbar3 = html.Div(
            [
                html.Span("Selection:", style={"color": "#8a94a6"}, className="tvd-selection-label"),
                dcc.Dropdown(
                    id=_ids.reach(aio_id),
                    options=[{"label": REACH_LABELS[m], "value": m} for m in REACH_MODES],
                    value=draw.reach,
                    clearable=False,
                    searchable=False,
                    style={"width": "200px"},
                    className="tvd-reach",
                ),
                dcc.Dropdown(
                    id=_ids.path_to(aio_id),
                    options=browse(graph),
                    placeholder="Path from the selection to… (or Shift+click a box)",
                    searchable=True,
                    clearable=True,
                    style={"minWidth": "340px", "flex": "1"},
                    className="tvd-path-to",
                ),
                html.Button(
                    "Clear selection", id=_ids.clear(aio_id), n_clicks=0, style=BUTTON, className="tvd-clear"
                ),
                dcc.Input(
                    id=_ids.style(aio_id),
                    type="text",
                    value=style_text(draw.style),
                    # colour boxes by name (re: a regular expression) or module class (cls:), first match wins
                    placeholder="Style: re:.*attn.*=#e45756; cls:Linear=#4c78a8 (Enter)",
                    style={"width": "300px"},
                    className="tvd-style",
                ),
                html.Div(find_field(aio_id, shown=False), id=_ids.find_box(aio_id), className="tvd-find"),
            ],
            style=ROW,
            className="tvd-toolbar",
        )
        plot = dcc.Graph(id=_ids.graph(aio_id), figure=figure, style={"height": height}, config=PLOT_CONFIG)
        body = html.Div(
            [
                html.Div(
                    EventListener(
                        html.Div(plot), id=_ids.pointer(aio_id), events=POINTER_EVENTS, useCapture=True
                    )
                    if EventListener is not None
                    else plot,
                    style={"flex": "1", "minWidth": "0"},
                ),
                html.Div(
                    details(tid, draw.highlight),
                    id=_ids.details(aio_id),
                    className="tvd-details",
                    style={
                        "width": "340px",
                        "maxHeight": height,
                        "overflow": "auto",
                        "fontSize": "13px",
                        "paddingLeft": "10px",
                        "borderLeft": "1px solid #8884",
                    },
                ),
            ],
            style={"display": "flex"},
        )
        children = [
            html.Div(header(graph), id=_ids.header(aio_id), className="tvd-header"),
            # The loading indicator: the notes line is an output of every view change, so the spinner shows
            # while a layout is computed. It wraps the notes, not the graph: re-mounting the graph mid-update
            # made plotly resolve a quick next click against stale positions.
            dcc.Loading(
                html.Div(
                    [html.Div(n) for n in vg.notes],
                    id=_ids.notes(aio_id),
                    style={"fontSize": "12px", "minHeight": "18px"},
                ),
                delay_show=200,
                type="dot",
                className="tvd-loading",
                parent_style={"minHeight": "18px"},
            ),
            # what a slow view change is doing (stage, n of m modules): shown only while it runs (progress.py)
            # aria-* is one of Div's wildcard props, which its typed signature cannot name
            html.Div(
                id=_ids.progress(aio_id),
                className="tvd-progress",
                style={"display": "none", "fontSize": "12px"},
                **{"aria-live": "polite"},  # type: ignore[arg-type]
            ),
            dcc.Interval(id=_ids.progress_poll(aio_id), interval=progress.POLL_MS, disabled=True),
            dcc.Interval(
                id=_ids.first_view(aio_id), interval=firstview.TICK_MS, max_intervals=1, disabled=ready
            ),
            html.Div(
                [toolbar, toolbar2, toolbar3], className="tvd-toolbars"
            ),  # one wrapped row on a narrow page (tvd.css)
            body,
            dcc.Store(id=_ids.store(aio_id), data=store),
            # keys anywhere on the page (not in a text field): shortcuts, and Shift held while clicking
            *([EventListener(id=_ids.keys(aio_id), events=KEY_EVENTS)] if EventListener is not None else []),
            dcc.Store(id=_ids.hits(aio_id), data=hits),
            dcc.Store(
                id=_ids.selected(aio_id), data=selection(tid, draw.highlight) if draw.highlight else None
            ),
        ]
        style = {**viewstep.root_style(theme), **div_props.pop("style", {})}
        super().__init__(
            children, id=_ids.root(aio_id), style=style, className=viewstep.root_class(theme), **div_props
        )
