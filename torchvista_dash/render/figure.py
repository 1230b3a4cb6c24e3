"""Layout → plotly Figure: a handful of traces grouped by style, never one shape per node.

Measured guidance (DESIGN.md): one Scatter path per style (``None`` between boxes) zooms ~3.5× faster
than a layout shape + annotation per node. So: cluster fills (one trace per nesting depth, so deeper
clusters draw on top), edges (one line trace per style), arrowheads (one filled trace), node boxes
(one filled trace per kind), labels (one text trace that also carries hover and click ids),
cluster headers and ⊖ toggles (text + marker traces, clickable), edge labels (one text trace).

Coordinates are Graphviz points (y up), so axis ranges, ``relayoutData`` and the app's viewport
shifts all speak the layout's units. Equal aspect: ``yaxis.scaleanchor = "x"``.

Labels: plotly text is sized in pixels, not data units. The label size is chosen so that labels
fit their boxes when the whole graph is fitted into a nominal 1100×700 px plot area, clamped to
7–13 px. Small views read at full size; on a huge view the labels overlap at the initial fit and
become readable as soon as one zooms in (the boxes grow, the text keeps its size). When the initial
view is so zoomed out that a label would need less than ``LABELS_MIN_FIT_PX`` px to fit its box (a
tall every-op view), labels start hidden — overlapping text is only noise — and a "labels" button
(a plotly updatemenu: no JavaScript of ours) shows them once the user has zoomed in. Hover and clicks
work either way: the label trace keeps its points (invisible markers).

Text is what makes zooming slow (plotly re-lays every text element on each relayout: a second line
per label nearly doubles the cost). Views over ``DETAIL_LIMIT`` boxes therefore draw one-line labels
and no edge labels; the shapes stay in every box's hover (``details=True`` forces them back).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
import plotly.graph_objects as go

from ..graph import Graph
from ..layout.types import Box, Layout
from ..view_types import VisibleGraph, VisibleNode
from . import shapes
from .hover import HoverIndex, esc
from .style import CLOSE_MARK, SHAPES, Theme, get_theme, kind_style, node_text

# Constant uirevision: Dash keeps the user's zoom across figure updates while it stays the same.
# The app sets ``fig.layout.uirevision`` to something else when it wants the new ranges applied.
UIREVISION = "torchvista_dash"

NOMINAL_PLOT_PX = (1100.0, 700.0)
LABEL_PT = 11.0                 # the font size (points) boxes are sized for by the layout
LABEL_PX_RANGE = (7.0, 13.0)
HEADER_OFFSET = 10.0            # cluster header baseline: points below the cluster's top edge
TOGGLE_INSET = 10.0             # ⊖ toggle: points right of the cluster's left edge
CLUSTER_RADIUS = 8.0
MAX_CLUSTER_DEPTH_TRACES = 6    # deeper clusters share the last fill trace
LABELS_MIN_FIT_PX = 4.0         # auto: labels start hidden when they would be drawn this much too big (px)
PAD = 12.0                      # points around the graph in the initial view
FAILED_WINDOW = (900.0, 600.0)  # points shown around the failing op in a failed trace's initial view
DETAIL_LIMIT = 600              # above this many boxes: no sublabel line, no edge labels (they stay in hover)
SCROLL_CONFIG = {"scrollZoom": True, "displaylogo": False, "doubleClick": "reset"}


def _bounds(layout: Layout) -> Box:
    boxes = list(layout.nodes.values()) + list(layout.clusters.values())
    xs = [b[0] for b in boxes] + [b[2] for b in boxes]
    ys = [b[1] for b in boxes] + [b[3] for b in boxes]
    for e in layout.edges:
        xs.extend(p[0] for p in e.points)
        ys.extend(p[1] for p in e.points)
    if not xs:
        return (0.0, 0.0, max(layout.width, 1.0), max(layout.height, 1.0))
    return (min(xs), min(ys), max(xs), max(ys))


def fit_scale(bounds: Box) -> float:
    """Pixels per point when ``bounds`` (plus padding) fills the nominal plot area."""
    w = max(bounds[2] - bounds[0] + 2 * PAD, 1.0)
    h = max(bounds[3] - bounds[1] + 2 * PAD, 1.0)
    return min(NOMINAL_PLOT_PX[0] / w, NOMINAL_PLOT_PX[1] / h)


def label_px(bounds: Box) -> float:
    """Label font size in px: what fits the boxes at the initial fit, clamped to a readable range."""
    lo, hi = LABEL_PX_RANGE
    return round(max(lo, min(hi, LABEL_PT * fit_scale(bounds))), 1)


def _check(vg: VisibleGraph, layout: Layout, highlight: str | None) -> None:
    missing = [n.id for n in vg.nodes if n.id not in layout.nodes]
    missing += [c.id for c in vg.clusters if c.id not in layout.clusters]
    if missing:
        raise ValueError(
            f"the layout does not match the view: no box for {', '.join(missing[:5])}"
            f"{' …' if len(missing) > 5 else ''}; lay out this same view (layout_view(vg)) before drawing it"
        )
    if highlight is not None and highlight not in layout.nodes and highlight not in layout.clusters:
        raise ValueError(f"highlight={highlight!r} is not drawn in this view; pass the id of a visible node "
                         "or expanded module (a search result inside a collapsed module: highlight that module)")


def _cluster_depths(vg: VisibleGraph) -> dict[str, int]:
    parent = {c.id: c.parent for c in vg.clusters}
    depth: dict[str, int] = {}
    for c in vg.clusters:
        d, cur, seen = 0, c.parent, {c.id}
        while cur is not None and cur in parent and cur not in seen:
            seen.add(cur)
            d += 1
            cur = parent[cur]
        depth[c.id] = d
    return depth


def _arr(values: list) -> Any:
    """Path coordinates as float32 (``None`` → NaN, a gap): plotly sends numpy arrays as compact base64 typed
    arrays and skips validating them element by element. Point traces (labels, headers, toggles) keep plain
    lists, so ``gd.data[i].x[k]`` in the browser is the point's coordinate."""
    return np.array(values, dtype=np.float32)


