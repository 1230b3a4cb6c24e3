"""``show()``: the interactive graph in a notebook (Jupyter, JupyterLab, VS Code, Colab).

One process-wide Dash app, served from a background thread, hosts every graph ever shown; each
``show()`` registers its trace and displays an iframe of ``<server>/?trace=<id>``, so earlier outputs
stay alive and re-running a cell just shows the graph again. The address comes from Dash's own
Jupyter support (``dash.jupyter_dash``): once ``jupyter_dash.infer_jupyter_proxy_config()`` has run,
it is the path through JupyterLab/Hub's proxy; in Colab the kernel port is served through Colab's proxy.
"""

from __future__ import annotations

import socket
import sys
import threading
import webbrowser
from dataclasses import replace
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode, urlsplit

from torchvista_dash.app.traces import registry
from torchvista_dash.model.options import (
    DEFAULT_DRAW,
    DEFAULT_VIEW,
    DrawOptions,
    ViewOptions,
    options_to_text,
    split_options,
)

if TYPE_CHECKING:  # pragma: no cover
    from torchvista_dash.app.server.server import BackgroundServer
    from torchvista_dash.traced import Trace

MODES = ("inline", "external", "tab")

_lock = threading.Lock()
_server: BackgroundServer | None = None
_base_url: str = ""


def _free_port(host: str) -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def _jupyter_config() -> dict[str, Any]:
    """Dash's Jupyter proxy settings, if known: behind JupyterHub/Lab's proxy, run
    ``from dash import jupyter_dash; jupyter_dash.infer_jupyter_proxy_config()`` once before ``show()``.

    It is not called here: without Dash's front-end extension it times out and leaves the kernel's
    execute handler replaced, which hangs every later cell (dash 4.4).
    """
    try:
        from dash import _jupyter
    except ImportError:  # pragma: no cover - very old dash
        return {}
    return dict(_jupyter._jupyter_config)


def server(host: str = "127.0.0.1", port: int | None = None) -> tuple[BackgroundServer, str]:
    """The process-wide server (started on first use) and the base URL a browser reaches it at."""
    global _server, _base_url
    with _lock:
        if _server is not None:
            return _server, _base_url
        import os

        from torchvista_dash.app.server.server import BackgroundServer, allow_hosts, make_app

        port = _free_port(host) if port is None else port
        cfg = _jupyter_config()
        prefix = None
        if "base_subpath" in cfg:  # JupyterLab / Hub: go through jupyter-server-proxy
            prefix = cfg["base_subpath"].rstrip("/") + f"/proxy/{port}/"
        # an output cell shows one trace: no drop zone for others under it
        app = make_app(requests_pathname_prefix=prefix, title="torchvista_dash", uploads=False)
        try:
            _server = BackgroundServer(app, host, port)
        except OSError as exc:
            raise RuntimeError(
                f"cannot serve the notebook graphs on {host}:{port} ({exc.strerror or exc}); "
                "call show() without port= to use a free one"
            ) from None
        if "server_url" in cfg:
            root = cfg["server_url"].rstrip("/")
        elif os.environ.get("DASH_DOMAIN_BASE"):
            root = "https://" + os.environ["DASH_DOMAIN_BASE"]
        else:
            root = f"http://{host}:{_server.port}"
        # behind a proxy the browser's Host is the proxy's name; in Colab the browser is on another machine
        allow_hosts(app, ["*"] if "google.colab" in sys.modules else [urlsplit(root).netloc])
        _base_url = root + (prefix or "/")
        return _server, _base_url


def url_for(
    trace: Trace,
    view: ViewOptions = DEFAULT_VIEW,
    draw: DrawOptions = DEFAULT_DRAW,
    *,
    host: str = "127.0.0.1",
    port: int | None = None,
) -> str:
    """The address of ``trace``'s page on the notebook server; the page's query carries the options."""
    _, base = server(host, port)
    query = {"trace": registry.register(trace), **options_to_text(view, draw)}
    return f"{base}?{urlencode(query)}"


MAX_PICTURE_BYTES = 3_000_000  # a bigger saved picture is left out of the notebook (it would bloat the file)


def static_picture(
    trace: Trace, view: ViewOptions = DEFAULT_VIEW, draw: DrawOptions = DEFAULT_DRAW
) -> str | None:
    """The first view as an SVG drawn by Graphviz from the same layout (the static export, which needs no
    browser to show it: a saved notebook carries it); None when too big. Cached in the trace's registry
    entry."""
    from torchvista_dash.app.traces import state
    from torchvista_dash.pipeline import paint_of
    from torchvista_dash.render.static.graphviz import static_image

    tid = registry.register(trace)
    spec, highlight = state.first_view(tid, view)
    draw = draw if draw.highlight is not None else replace(draw, highlight=highlight)
    entry = registry.entry(tid)

    def make() -> bytes:
        vg = state.visible(tid, spec)
        return static_image(
            trace.graph,
            vg,
            state.layout_of(tid, spec, draw.rankdir),
            "svg",
            draw.theme,
            highlight=draw.highlight,
            paint=paint_of(trace.graph, vg, draw, trace.paint(vg, draw.theme)),
        )

    svg = entry.pictures.get((spec, draw), make)
    return svg.decode("utf-8") if len(svg) <= MAX_PICTURE_BYTES else None


