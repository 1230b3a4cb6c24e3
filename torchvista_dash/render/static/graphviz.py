"""SVG / PNG / PDF through Graphviz's own renderer, drawing the *same* geometry as the plotly figure.

Plotly's image export needs kaleido plus a Chrome it downloads; Graphviz is already required for the layout,
so static files come from it: every box, cluster and edge of the ``Layout`` is written (with pydot, as the
layout's DOT is) as a node/edge with a pinned position (``pos="x,y!"``, edge splines in ``pos``) and rendered
with ``neato -n2``, which draws positions as given instead of laying out again. The run goes through the
layout's process runner (``layout/graphviz/run.py``: same time budget, ``$TVD_DOT_TIMEOUT``). Colours, shapes
and label text come from the same tables as the figure (style.py).
"""

from __future__ import annotations

import html
import re
from typing import Any

import pydot

from torchvista_dash.layout.graphviz.run import run_dot
from torchvista_dash.layout.single.dot import Quoted
from torchvista_dash.layout.textmetrics import EDGE_PT, FONT_NAME, HEADER_PT, LABEL_PT, SUB_PT, text_width
from torchvista_dash.layout.types import Box, Layout, Point, check_drawable
from torchvista_dash.model.graph import Graph
from torchvista_dash.render import shapes
from torchvista_dash.render.labels import Boxes, bold_em, edge_labels, header_rect, header_text
from torchvista_dash.render.paint import Paint
from torchvista_dash.render.style import Theme, get_theme, kind_style, node_text
from torchvista_dash.render.svg.picture import HEADER_BASE as HEADER_OFFSET
from torchvista_dash.render.svg.picture import HEADER_INSET as TOGGLE_INSET
from torchvista_dash.render.svg.picture import extent
from torchvista_dash.view.types import VisibleGraph, VisibleKind

STATIC_FORMATS: tuple[str, ...] = ("svg", "png", "pdf")
PNG_DPI = 144
PNG_MAX_PX = 16000  # long side; bigger views get a lower dpi instead of cairo's silent down-scaling

# visible kind → (Graphviz shape, extra style, peripheries)
_GV_SHAPES: dict[VisibleKind, tuple[str, str, int]] = {
    "op": ("box", "rounded,", 1),
    "module": ("box", "", 1),
    "folded": ("box", "", 2),
    "input": ("box", "rounded,", 1),
    "output": ("box", "rounded,", 1),
    "parameter": ("hexagon", "", 1),
    "constant": ("octagon", "", 1),
}


def _colour(c: str) -> str:
    """Plotly colour strings → Graphviz ``#rrggbb[aa]``."""
    m = re.fullmatch(r"rgba?\(\s*(\d+)\s*,\s*(\d+)\s*,\s*(\d+)\s*(?:,\s*([\d.]+)\s*)?\)", c)
    if not m:
        return c
    r, g, b = (int(m.group(i)) for i in (1, 2, 3))
    out = f"#{r:02x}{g:02x}{b:02x}"
    if m.group(4) is not None:
        out += f"{round(float(m.group(4)) * 255):02x}"
    return out


def _h(text: str) -> str:
    return html.escape(str(text), quote=True)


def _num(v: float) -> str:
    return f"{v:.2f}".rstrip("0").rstrip(".")