def _path_trace(name: str, xs: list, ys: list, *, fill: str | None, line: str, width: float,
                dash: str | None = None, gl: bool = False) -> dict[str, Any]:
    t: dict[str, Any] = {
        "type": "scattergl" if gl else "scatter", "name": name, "x": _arr(xs), "y": _arr(ys), "mode": "lines",
        "line": {"color": line, "width": width}, "hoverinfo": "skip", "showlegend": False,
    }
    if dash:
        t["line"]["dash"] = dash
    if fill is not None:
        t["fill"] = "toself"
        t["fillcolor"] = fill
    return t


def _node_label(vn: VisibleNode, sub_px: float, details: bool) -> str:
    label = esc(node_text(vn))
    if vn.sublabel and details:
        label += f"<br><span style=\"font-size:{sub_px}px\">{esc(vn.sublabel)}</span>"
    return label


def _initial_ranges(graph: Graph, vg: VisibleGraph, layout: Layout, bounds: Box) -> tuple[list, list]:
    """The whole graph; for a failed trace, a window centred on the failing op (or the box that holds it):
    the smallest one that still shows the whole graph if that stays readable, else ``FAILED_WINDOW``."""
    x0, y0, x1, y1 = bounds
    xr, yr = [x0 - PAD, x1 + PAD], [y0 - PAD, y1 + PAD]
    failed = [n.id for n in vg.nodes if n.failed]
    if graph.error is not None and failed:
        target = graph.error.node if graph.error.node in layout.nodes else failed[0]
        bx0, by0, bx1, by1 = layout.nodes[target]
        cx, cy = (bx0 + bx1) / 2, (by0 + by1) / 2
        hw, hh = max(cx - x0, x1 - cx) + PAD, max(cy - y0, y1 - cy) + PAD
        if LABEL_PT * fit_scale((cx - hw, cy - hh, cx + hw, cy + hh)) < LABEL_PX_RANGE[0]:
            hw = min(xr[1] - xr[0], FAILED_WINDOW[0]) / 2
            hh = min(yr[1] - yr[0], FAILED_WINDOW[1]) / 2
        xr, yr = [cx - hw, cx + hw], [cy - hh, cy + hh]
    return [round(v, 1) for v in xr], [round(v, 1) for v in yr]


