"""Dash apps that host ModelGraphs: one trace, the demo gallery, or any registered trace by URL.

``make_app`` builds the app (``app.server`` is the Flask app for gunicorn); ``serve_forever`` runs it
in the foreground (the CLI); ``BackgroundServer`` runs it in a thread (notebooks, tests, benchmarks).
A page at ``/?trace=<id>`` shows any trace in the registry, ``/?demo=<name>`` a gallery demo
(``/?file=<name>`` a trace of a folder gallery, gallery.py).
"""

from __future__ import annotations

import html as html_text
import logging
import signal
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import dash
from dash import ALL, Input, Output, State, dcc, html

from torchvista_dash.app.actions import keys, links
from torchvista_dash.app.actions.details import error_text
from torchvista_dash.app.component.component import ModelGraph
from torchvista_dash.app.http import compress, guard, picture_routes, push
from torchvista_dash.app.server import bring, firstpaint, focusing
from torchvista_dash.app.server.gallery import Gallery, demo_gallery
from torchvista_dash.app.server.install import install
from torchvista_dash.app.traces import firstview, page_state, registry, state
from torchvista_dash.model.options import option_names, options_from_text, split_options
from torchvista_dash.render import plotlyjs
from torchvista_dash.traced import Trace

_apps = 0
_app_lock = threading.Lock()
# Flask and Dash take an app's root from its import name, and ours is not importable: without this they
# would publish the current directory's ./static and ./assets (and inject ./assets/*.js into every page).
# The package's own folder instead; it has no static files, and assets only if the package ships them.
_ROOT = Path(__file__).resolve().parent
ASSETS_DIR = _ROOT / "assets"


def _query_options(query: dict[str, list[str]], options: dict[str, Any]) -> dict[str, Any]:
    """Options named in the page's query (``?depth=all&theme=dark``, any ``ViewOptions``/``DrawOptions``
    field) override the app's defaults."""
    return {**options, **options_from_text({k: v[0] for k, v in query.items() if v})}


def _page_for(
    app: dash.Dash,
    query: dict[str, list[str]],
    traces: Sequence[Trace],
    gallery: Gallery | None,
    options: dict[str, Any],
) -> Any:
    try:
        options = _query_options(query, options)
        return _page(app, query, traces, gallery, options)
    except (ValueError, TypeError, registry.UnknownTrace) as exc:
        return error_text(f"cannot show this page: {exc}", padding="8px")
    except (
        Exception
    ) as exc:  # dot missing, failing or over its budget: said in the page, as clicks do, not a 500
        return error_text(
            f"cannot draw this graph: {type(exc).__name__}: {exc}", padding="8px", className="tvd-app-error"
        )


def _target(
    query: dict[str, list[str]], traces: Sequence[Trace], gallery: Gallery | None
) -> tuple[Trace, str] | str:
    """The trace a page shows and its ModelGraph id, or the message the page shows instead."""
    if "trace" in query:
        tid = query["trace"][0]
        return registry.get(tid), f"trace-{tid}"
    if gallery is not None:
        found = gallery.trace(query.get(gallery.key, [gallery.default])[0])
        return found if isinstance(found, str) else (found, "gallery")
    if traces:
        return traces[0], "main"
    return "Nothing to show: open /?trace=<id> or start with a TARGET."


def _page(
    app: dash.Dash,
    query: dict[str, list[str]],
    traces: Sequence[Trace],
    gallery: Gallery | None,
    options: dict[str, Any],
) -> Any:
    target = _target(query, traces, gallery)
    if isinstance(target, str):
        return error_text(target) if gallery is not None and gallery.key in query else html.Div(target)
    trace, aio_id = target
    root = options.pop("root", None)
    trace = trace.focused(root)  # the ids of the view's address are the focused graph's
    spec = links.spec_from_query(
        trace.graph,
        query,
        options.get("depth", 1),
        options.get("fold_repeats", True),
        options.get("show_params", False),
    )
    marks = {int(k[1:]): query[k][0] for k in keys.BOOKMARK_KEYS if query.get(k)}
    graph = ModelGraph(trace, id=aio_id, spec=spec, bookmarks=marks, app=app, **options)
    return html.Div([focusing.bar(query, root), graph])


GALLERY_BAR_PX = 46  # the gallery's model dropdown above the ModelGraph