PROGRESS_AFTER_S = 1.0  # a first view laid out sooner prints nothing in the cell


def wait_for_first_view(trace: Trace, view: ViewOptions, draw: DrawOptions, stream: Any) -> None:
    """The kernel lays the first view out before the cell shows it (its saved picture needs the layout): one
    that takes over ``PROGRESS_AFTER_S`` says on the cell's stderr which stage runs and how many modules are
    done, one line redrawn in place, as ``export`` does on a terminal."""
    import time

    from torchvista_dash.app.traces import firstview, progress, state

    tid = registry.register(trace)
    spec, highlight = state.first_view(tid, view)
    draw = draw if draw.highlight is not None else replace(draw, highlight=highlight)
    started = time.monotonic()
    if firstview.prepared(tid, spec, draw, PROGRESS_AFTER_S, figure=False):
        return
    work = ("layout", tid, spec, draw.rankdir)  # what state.layout_of reports to (progress.reporter)
    shown = ""
    while not firstview.prepared(tid, spec, draw, 0.25, figure=False):
        text = progress.work_text(work) or "laying out"
        line = f"{text[:1].upper()}{text[1:]} ({time.monotonic() - started:.1f} s)"
        stream.write("\r" + line.ljust(len(shown)))
        stream.flush()
        shown = line
    stream.write(f"\rLaid out the first view in {time.monotonic() - started:.1f} s".ljust(len(shown)) + "\n")
    stream.flush()


def output_bundle(
    trace: Trace, url: str, view: ViewOptions, draw: DrawOptions, width: str | int, height: int
) -> dict[str, str]:
    """One output, two pictures: a live kernel's notebook shows the interactive graph (an iframe, text/html);
    GitHub, nbviewer and tools that do not run the iframe's server can show the static picture
    (image/svg+xml) that is saved with it."""
    from IPython.display import IFrame

    bundle = {
        "text/plain": f"<torchvista_dash graph of {trace.graph.model_name or 'a model'}: {url}>",
        "text/html": IFrame(url, width=width, height=height)._repr_html_(),
    }
    try:
        wait_for_first_view(trace, view, draw, sys.stderr)
        svg = static_picture(trace, view, draw)
    except Exception:  # the picture is for later readers; the live graph must show whatever happens
        svg = None
    if svg is not None:
        bundle["image/svg+xml"] = svg
    return bundle


def show(
    trace: Trace,
    mode: str = "inline",
    *,
    width: str | int = "100%",
    height: int = 720,
    host: str = "127.0.0.1",
    port: int | None = None,
    **options: Any,
) -> None:
    """Draw ``trace`` interactively: ``inline`` (an iframe in the output; in a terminal a browser tab, and a
    script's ``show()`` serves until Ctrl-C), ``external`` (print the URL) or ``tab`` (open a browser tab).
    ``options``: those of ``ModelGraph`` (depth, theme, rankdir, fold_repeats,
    show_params, labels, details, color_by). On a failed trace the partial graph is shown, then the model's
    exception
    is re-raised."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}, not {mode!r}")
    view, draw = split_options(options, where="show()")
    url = url_for(trace, view, draw, host=host, port=port)
    where = front_end()
    if "google.colab" in sys.modules:
        _show_colab(url, mode, width, height)
    elif mode == "inline" and where == "kernel":
        from IPython.display import display

        display(output_bundle(trace, url, view, draw, width, height), raw=True)
    elif mode == "inline" and where == "script":
        serve_until_interrupted(url)
    else:  # a terminal (Python's or IPython's REPL) has no cell to draw in: a tab of its own
        print(f"torchvista_dash: {url}")
        if mode != "external":
            webbrowser.open(url)
    if trace.failed:
        trace.raise_if_failed()


def front_end() -> str:
    """Where ``show()`` runs: a notebook ``kernel``, an interactive ``repl`` (python, IPython in a terminal),
    or a ``script`` (whose end would stop the graph's server thread)."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    if shell is not None and getattr(shell, "kernel", None) is not None:
        return "kernel"
    if shell is not None or hasattr(sys, "ps1") or sys.flags.interactive:
        return "repl"
    return "script"


def serve_until_interrupted(url: str) -> None:
    """A script's ``show()``: open a browser tab and keep serving until Ctrl-C, as matplotlib's ``plt.show()``
    blocks until its window closes; then the script goes on."""
    print(f"torchvista_dash: serving {url} (Ctrl-C to stop and go on)", flush=True)
    webbrowser.open(url)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        print("torchvista_dash: stopped serving", flush=True)


def _show_colab(url: str, mode: str, width: str | int, height: int) -> None:  # pragma: no cover - needs Colab
    from urllib.parse import urlsplit

    from google.colab import output  # type: ignore[import-not-found]

    parts = urlsplit(url)
    path = f"{parts.path}?{parts.query}"
    if mode == "inline":
        output.serve_kernel_port_as_iframe(parts.port, path=path, width=width, height=height)
    else:
        output.serve_kernel_port_as_window(parts.port, path=path)
