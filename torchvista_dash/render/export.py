"""Static files from a Trace: standalone HTML (plotly.js embedded), SVG/PNG/PDF (Graphviz), JSON (the trace).

HTML is the interactive figure itself, written offline-ready. SVG/PNG/PDF come from Graphviz drawing the
same layout with the same colours (static.py): plotly's own image export would need kaleido and a
downloaded Chrome, while Graphviz is already required for the layout.
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import plotlyjs
from .figure import SCROLL_CONFIG, make_figure
from .static import STATIC_FORMATS, render_static

if TYPE_CHECKING:  # pragma: no cover - typing only
    import plotly.graph_objects as go

    from ..traced import Trace

FORMATS: tuple[str, ...] = ("html", "svg", "png", "pdf", "json")
HTML_DIV_ID = "torchvista-dash-graph"   # fixed, so the same figure writes byte-identical HTML
_ALIASES = {"htm": "html"}


def resolve_format(path: Path, fmt: str | None) -> str:
    """The export format: ``fmt`` if given, else the file extension; a clear error for anything else."""
    supported = ", ".join(FORMATS)
    if fmt is None:
        ext = path.suffix.lower().lstrip(".")
        if not ext:
            raise ValueError(f"cannot tell the export format of {str(path)!r}: it has no extension; "
                             f"use one of {supported} (e.g. model.html) or pass fmt=")
        fmt = ext
    key = str(fmt).lower().lstrip(".")
    key = _ALIASES.get(key, key)
    if key not in FORMATS:
        raise ValueError(f"unsupported export format {fmt!r} for {str(path)!r}; supported: {supported}")
    return key


def _split_options(options: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Figure options → (view options for Trace.view, drawing options)."""
    view = dict(options)
    draw = {"theme": view.pop("theme", "light"), "rankdir": view.pop("rankdir", "TB"),
            "highlight": view.pop("highlight", None), "labels": view.pop("labels", None),
            "details": view.pop("details", None)}
    return view, draw


def export(trace: Trace, path: str | Path, fmt: str | None = None, **figure_options: Any) -> Path:
    """Write ``trace`` to ``path`` as html, svg, png, pdf or json (from the extension unless ``fmt`` is given).

    ``figure_options`` are those of ``Trace.figure`` (depth, expanded, theme, rankdir, fold_repeats,
    show_params, ...) plus make_figure's ``highlight``, ``labels`` and ``details`` (HTML only: static
    images always draw every label). JSON is the whole trace, so it ignores them.
    """
    path = Path(path)
    kind = resolve_format(path, fmt)
    if not path.parent.is_dir():
        raise FileNotFoundError(f"cannot write {path}: the directory {path.parent} does not exist")
    if kind == "json":
        return trace.save(path)
    view_opts, draw = _split_options(figure_options)
    depth = view_opts.pop("depth", 1)
    vg = trace.view(depth=depth, **view_opts)
    lay = trace.layout(vg, rankdir=draw["rankdir"])
    if kind in STATIC_FORMATS:
        return render_static(trace.graph, vg, lay, path, kind, draw["theme"], highlight=draw["highlight"])
    fig = make_figure(trace.graph, vg, lay, draw["theme"], highlight=draw["highlight"], labels=draw["labels"],
                      details=draw["details"])
    path.write_text(html_page(fig, trace.graph.model_name), encoding="utf-8")
    return path


def html_page(fig: go.Figure, model_name: str = "") -> str:
    """A standalone page for ``fig``: plotly.js embedded, scroll zoom on, a fixed div id (deterministic)."""
    basic = plotlyjs.script_tag()   # scatter-only plotly.js: a quarter of the size, 4× faster first draw
    page = fig.to_html(include_plotlyjs=basic is None, full_html=True, config=SCROLL_CONFIG, div_id=HTML_DIV_ID,
                       default_width="100%", default_height="100vh")
    title = html.escape(model_name or "model") + " — torchvista_dash"
    page = page.replace("<head>", f"<head><title>{title}</title>{basic or ''}", 1)
    return page.replace("<body>", '<body style="margin:0">', 1)