def _first_picture(
    app: dash.Dash,
    query: dict[str, list[str]],
    traces: Sequence[Trace],
    gallery: Gallery | None,
    options: dict[str, Any],
) -> str:
    """The page's first picture (firstpaint.py), or "" when the page shows no graph or it cannot be drawn."""
    try:
        options = _query_options(query, options)
        target = _target(query, traces, gallery)
        if isinstance(target, str) or any(
            k in query for k in (*links.VIEW_KEYS, "root")
        ):  # a linked view, or one module of the model: drawn by Dash
            return ""
        tid = registry.register(target[0])
        top = firstpaint.GRAPH_TOP_PX + (GALLERY_BAR_PX if gallery is not None else 0)
        names = option_names()
        view, draw = split_options({k: v for k, v in options.items() if k in names}, where="make_app")
        spec, highlight = state.first_view(tid, view)
        # the picture is the first figure's own (its tiles' URLs): the figure must be ready
        if not firstview.prepared(
            tid, spec, replace(draw, highlight=highlight if draw.highlight is None else draw.highlight)
        ):
            return ""  # a slow first view: the page comes now, and shows how far its layout has got
        return firstpaint.first_picture_html(
            tid,
            view,
            draw,
            top_px=top,
            height=options.get("height", "72vh"),
            picture_base=picture_routes.base_url(app),
        )
    except Exception:  # the page itself reports what is wrong; the picture is only a head start
        return ""


class _App(dash.Dash):
    """A Dash app whose page HTML preloads the layout and carries the first picture of its graph; it serves
    only package-owned files, answers only for its own Host names and refuses oversized requests
    (guard.py)."""

    def __init__(
        self,
        name: str,
        *,
        first_picture: Callable[[dash.Dash, dict[str, list[str]]], str] | None = None,
        allowed_hosts: Iterable[str] = (),
        **kwargs: Any,
    ) -> None:
        import flask

        server = flask.Flask(name, root_path=str(_ROOT), static_folder=None)
        server.config["MAX_CONTENT_LENGTH"] = guard.max_request_bytes()
        super().__init__(name, server=server, assets_folder=str(ASSETS_DIR), pages_folder="", **kwargs)  # type: ignore[arg-type]
        self.host_guard = guard.HostGuard(server.wsgi_app, allowed_hosts)
        server.wsgi_app = self.host_guard  # type: ignore[method-assign]
        self._first_picture = first_picture
        self._setup_lock = threading.Lock()
        install(self)  # the picture route, request watching, the ModelGraph callbacks at the first request
        # a click's figure: 2.5 MB of JSON at 80 layers, 0.17 gzipped
        server.after_request(compress.gzip_json)

    def _setup_server(self) -> None:
        """Dash's once-per-process setup, run before every request, with the threads of a worker waiting for
        it: Dash marks it done as it starts, then builds the layout (seconds for a big view) before it knows
        its script files, and a page's script asked meanwhile on another thread is refused (HTTP 500, a page
        stuck on its first picture)."""
        with self._setup_lock:
            super()._setup_server()

    def interpolate_index(self, **kwargs: Any) -> str:  # type: ignore[override]  # Dash passes keywords
        from flask import has_request_context, request

        # Dash writes the title into <title> unescaped, and it comes from the model (a trace file's
        # model_name, a model's class name): escaped, a hostile name is text, not markup
        kwargs["title"] = html_text.escape(str(kwargs.get("title", "")))
        if self._first_picture is not None and has_request_context():
            kwargs["app_entry"] = (
                self._first_picture(self, parse_qs(request.query_string.decode())) + kwargs["app_entry"]
            )
        # the renderer's own request for the layout (which draws the first view on the server), started with
        # the page instead of after its scripts have run; it reuses this response (same URL, method and
        # credentials)
        prefix = self.config.requests_pathname_prefix or "/"
        kwargs["metas"] += (
            f'\n<link rel="preload" as="fetch" crossorigin="anonymous" href="{prefix}_dash-layout">'
        )
        return super().interpolate_index(**kwargs)


def _referrer_query() -> str:
    from flask import has_request_context, request

    if not has_request_context() or not request.referrer:
        return ""
    q = urlsplit(request.referrer).query
    return f"?{q}" if q else ""


