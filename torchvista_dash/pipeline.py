"""Graph + options → view → layout → a figure or a file: the orchestration above the pipeline's stages.

The stages only take plain data from the one before (``render`` gets a graph, a view and a layout), so the
steps that chain them for a user — ``Trace.figure``, ``Trace.export``, the CLI's ``export`` — live here, above
them, and nothing below calls back into the ``Trace`` facade.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from torchvista_dash.model.graph import Graph
from torchvista_dash.model.options import DrawOptions, split_options

if TYPE_CHECKING:  # pragma: no cover - typing only
    import plotly.graph_objects as go

    from torchvista_dash.render.paint import Paint
    from torchvista_dash.traced import Trace
    from torchvista_dash.view.types import VisibleGraph

FORMATS: tuple[str, ...] = ("html", "svg", "png", "pdf", "json")
_ALIASES = {"htm": "html"}


def resolve_format(path: Path, fmt: str | None) -> str:
    """The export format: ``fmt`` if given, else the file extension; a clear error for anything else."""
    supported = ", ".join(FORMATS)
    if fmt is None:
        ext = path.suffix.lower().lstrip(".")
        if not ext:
            raise ValueError(
                f"cannot tell the export format of {str(path)!r}: it has no extension; "
                f"use one of {supported} (e.g. model.html) or pass fmt="
            )
        fmt = ext
    key = str(fmt).lower().lstrip(".")
    key = _ALIASES.get(key, key)
    if key not in FORMATS:
        raise ValueError(f"unsupported export format {fmt!r} for {str(path)!r}; supported: {supported}")
    return key


def paint_of(graph: Graph, vg: VisibleGraph, draw: DrawOptions, paint: Paint | None = None) -> Paint | None:
    """What is painted over the kind colours: ``paint`` if given (a diff's), else boxes coloured by
    ``draw.color_by``, else nothing; then a selection's reach lit over it (``draw.selected``)."""
    if paint is None and draw.color_by is not None:
        from torchvista_dash.render.colorby import colour_paint

        paint = colour_paint(graph, vg, draw.color_by, draw.theme)
    if draw.style:
        from torchvista_dash.render.rules import rules_paint

        paint = rules_paint(graph, vg, draw.style, paint)  # over colour-by: a rule the user wrote wins
    if draw.selected is None:
        return paint
    from torchvista_dash.render.paint import reach_paint
    from torchvista_dash.render.style import get_theme
    from torchvista_dash.view.reach import lit

    reach = lit(vg, draw.selected, draw.reach, draw.path_to)
    return reach_paint(vg, reach, get_theme(draw.theme).highlight, paint)


def figure_of(graph: Graph, vg: VisibleGraph, draw: DrawOptions, paint: Paint | None = None) -> go.Figure:
    """The plotly Figure of a view: laid out for ``draw.rankdir``, drawn with the rest of ``draw``."""
    from torchvista_dash.layout import layout_view
    from torchvista_dash.render import make_figure

    return make_figure(
        graph,
        vg,
        layout_view(vg, rankdir=draw.rankdir),
        paint=paint_of(graph, vg, draw, paint),
        **draw.for_render(),
    )


def export(
    trace: Trace,
    path: str | Path,
    fmt: str | None = None,
    *,
    expanded: Iterable[str] | None = None,
    unfolded: Iterable[str] | None = None,
    **options: Any,
) -> Path:
    """Write ``trace`` to ``path`` as html, svg, png, pdf or json (from the extension unless ``fmt`` is
    given).

    ``options`` are ``ViewOptions`` and ``DrawOptions`` fields (depth, theme, rankdir, fold_repeats, ...);
    ``labels`` and ``details`` apply to HTML only (static images always draw every label). JSON is the whole
    trace, so it ignores them.
    """
    from torchvista_dash.layout import layout_view
    from torchvista_dash.render.static import graphviz as static
    from torchvista_dash.render.static.html import html_page
    from torchvista_dash.view.build import view_of

    path = Path(path)
    kind = resolve_format(path, fmt)
    view, draw = split_options(options, where="export()")
    if not path.parent.is_dir():
        raise FileNotFoundError(f"cannot write {path}: the directory {path.parent} does not exist")
    trace = trace.focused(view.root)
    if kind == "json":
        return trace.save(path)
    graph = trace.graph
    vg = view_of(graph, view, trace.expanded_or_default(expanded), unfolded)
    paint = paint_of(graph, vg, draw, trace.paint(vg, draw.theme))
    if kind in static.STATIC_FORMATS:
        lay = layout_view(vg, rankdir=draw.rankdir)
        path.write_bytes(
            static.static_image(graph, vg, lay, kind, draw.theme, highlight=draw.highlight, paint=paint)
        )
        return path
    path.write_text(html_page(figure_of(graph, vg, draw, paint), graph.model_name), encoding="utf-8")
    return path