@dataclass(frozen=True)
class _Style:
    """What every trace builder needs to know about this figure."""

    th: Theme
    gl: bool
    font_px: float
    small_px: float
    header_px: float
    labels: bool
    details: bool


def make_figure(graph: Graph, vg: VisibleGraph, layout: Layout, theme: str = "light", *,
                highlight: str | None = None, webgl: bool = False, details: bool | None = None,
                labels: bool | None = None, uirevision: Any = UIREVISION) -> go.Figure:
    """Draw one laid-out view as a plotly Figure; every clickable point carries its visible id in customdata.

    ``highlight`` outlines one visible node or expanded cluster (a search hit). ``details``: draw sublabels
    and edge labels (default: only for views up to ``DETAIL_LIMIT`` boxes, see the module docstring).
    ``labels``: draw text labels initially (default: unless the initial view is too zoomed out to read them;
    a "labels" button then shows them).
    ``webgl`` draws boxes, edges and arrowheads with ``scattergl`` (text stays SVG); measured in
    bench/bench_render.py, slower in headless Chromium without a GPU, so off by default.
    """
    th: Theme = get_theme(theme)
    _check(vg, layout, highlight)
    bounds = _bounds(layout)
    xr, yr = _initial_ranges(graph, vg, layout, bounds)
    shown = (xr[0] + PAD, yr[0] + PAD, xr[1] - PAD, yr[1] - PAD)
    font_px = label_px(shown)
    st = _Style(
        th=th, gl=webgl, font_px=font_px, small_px=round(max(6.0, font_px * 0.82), 1),
        header_px=round(font_px * 10 / 11, 1),   # the layout reserves cluster headers for a 10 pt font
        labels=LABEL_PT * fit_scale(shown) >= LABELS_MIN_FIT_PX if labels is None else labels,
        details=len(vg.nodes) <= DETAIL_LIMIT if details is None else details,
    )
    notes = list(vg.notes)
    if not st.details:
        notes.append(f"{len(vg.nodes):,} boxes: shapes are in the hover (edge labels are drawn up to "
                     f"{DETAIL_LIMIT} boxes)")
    hov = HoverIndex(graph, vg)
    edges, edge_labels = _edge_traces(vg, layout, st)
    traces = (_cluster_traces(vg, layout, st) + edges + _node_traces(vg, layout, st, highlight)
              + _label_traces(vg, layout, st, hov) + edge_labels)

    fig_layout: dict[str, Any] = {
        "template": th.template, "showlegend": False, "hovermode": "closest", "dragmode": "pan",
        "clickmode": "event", "margin": {"l": 4, "r": 4, "t": 4, "b": 4}, "uirevision": uirevision,
        "hoverlabel": {"align": "left", "font": {"size": 12}},
        "xaxis": {"range": xr, "visible": False, "showgrid": False, "zeroline": False},
        "yaxis": {"range": yr, "visible": False, "showgrid": False, "zeroline": False,
                  "scaleanchor": "x", "scaleratio": 1},
        "meta": {"torchvista_dash": {"bounds": [round(v, 1) for v in bounds], "label_px": font_px,
                                     "details": st.details, "labels": st.labels, "notes": notes}},
    }
    if not st.labels:
        fig_layout["updatemenus"] = [_labels_button(traces, th)]
    if notes:
        fig_layout["annotations"] = [{
            "text": esc(" · ".join(notes)), "xref": "paper", "yref": "paper", "x": 0, "y": 1,
            "xanchor": "left", "yanchor": "top", "showarrow": False, "font": {"size": 11, "color": th.muted},
        }]
    return go.Figure(data=traces, layout=fig_layout)