def use_basic_plotly(app: dash.Dash) -> bool:
    """Serve plotly's scatter-only bundle and load it before Dash's scripts; dcc.Graph then uses this global
    ``Plotly`` instead of parsing the full 4.8 MB one (most of a first draw, see render/plotlyjs.py).

    Call it on your own app before its first request; False (and nothing changed) if the bundle is not
    installed (`make plotly-basic`)."""
    from flask import send_file

    bundle = plotlyjs.basic_bundle()
    if bundle is None:
        return False
    src = (app.config.requests_pathname_prefix or "/") + plotlyjs.URL_PATH
    if src not in app.config.external_scripts:
        app.config.external_scripts.append(src)

        def plotly_basic() -> Any:
            return send_file(bundle, mimetype="text/javascript", max_age=86400)

        app.server.add_url_rule("/" + plotlyjs.URL_PATH, "tvd_plotly_basic", plotly_basic)
    return True


def allow_hosts(app: dash.Dash, hosts: Iterable[str]) -> None:
    """Let ``app`` answer requests whose Host is one of ``hosts`` ("*": any; "0.0.0.0": this machine's
    names)."""
    host_guard = getattr(app, "host_guard", None)
    if host_guard is not None:
        host_guard.allow(hosts)


def make_app(
    traces: Sequence[Trace] = (),
    *,
    gallery: bool | Gallery = False,
    title: str = "torchvista_dash",
    requests_pathname_prefix: str | None = None,
    first_picture: bool = True,
    allowed_hosts: Iterable[str] = (),
    push_token: str | None = None,
    uploads: bool = True,
    **options: Any,
) -> dash.Dash:
    """A Dash app showing ``traces[0]`` (or the gallery), and any registered trace at ``/?trace=<id>``.

    ``gallery``: True for the built-in demos, or a ``Gallery`` (``gallery.folder_gallery(path)``: a folder of
    traces); ``first_picture``: pages carry their first view as server-drawn SVG, painted before Dash has
    started (firstpaint.py). ``allowed_hosts``: Host names the app answers for besides localhost, 127.0.0.1,
    ::1, ``$TVD_ALLOWED_HOSTS`` and the address it is served on (guard.py). ``push_token``: the token
    ``POST /_tvd/push`` requires (default ``$TVD_PUSH_TOKEN``; none: every push refused); ``uploads``: the
    page takes trace files dropped on it (bring.py)."""
    global _apps
    if gallery is True:
        gallery = demo_gallery()
    elif gallery is False:
        gallery = None
    for t in traces:
        registry.register(t, keep=True)  # the server's own traces are never evicted
    with _app_lock:
        _apps += 1
        name = f"torchvista_dash_app_{_apps}"
    app = _App(
        name,
        title=title,
        update_title=None,
        requests_pathname_prefix=requests_pathname_prefix,
        suppress_callback_exceptions=True,
        first_picture=(lambda app, query: _first_picture(app, query, traces, gallery, options))
        if first_picture
        else None,
        allowed_hosts=allowed_hosts,
    )
    use_basic_plotly(app)
    bring.add_push_route(app, push.push_token(push_token))
    if uploads:
        bring.add_upload_callback(app)

    def layout() -> Any:
        # Drawn in the layout request itself (the page's query comes in its Referer), so the first view
        # needs no callback round trip; the route callback below covers a missing Referer.
        search = _referrer_query()
        query = parse_qs(search.lstrip("?"))
        top: list[Any] = [
            dcc.Location(id="tvd-url", refresh=False),
            dcc.Store(id="tvd-rendered", data=search),
        ]
        if gallery is not None:
            current = query.get(gallery.key, [gallery.default])[0]
            top.append(
                html.Div(
                    [
                        html.B(gallery.title, style={"marginRight": "12px"}),
                        dcc.Dropdown(
                            id="tvd-demo",
                            value=current if current in gallery.labels else None,
                            clearable=False,
                            searchable=len(gallery.labels) > 12,
                            style={"width": "640px"},
                            options=[
                                {"label": label, "value": name} for name, label in gallery.labels.items()
                            ],
                        ),
                    ],
                    className="tvd-gallery-bar",
                    style={
                        "display": "flex",
                        "alignItems": "center",
                        "padding": "6px 8px",
                        "fontFamily": "system-ui, sans-serif",
                    },
                )
            )
        page = html.Div(_page_for(app, query, traces, gallery, options), id="tvd-page")
        # below the graph: the first picture, drawn where the graph will be, stays in place
        return html.Div([*top, page, *([bring.drop_zone()] if uploads else [])])

    app.layout = layout

    # The address follows the page (links.py): a chosen demo or file, and every view change, is a new history
    # entry; back/forward (or an edited address) draw the page the address names.
    @app.callback(
        Output("tvd-page", "children"),
        Output("tvd-rendered", "data"),
        Output("tvd-url", "search"),
        *([Output("tvd-demo", "value")] if gallery is not None else []),
        Input("tvd-url", "search"),
        State("tvd-rendered", "data"),
        *([Input("tvd-demo", "value")] if gallery is not None else []),
    )
    def route(search: str | None, rendered: str | None, demo: str | None = None) -> Any:
        keep = [dash.no_update] if gallery is not None else []
        if gallery is not None and dash.ctx.triggered_id == "tvd-demo" and demo:
            query = parse_qs((search or "").lstrip("?"))
            if query.get(gallery.key, [gallery.default])[0] == demo:
                return dash.no_update, dash.no_update, dash.no_update, *keep  # the address already says so
            new = "?" + urlencode({gallery.key: demo})
            return _page_for(app, {gallery.key: [demo]}, traces, gallery, options), new, new, *keep
        if (search or "") == (rendered or ""):
            return dash.no_update, dash.no_update, dash.no_update, *keep
        query = parse_qs((search or "").lstrip("?"))
        shown = [query.get(gallery.key, [gallery.default])[0]] if gallery is not None else []
        return _page_for(app, query, traces, gallery, options), search or "", dash.no_update, *shown

    @app.callback(
        Output("tvd-url", "search", allow_duplicate=True),
        Output("tvd-rendered", "data", allow_duplicate=True),
        Input(ModelGraph.ids.store(ALL), "data"),
        State("tvd-url", "search"),
        prevent_initial_call=True,
    )
    def remember(stores: list[dict[str, Any]] | None, search: str | None) -> Any:
        if not stores or not stores[0]:
            return dash.no_update, dash.no_update
        try:
            page = page_state.load(stores[0])
            new = links.page_search(search, registry.get(page.trace).graph, page)
        except Exception:  # the address is a convenience: never break the page over it (the view says why)
            return dash.no_update, dash.no_update
        return (dash.no_update, dash.no_update) if new == (search or "") else (new, new)

    focusing.register(app)

    # lay out and draw the default page's first view now (figure, and picture when on), so the first browser
    # finds them cached
    threading.Thread(
        target=_warm_up, args=(app, traces, gallery, options, first_picture), name="tvd-warm-up", daemon=True
    ).start()
    return app