class _Html:
    """An HTML-like label, written as it is."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def __str__(self) -> str:
        return self.text


def _a(**attrs: Any) -> dict[str, Any]:
    """Attribute values quoted once, here, with layout.single.dot's quoting (HTML labels as they are): pydot
    writes non-str values as given, and its own per-character quoting scan would be about half the time of the
    static DOT."""
    return {
        k: (_Html(v) if v.startswith("<") else Quoted(v)) if isinstance(v, str) else v
        for k, v in attrs.items()
    }


def _pinned(box: Box) -> dict[str, Any]:
    """A node drawn exactly over ``box``."""
    x0, y0, x1, y1 = box
    return {
        "pos": f"{_num((x0 + x1) / 2)},{_num((y0 + y1) / 2)}!",
        "width": _num((x1 - x0) / 72),
        "height": _num((y1 - y0) / 72),
        "fixedsize": "true",
    }


def _spline(points: tuple[Point, ...]) -> str | None:
    """A polyline ending at the arrow tip → DOT edge ``pos``: cubic B-spline to the arrow base, ``e,`` tip."""
    head = shapes.arrowhead(points)
    if head is None:
        return None
    tip = points[-1]
    base = ((head[1][0] + head[2][0]) / 2, (head[1][1] + head[2][1]) / 2)
    pts = list(points[:-1]) + [base]
    ctrl = [pts[0]]
    for a, b in zip(pts, pts[1:], strict=False):
        ctrl += [
            (a[0] + (b[0] - a[0]) / 3, a[1] + (b[1] - a[1]) / 3),
            (a[0] + 2 * (b[0] - a[0]) / 3, a[1] + 2 * (b[1] - a[1]) / 3),
            b,
        ]
    return f"e,{_num(tip[0])},{_num(tip[1])} " + " ".join(f"{_num(x)},{_num(y)}" for x, y in ctrl)


def static_dot(
    graph: Graph,
    vg: VisibleGraph,
    layout: Layout,
    theme: str = "light",
    *,
    highlight: str | None = None,
    paint: Paint | None = None,
) -> pydot.Dot:
    """The pydot graph that draws the layout's geometry as-is (for ``neato -n2``) with the figure's colours
    (and ``paint``'s: colour by cost, a diff)."""
    th: Theme = get_theme(theme)
    paint = paint or Paint()
    check_drawable(vg, layout, highlight)
    x0, y0, x1, y1 = picture_bounds(layout, paint)
    g = pydot.Dot(
        "torchvista_dash",
        graph_type="digraph",
        bgcolor=_colour(th.paper),
        outputorder="edgesfirst",
        splines="true",
        pad="0.2",
        bb=f"{_num(x0)},{_num(y0)},{_num(x1)},{_num(y1)}",
    )
    g.set_node_defaults(fontname=FONT_NAME, fontsize=_num(LABEL_PT), margin="0", penwidth="1")
    _legend(g, extent(layout, 0.0), paint, th)
    g.set_edge_defaults(
        color=_colour(th.edge),
        fontname=FONT_NAME,
        fontsize=_num(EDGE_PT),
        fontcolor=_colour(th.muted),
        arrowsize="0.8",
        penwidth="1.2",
    )
    depth = {c.id: len(layout_chain(c.id, layout)) for c in vg.clusters}
    for i, cl in enumerate(sorted(vg.clusters, key=lambda c: depth[c.id])):
        box = layout.clusters[cl.id]
        line = th.failed_line if cl.failed else th.cluster_line
        cp = paint.clusters.get(cl.id)
        g.add_node(
            pydot.Node(
                f"c{i}",
                **_a(
                    **_pinned(box),
                    shape="box",
                    label="",
                    style="rounded,filled,dashed" if cp is not None and cp.dash else "rounded,filled",
                    fillcolor=_colour(th.cluster_fill),
                    color=_colour(cp.line if cp else line),
                    penwidth=_num(cp.width or 2.5) if cp else (2 if cl.failed else 1),
                ),
            )
        )
        text = header_text(cl.label, box)  # shortened with "…" to the cluster's width, as in the picture
        hx = box[0] + TOGGLE_INSET + bold_em(text) * HEADER_PT / 2  # its centre: bold text, at its inset
        g.add_node(
            pydot.Node(
                f"h{i}",
                **_a(
                    pos=f"{_num(hx)},{_num(box[3] - HEADER_OFFSET)}!",
                    shape="plaintext",
                    fontsize=_num(HEADER_PT),
                    label=f"<<B>{_h(text)}</B>>",
                    fontcolor=_colour(th.failed_line if cl.failed else th.font),
                ),
            )
        )
    index = {}
    for i, vn in enumerate(vg.nodes):
        index[vn.id] = f"n{i}"
        ks = kind_style(th, vn.kind, vn.failed)
        bp = paint.boxes.get(vn.id)
        fill, line, text = (bp.fill, bp.line, bp.text) if bp is not None else (ks.fill, ks.line, ks.text)
        shape, style, peri = _GV_SHAPES.get(vn.kind, ("box", "", 1))
        if bp is not None and bp.dash:
            style += "dashed,"
        html_label = _h(node_text(vn))
        sublabel = paint.sublabels.get(vn.id, vn.sublabel)
        if sublabel:
            html_label += f'<BR/><FONT POINT-SIZE="{_num(SUB_PT)}">{_h(sublabel)}</FONT>'
        pen = 1.8 if vn.kind in ("module", "folded") or vn.failed else 1
        if bp is not None and bp.width:
            pen = bp.width
        g.add_node(
            pydot.Node(
                f"n{i}",
                **_a(
                    **_pinned(layout.nodes[vn.id]),
                    shape=shape,
                    style=f"{style}filled",
                    peripheries=peri,
                    fillcolor=_colour(fill),
                    color=_colour(line),
                    fontcolor=_colour(text),
                    penwidth=_num(pen),
                    label=f"<{html_label}>",
                ),
            )
        )
    if highlight is not None:
        b = layout.nodes.get(highlight) or layout.clusters[highlight]
        g.add_node(
            pydot.Node(
                "hl",
                **_a(
                    **_pinned((b[0] - 3, b[1] - 3, b[2] + 3, b[3] + 3)),
                    shape="box",
                    style="rounded",
                    label="",
                    color=th.highlight,
                    penwidth=3.5,
                ),
            )
        )
    kind_of = {n.id: n.kind for n in vg.nodes}
    # as in the picture: an edge label over a box, a header or another edge label is left out (labels.py)
    heads = [
        header_rect(header_text(c.label, layout.clusters[c.id]), layout.clusters[c.id]) for c in vg.clusters
    ]
    shown = {id(e) for _, e in edge_labels(layout.edges, Boxes(150.0, layout.nodes.values()), heads)}
    for e in layout.edges:
        if e.src not in index or e.dst not in index:
            continue
        attrs: dict[str, Any] = {}
        pos = _spline(e.points)
        if pos:
            attrs["pos"] = pos
        if kind_of.get(e.src) in ("parameter", "constant"):
            attrs["style"] = "dotted"
        width = paint.edge_widths.get((e.src, e.dst))
        if width is not None:
            attrs["penwidth"] = _num(width)
        if e.label and e.label_pos is not None and id(e) in shown:
            attrs["label"] = e.label
            attrs["lp"] = f"{_num(e.label_pos[0])},{_num(e.label_pos[1])}"
        g.add_edge(pydot.Edge(index[e.src], index[e.dst], **_a(**attrs)))
    return g


LEGEND_GAP = 24.0  # between the drawing and its key
SWATCH = (16.0, 12.0)
LEGEND_STEP = 16.0


def _legend_size(paint: Paint) -> tuple[float, float]:
    """(width, height) of the key drawn right of the picture: the paint's title, then a swatch per entry."""
    if not paint.legend:
        return 0.0, 0.0
    labels = max(text_width(t, SUB_PT) for _, t in paint.legend)
    width = max(text_width(paint.title, HEADER_PT), SWATCH[0] + 6 + labels)
    return LEGEND_GAP + width + 8, LEGEND_STEP * (len(paint.legend) + 1) + 8


def picture_bounds(layout: Layout, paint: Paint | None) -> tuple[float, float, float, float]:
    """The drawing's bounds with room for the paint's key (right of it, from the top)."""
    x0, y0, x1, y1 = extent(layout, 0.0)
    w, h = _legend_size(paint or Paint())
    return x0, min(y0, y1 - h), x1 + w, y1


def _legend(g: pydot.Dot, bounds: tuple[float, float, float, float], paint: Paint, th: Theme) -> None:
    """The static picture's key (plotly's colour bar does not exist here): the paint's title, then each entry
    as a swatch painted as the boxes are, with its text (colour by cost: the value each step stands for)."""
    if not paint.legend:
        return
    left, top = bounds[2] + LEGEND_GAP, bounds[3]
    if paint.title:
        g.add_node(
            pydot.Node(
                "kt",
                **_a(
                    pos=f"{_num(left + text_width(paint.title, HEADER_PT) / 2)},{_num(top - 6)}!",
                    shape="plaintext",
                    fontsize=_num(HEADER_PT),
                    label=f"<<B>{_h(paint.title)}</B>>",
                    fontcolor=_colour(th.font),
                ),
            )
        )
    for i, (bp, text) in enumerate(paint.legend):
        y = top - LEGEND_STEP * (i + 1) - 6
        box = (left, y - SWATCH[1] / 2, left + SWATCH[0], y + SWATCH[1] / 2)
        g.add_node(
            pydot.Node(
                f"k{i}",
                **_a(
                    **_pinned(box),
                    shape="box",
                    label="",
                    style="filled,dashed" if bp.dash else "filled",
                    fillcolor=_colour(bp.fill),
                    color=_colour(bp.line),
                    penwidth=_num(min(bp.width or 1.0, 2.0)),
                ),
            )
        )
        tx = left + SWATCH[0] + 6 + text_width(text, SUB_PT) / 2
        g.add_node(
            pydot.Node(
                f"kl{i}",
                **_a(
                    pos=f"{_num(tx)},{_num(y)}!",
                    shape="plaintext",
                    fontsize=_num(SUB_PT),
                    label=f"<{_h(text)}>",
                    fontcolor=_colour(th.font),
                ),
            )
        )


def to_static_dot(
    graph: Graph,
    vg: VisibleGraph,
    layout: Layout,
    theme: str = "light",
    *,
    highlight: str | None = None,
    paint: Paint | None = None,
) -> str:
    """The DOT text of ``static_dot``."""
    return str(static_dot(graph, vg, layout, theme, highlight=highlight, paint=paint).to_string())


def layout_chain(cluster_id: str, layout: Layout) -> list[str]:
    """Enclosing clusters of a cluster, innermost first (its nesting depth is the length)."""
    out: list[str] = []
    cur = layout.parent.get(cluster_id)
    while cur is not None and cur not in out:
        out.append(cur)
        cur = layout.parent.get(cur)
    return out


def static_image(
    graph: Graph,
    vg: VisibleGraph,
    layout: Layout,
    fmt: str,
    theme: str = "light",
    *,
    highlight: str | None = None,
    timeout: float | None = None,
    paint: Paint | None = None,
) -> bytes:
    """``fmt`` (svg, png, pdf) drawn by Graphviz from the same geometry as the figure.

    Past ``timeout`` seconds (default ``$TVD_DOT_TIMEOUT``) Graphviz is stopped and GraphvizError raised."""
    if fmt not in STATIC_FORMATS:
        raise ValueError(f"static images are {', '.join(STATIC_FORMATS)}, not {fmt!r}")
    dot = to_static_dot(graph, vg, layout, theme, highlight=highlight, paint=paint)
    args = ["-n2"]
    if fmt == "png":
        x0, y0, x1, y1 = picture_bounds(layout, paint)
        longest = max(x1 - x0, y1 - y0, 1.0) + 30
        args.append(f"-Gdpi={_num(max(18.0, min(PNG_DPI, PNG_MAX_PX * 72 / longest)))}")
    return run_dot(dot, fmt, timeout, program="neato", args=tuple(args))