def _cluster_traces(vg: VisibleGraph, layout: Layout, st: _Style) -> list[dict[str, Any]]:
    """One fill trace per nesting depth (outer first, so inner clusters draw on top), failed outlines last."""
    th = st.th
    depths = _cluster_depths(vg)
    by_depth: dict[int, tuple[list, list]] = {}
    fxs: list = []
    fys: list = []
    for cl in sorted(vg.clusters, key=lambda c: depths[c.id]):
        d = min(depths[cl.id], MAX_CLUSTER_DEPTH_TRACES - 1)
        pts = shapes.rounded_box(layout.clusters[cl.id], CLUSTER_RADIUS)
        shapes.append_path(*by_depth.setdefault(d, ([], [])), pts, close=True)
        if cl.failed:
            shapes.append_path(fxs, fys, pts, close=True)
    out = [_path_trace(f"clusters:depth{d}", *by_depth[d], fill=th.cluster_fill, line=th.cluster_line,
                       width=1.0, gl=st.gl) for d in sorted(by_depth)]
    if fxs:
        out.append(_path_trace("clusters:failed", fxs, fys, fill=None, line=th.failed_line, width=2.0, gl=st.gl))
    return out


def _edge_traces(vg: VisibleGraph, layout: Layout, st: _Style) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(edge lines + arrowheads, edge label text trace): the labels go on top of everything else."""
    th = st.th
    kind_of = {n.id: n.kind for n in vg.nodes}
    lines: dict[str, tuple[list, list]] = {"edges": ([], []), "edges:params": ([], [])}
    axs: list = []
    ays: list = []
    lx: list = []
    ly: list = []
    lt: list = []
    for e in layout.edges:
        style = "edges:params" if kind_of.get(e.src) in ("parameter", "constant") else "edges"
        shapes.append_path(*lines[style], e.points, close=False)
        head = shapes.arrowhead(e.points)
        if head:
            shapes.append_path(axs, ays, head, close=True)
        if st.details and e.label and e.label_pos is not None:
            lx.append(round(e.label_pos[0], 1))
            ly.append(round(e.label_pos[1], 1))
            lt.append(esc(e.label))
    out = [_path_trace(name, xs, ys, fill=None, line=th.edge, width=1.2,
                       dash="dot" if name == "edges:params" else None, gl=st.gl)
           for name, (xs, ys) in lines.items() if xs]
    if axs:
        out.append(_path_trace("arrowheads", axs, ays, fill=th.edge, line=th.edge, width=0.5, gl=st.gl))
    labels = [{
        "type": "scatter", "name": "edges:labels", "x": lx, "y": ly, "mode": "text", "text": lt,
        "visible": st.labels, "textposition": "middle center",
        "textfont": {"size": st.small_px, "color": th.muted}, "hoverinfo": "skip", "showlegend": False,
    }] if lt else []
    return out, labels


def _node_traces(vg: VisibleGraph, layout: Layout, st: _Style, highlight: str | None) -> list[dict[str, Any]]:
    """One filled trace per (kind, failed) style, the folded groups' inner border, the highlight outline."""
    groups: dict[tuple[str, bool], tuple[list, list]] = {}
    ixs: list = []
    iys: list = []
    for vn in vg.nodes:
        box = layout.nodes[vn.id]
        shape = SHAPES.get(vn.kind, "rect")
        shapes.append_path(*groups.setdefault((vn.kind, vn.failed), ([], [])), shapes.outline(shape, box), close=True)
        if shape == "double":
            shapes.append_path(ixs, iys, shapes.outline("rect", shapes.inset(box)), close=True)
    out = []
    for (kind, failed), (xs, ys) in sorted(groups.items()):
        ks = kind_style(st.th, kind, failed)
        width = 1.8 if kind in ("module", "folded") or failed else 1.0
        out.append(_path_trace(f"nodes:{kind}{':failed' if failed else ''}", xs, ys, fill=ks.fill,
                               line=ks.line, width=width, gl=st.gl))
    if ixs:
        out.append(_path_trace("nodes:folded-inner", ixs, iys, fill=None, line=kind_style(st.th, "folded").line,
                               width=1.0, gl=st.gl))
    if highlight is not None:
        box = layout.nodes.get(highlight) or layout.clusters[highlight]
        hx: list = []
        hy: list = []
        shapes.append_path(hx, hy, shapes.rounded_box((box[0] - 3, box[1] - 3, box[2] + 3, box[3] + 3), 6.0),
                           close=True)
        out.append(_path_trace("highlight", hx, hy, fill=None, line=st.th.highlight, width=3.5, gl=st.gl))
    return out