def _warm_up(
    app: dash.Dash, traces: Sequence[Trace], gallery: Gallery | None, options: dict[str, Any], picture: bool
) -> None:
    try:
        _page_for(app, {}, traces, gallery, options)
        if picture:
            _first_picture(app, {}, traces, gallery, options)
    except Exception:  # a head start only: the page itself reports what is wrong when it is requested
        pass


def serve_forever(app: dash.Dash, host: str = "127.0.0.1", port: int = 8050) -> None:
    """Run in the foreground until Ctrl-C (threaded werkzeug: one slow layout never blocks another tab)."""
    from werkzeug.serving import make_server

    allow_hosts(app, [host])
    server = make_server(host, port, app.server, threaded=True)
    if threading.current_thread() is threading.main_thread():
        # stopped with SIGTERM (a service manager, `kill`), exit as on Ctrl-C: what runs at exit then runs too
        # (layout.graphviz.run.kill_children: no dot of ours goes on laying out after us)
        signal.signal(signal.SIGTERM, _exit_on_sigterm)
    print(f"torchvista_dash serving on http://{host}:{server.server_port}/  (Ctrl-C to stop)", flush=True)
    try:
        server.serve_forever()
    finally:
        server.server_close()


def _exit_on_sigterm(_signum: int, _frame: object) -> None:
    raise SystemExit(0)


class BackgroundServer:
    """A Dash app served from a daemon thread on ``host:port`` (0: any free port)."""

    def __init__(self, app: dash.Dash, host: str = "127.0.0.1", port: int = 0) -> None:
        from werkzeug.serving import make_server

        logging.getLogger("werkzeug").setLevel(logging.ERROR)
        self.app = app
        allow_hosts(app, [host])
        self._server = make_server(host, port, app.server, threaded=True)
        self.host, self.port = host, self._server.server_port
        self._thread = threading.Thread(
            target=self._server.serve_forever, name=f"tvd-server-{self.port}", daemon=True
        )
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}/"

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