def _label_traces(vg: VisibleGraph, layout: Layout, st: _Style, hov: HoverIndex) -> list[dict[str, Any]]:
    """Node labels (also every box's hover/click point), cluster headers and ⊖ toggles (clickable)."""
    th = st.th
    mode = "text" if st.labels else "none"     # hidden: no SVG element per point; hover and clicks still work
    invisible = {"size": 10, "opacity": 0}
    out: list[dict[str, Any]] = []
    if vg.nodes:
        centres = [layout.nodes[vn.id] for vn in vg.nodes]
        out.append({
            "type": "scatter", "name": "nodes:labels", "mode": mode, "marker": invisible,
            "x": [round((b[0] + b[2]) / 2, 1) for b in centres], "y": [round((b[1] + b[3]) / 2, 1) for b in centres],
            "text": [_node_label(vn, st.small_px, st.details) for vn in vg.nodes],
            "textposition": "middle center",
            "textfont": {"size": st.font_px, "color": [kind_style(th, vn.kind, vn.failed).text for vn in vg.nodes]},
            "hovertext": [hov.node_text(vn) for vn in vg.nodes], "hoverinfo": "text",
            "customdata": [vn.id for vn in vg.nodes], "showlegend": False,
        })
    if vg.clusters:
        boxes = [layout.clusters[cl.id] for cl in vg.clusters]
        ys = [round(b[3] - HEADER_OFFSET, 1) for b in boxes]
        colours = [th.failed_line if cl.failed else th.font for cl in vg.clusters]
        ids = [cl.id for cl in vg.clusters]
        out.append({
            "type": "scatter", "name": "clusters:headers", "mode": mode, "marker": invisible,
            "x": [round(b[0] + 2 * TOGGLE_INSET + 1, 1) for b in boxes], "y": ys,
            "text": [f"<b>{esc(cl.label)}</b>" for cl in vg.clusters], "textposition": "middle right",
            "textfont": {"size": st.header_px, "color": colours},
            "hovertext": [hov.cluster_text(cl) for cl in vg.clusters], "hoverinfo": "text",
            "customdata": ids, "showlegend": False,
        })
        out.append({
            "type": "scatter", "name": "clusters:toggles", "mode": "markers+text",
            "x": [round(b[0] + TOGGLE_INSET, 1) for b in boxes], "y": ys,
            "text": [CLOSE_MARK] * len(ids), "textposition": "middle center",
            "textfont": {"size": st.header_px + 2, "color": colours},
            "marker": {"symbol": "square", "size": st.header_px + 6, "color": th.paper,
                       "line": {"color": th.cluster_line, "width": 1}},
            "hovertext": [f"collapse {esc(c.label)}" for c in vg.clusters], "hoverinfo": "text",
            "customdata": ids, "showlegend": False,
        })
    return out


def _labels_button(traces: list[dict[str, Any]], th: Theme) -> dict[str, Any]:
    """A toggle that draws the hidden labels (and hides them again): plain plotly restyle, no JS."""
    text_idx = [i for i, t in enumerate(traces) if t["name"] in ("nodes:labels", "clusters:headers")]
    edge_idx = [i for i, t in enumerate(traces) if t["name"] == "edges:labels"]
    show = [{"mode": "text", "visible": True}, text_idx + edge_idx]
    hide = [{"mode": ["none"] * len(text_idx) + ["text"] * len(edge_idx),
             "visible": [True] * len(text_idx) + [False] * len(edge_idx)}, text_idx + edge_idx]
    return {"type": "buttons", "direction": "left", "showactive": False, "active": -1, "x": 1.0, "y": 1.0,
            "xanchor": "right", "yanchor": "top", "pad": {"r": 4, "t": 4}, "bgcolor": th.paper,
            "font": {"color": th.font, "size": 11},
            "buttons": [{"label": "labels", "method": "restyle", "args": show, "args2": hide}]}


def trace_names(fig: go.Figure) -> list[str]:
    """Names of a figure's traces (tests and the app use them to find e.g. the label trace)."""
    return [t.name for t in fig.data]


def ids_in(fig: go.Figure, names: Iterable[str]) -> list[str]:
    """Every customdata id carried by the named traces."""
    wanted = set(names)
    out: list[str] = []
    for t in fig.data:
        if t.name in wanted and t.customdata is not None:
            out.extend(t.customdata)
    return out
