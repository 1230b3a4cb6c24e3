"""A laid-out view as SVG whose text follows the zoom: the picture under the figure's hit layer, as one
document (``picture_svg``) or cut into tiles (``picture_pieces``, ``tiles.py``: why).

Plotly sizes text in pixels, so text drawn by plotly cannot grow with the boxes when the user zooms. A plotly
layout image in data coordinates does: the figure places this SVG over the ``Layout``'s own coordinates
(points), so the browser scales boxes, edges and text together, with no server round trip and no JavaScript.

Level of detail lives inside the SVG as CSS media queries. An SVG drawn as an image has its own viewport, the
size the image is drawn at, so ``@media (max-width: …)`` there reads the current zoom: below a scale (pixels
per point) the shape lines and edge labels go, then op names, then module names and headers, as maps do. Above
a scale the text stops growing (``MAX_TEXT_PX``). Every label is shortened with "…" to fit its box at the
layout's own font estimate (``layout.textmetrics.text_width``), so no label spills out of its box or over a
neighbour at any zoom.
"""

from __future__ import annotations

import base64
import html
from collections.abc import Callable, Sequence
from typing import NamedTuple

from torchvista_dash.layout.textmetrics import EDGE_PT, FONT_FAMILY, HEADER_PT, LABEL_PT, SUB_PT
from torchvista_dash.layout.types import Box, Layout, Point
from torchvista_dash.render import shapes
from torchvista_dash.render.labels import (
    HEADER_BASE,
    HEADER_INSET,
    LOD_SCALE,
    MAX_TEXT_PX,
    OVERVIEW_PX,
    TEXT_BANDS,
    TEXT_PAD,
    Boxes,
    cluster_depths,
    edge_labels,
    fit_text,
    header_rect,
    header_text,
    overview_css,
    overview_element,
    place_overview,
)
from torchvista_dash.render.paint import BoxPaint, Paint
from torchvista_dash.render.style import SHAPES, Theme, kind_style, node_text
from torchvista_dash.render.svg import tiles
from torchvista_dash.view.types import VisibleGraph

# names the rest of the package (and its tests) import from here
__all__ = [
    "HEADER_BASE",
    "HEADER_INSET",
    "LOD_SCALE",
    "OVERVIEW_PX",
    "Piece",
    "canvas_extent",
    "data_uri",
    "extent",
    "fit_text",
    "header_text",
    "picture_pieces",
    "picture_svg",
]

CLUSTER_RADIUS = 8.0

_n = "{:.1f}".format  # SVG numbers: one decimal (a tenth of a point), formatted fast (tens of thousands)


def extent(layout: Layout, pad: float) -> Box:
    """The drawing's bounds (boxes, clusters, edges) plus ``pad`` points on each side."""
    boxes = list(layout.nodes.values()) + list(layout.clusters.values())
    xs = [b[0] for b in boxes] + [b[2] for b in boxes]
    ys = [b[1] for b in boxes] + [b[3] for b in boxes]
    for e in layout.edges:
        xs.extend(p[0] for p in e.points)
        ys.extend(p[1] for p in e.points)
    if not xs:
        return (-pad, -pad, max(layout.width, 1.0) + pad, max(layout.height, 1.0) + pad)
    return (min(xs) - pad, min(ys) - pad, max(xs) + pad, max(ys) + pad)


def canvas_extent(layout: Layout, pad: float, aspect: float) -> Box:
    """``extent`` widened (or heightened) about its centre to ``aspect`` (width / height, the plot's): fitted
    whole, the picture then covers the plot, and the overview labels of a narrow column have room beside
    it."""
    x0, y0, x1, y1 = extent(layout, pad)
    w, h = x1 - x0, y1 - y0
    grow = round(max(h * aspect - w, 0.0) / 2, 1)  # a tenth of a point: what the SVG's numbers hold
    up = round(max(w / aspect - h, 0.0) / 2, 1)
    return (x0 - grow, y0 - up, x1 + grow, y1 + up)


class _Canvas:
    """Points (y up) → SVG user units (y down, origin at the extent's top left)."""

    def __init__(self, ext: Box) -> None:
        self.left, self.top = ext[0], ext[3]
        self.width, self.height = ext[2] - ext[0], ext[3] - ext[1]

    def x(self, v: float) -> str:
        return _n(v - self.left)

    def y(self, v: float) -> str:
        return _n(self.top - v)

    def path(self, pts: Sequence[Point], close: bool) -> str:
        if not pts:
            return ""
        d = "M" + " L".join(f"{self.x(x)} {self.y(y)}" for x, y in pts)
        return d + ("Z" if close else "")


def _css(th: Theme, width: float, kinds: set[tuple[str, bool]]) -> str:
    rules = [
        f"text{{font-family:{FONT_FAMILY};text-anchor:middle;dominant-baseline:central}}",
        f".t{{font-size:{_n(LABEL_PT)}px}}.s{{font-size:{_n(SUB_PT)}px}}",
        f".h{{font-size:{_n(HEADER_PT)}px;font-weight:bold;text-anchor:start;dominant-baseline:auto;fill:{th.font}}}",
        f".hf{{fill:{th.failed_line}}}",
        f".el{{font-size:{_n(EDGE_PT)}px;fill:{th.muted}}}",
        f".h,.el{{paint-order:stroke;stroke:{th.paper};stroke-width:3px;stroke-linejoin:round}}",
        f".c{{fill:{th.cluster_fill};stroke:{th.cluster_line};stroke-width:1px}}",
        f".cf{{fill:none;stroke:{th.failed_line};stroke-width:2px}}",
        f".e{{fill:none;stroke:{th.edge};stroke-width:1.2px}}.ep{{stroke-dasharray:2 3}}",
        f".a{{fill:{th.edge};stroke:none}}.ef,.af,.fd{{opacity:{FADED_OPACITY}}}",
        "rect,path,polygon{vector-effect:non-scaling-stroke}",
    ]
    for kind, failed in sorted(kinds):
        ks = kind_style(th, kind, failed)
        width_px = 1.8 if kind in ("module", "folded") or failed else 1.0
        k = _kind_class(kind, failed)
        rules.append(
            f".{k}{{fill:{ks.fill};stroke:{ks.line};stroke-width:{width_px}px}}"
            f".{k}i{{fill:none;stroke:{ks.line};stroke-width:1px}}.{k}t{{fill:{ks.text}}}"
        )
    # level of detail: the viewport of an SVG drawn as an image is the size it is drawn at, so its width
    # divided by the picture's width in points is the current scale
    hide = {"s": ".s,.el", "o": ".o", "m": ".m,.h"}
    for key, scale in LOD_SCALE.items():
        rules.append(f"@media (max-width:{_n(width * scale)}px){{{hide[key]}{{display:none}}}}")
    top = MAX_TEXT_PX / LABEL_PT
    for lo in TEXT_BANDS:
        if lo < top:
            continue
        f = top / lo  # text at most MAX_TEXT_PX at the band's low end, a little more up to the next band
        rules.append(
            f"@media (min-width:{_n(width * lo)}px){{.t{{font-size:{_n(LABEL_PT * f)}px}}"
            f".s{{font-size:{_n(SUB_PT * f)}px}}.h{{font-size:{_n(HEADER_PT * f)}px}}"
            f".el{{font-size:{_n(EDGE_PT * f)}px}}}}"
        )
    return "".join(rules)


def _kind_class(kind: str, failed: bool) -> str:
    return "k" + "".join(ch for ch in kind if ch.isalnum()) + ("f" if failed else "")


def _style(bp: BoxPaint, fill: bool = True) -> str:
    """A painted box's inline style (overrides its kind class)."""
    out = (f"fill:{html.escape(bp.fill)};" if fill else "fill:none;") + f"stroke:{html.escape(bp.line)}"
    if bp.width:
        out += f";stroke-width:{_n(bp.width)}px"
    if bp.dash:
        out += ";stroke-dasharray:5 3"
    return out


def _shape(cv: _Canvas, shape: str, box: Box, cls: str, style: str = "") -> str:
    x0, y0, x1, y1 = box
    w, h = x1 - x0, y1 - y0
    geo = f'x="{cv.x(x0)}" y="{cv.y(y1)}" width="{_n(w)}" height="{_n(h)}"'
    attrs = f'class="{cls}"' + (f' style="{style}"' if style else "")
    if shape == "rounded":
        return f'<rect {geo} rx="{_n(min(6.0, w / 4, h / 4))}" {attrs}/>'
    if shape == "pill":
        return f'<rect {geo} rx="{_n(h / 2)}" {attrs}/>'
    if shape in ("hexagon", "octagon"):
        return f'<path d="{cv.path(shapes.outline(shape, box), True)}" {attrs}/>'
    return f"<rect {geo} {attrs}/>"


# The picture's layers, bottom to top: (how a tile joins its elements, the class of a joined path).
LAYER_KINDS: tuple[tuple[str, str], ...] = (
    ("elem", ""),  # clusters
    ("path", "e ef"),  # edges dimmed around a selection (paint.faded)
    ("path", "a af"),  # their arrows
    ("path", "e"),  # edges
    ("path", "e ep"),  # parameter edges
    ("elem", ""),  # edges of their own width or colour (colour by bytes, a selection's edges)
    ("path", "a"),  # arrows
    ("elem", ""),  # arrows of their own colour
    ("elem", ""),  # boxes
    ("elem", ""),  # edge labels
    ("elem", ""),  # labels
    ("elem", ""),  # headers
    ("elem", ""),  # overview labels
)
(
    _CLUSTERS,
    _FADED_EDGES,
    _FADED_ARROWS,
    _EDGES,
    _PARAM_EDGES,
    _WIDE_EDGES,
    _ARROWS,
    _LIT_ARROWS,
    _BOXES,
    _EDGE_LABELS,
    _LABELS,
    _HEADS,
    _OVERVIEW,
) = range(13)
LIT_EDGE_PX = 2.6  # a selection's edges, drawn over the rest in the theme's highlight colour
FADED_OPACITY = 0.2  # what is not part of a selection's reach, drawn faint behind it


class Piece(NamedTuple):
    """One image of the picture: an SVG document and the box (points, y up: x0, y0, x1, y1) it is drawn
    over."""

    svg: str
    box: Box


class _Items(NamedTuple):
    canvas: _Canvas
    kinds: set[tuple[str, bool]]
    layers: list[list[tiles.Item]]
    overview_rules: Callable[[float], str]


def _bbox(pts: Sequence[Point]) -> Box:
    xs = [p[0] for p in pts]
    ys = [p[1] for p in pts]
    return (min(xs), min(ys), max(xs), max(ys))


def _items(
    vg: VisibleGraph, layout: Layout, th: Theme, ext: Box, *, labels: bool, details: bool, paint: Paint | None
) -> _Items:
    """Every element of the picture with the box (points) it may draw in, layer by layer (``LAYER_KINDS``)."""
    cv = _Canvas(ext)
    paint = paint or Paint()
    e = html.escape
    layers: list[list[tiles.Item]] = [[] for _ in LAYER_KINDS]
    depth = cluster_depths(vg, layout)
    heads: list[Box] = []
    for cl in sorted(vg.clusters, key=lambda c: depth[c.id]):
        box = layout.clusters[cl.id]
        x0, y0, x1, y1 = box
        geo = (
            f'x="{cv.x(x0)}" y="{cv.y(y1)}" width="{_n(x1 - x0)}" height="{_n(y1 - y0)}" '
            f'rx="{_n(CLUSTER_RADIUS)}"'
        )
        grown = (x0 - 2, y0 - 2, x1 + 2, y1 + 2)  # outline strokes reach past the box
        faded = " fd" if cl.id in paint.faded else ""
        layers[_CLUSTERS].append((grown, f'<rect {geo} class="c{faded}"/>'))
        if cl.failed:
            layers[_CLUSTERS].append((grown, f'<rect {geo} class="cf"/>'))
        if cl.id in paint.clusters:
            layers[_CLUSTERS].append(
                (grown, f'<rect {geo} class="cf" style="{_style(paint.clusters[cl.id], fill=False)}"/>')
            )
        if labels:
            text = header_text(cl.label, box)
            if text:
                heads.append(header_rect(text, box))
                layers[_HEADS].append(
                    (
                        (x0, y1 - HEADER_BASE - 6, x1, y1),
                        f'<text x="{cv.x(x0 + HEADER_INSET)}" y="{cv.y(y1 - HEADER_BASE)}" '
                        f'class="h{" hf" if cl.failed else ""}{faded}">{e(text)}</text>',
                    )
                )
    kind_of = {n.id: n.kind for n in vg.nodes}
    focused = bool(paint.faded or paint.lit_edges)
    lit = html.escape(paint.lit_colour or th.highlight)
    for ed in layout.edges:
        if not ed.points:
            continue
        b = _bbox(ed.points)
        grown = (b[0] - 2, b[1] - 2, b[2] + 2, b[3] + 2)
        key = (ed.src, ed.dst)
        width = paint.edge_widths.get(key)
        is_lit = key in paint.lit_edges
        head = shapes.arrowhead(ed.points)
        if (
            is_lit or width is not None
        ):  # its own element: the edges of one layer are joined into one path per tile
            width = max(width or 0.0, LIT_EDGE_PX) if is_lit else width
            assert width is not None
            pad = width / 2 + 1
            colour = f";stroke:{lit}" if is_lit else ""
            cls = "e ef" if focused and not is_lit else "e"
            layers[_WIDE_EDGES].append(
                (
                    (b[0] - pad, b[1] - pad, b[2] + pad, b[3] + pad),
                    f'<path d="{cv.path(ed.points, False)}" class="{cls}" '
                    f'style="stroke-width:{_n(width)}px{colour}"/>',
                )
            )
        elif focused:
            layers[_FADED_EDGES].append((grown, cv.path(ed.points, False)))
        else:
            layer = _PARAM_EDGES if kind_of.get(ed.src) in ("parameter", "constant") else _EDGES
            layers[layer].append((grown, cv.path(ed.points, False)))
        if head:
            hb = _bbox(head)
            hbox = (hb[0] - 1, hb[1] - 1, hb[2] + 1, hb[3] + 1)
            if is_lit:
                layers[_LIT_ARROWS].append(
                    (hbox, f'<path d="{cv.path(head, True)}" class="a" style="fill:{lit}"/>')
                )
            else:
                layers[_FADED_ARROWS if focused else _ARROWS].append((hbox, cv.path(head, True)))
    if labels and details:
        for (bx0, by0, bx1, by1), ed in edge_labels(layout.edges, Boxes(150.0, layout.nodes.values()), heads):
            lx, ly = ed.label_pos or (0.0, 0.0)
            layers[_EDGE_LABELS].append(
                (
                    (bx0 - 3, by0 - 2, bx1 + 3, by1 + 2),  # glyphs wider than estimated
                    f'<text x="{cv.x(lx)}" y="{cv.y(ly)}" class="el">{e(ed.label)}</text>',
                )
            )
    kinds: set[tuple[str, bool]] = set()
    for vn in vg.nodes:
        box = layout.nodes[vn.id]
        x0, y0, x1, y1 = box
        grown = (x0 - 2, y0 - 2, x1 + 2, y1 + 2)
        kinds.add((vn.kind, vn.failed))
        k = _kind_class(vn.kind, vn.failed)
        shape = SHAPES.get(vn.kind, "rect")
        bp = paint.boxes.get(vn.id)
        fd = " fd" if vn.id in paint.faded else ""
        elem = _shape(cv, shape, box, k + fd, "" if bp is None else _style(bp))
        if shape == "double":
            elem += _shape(cv, "rect", shapes.inset(box), k + "i" + fd)
        layers[_BOXES].append((grown, elem))
        if not labels:
            continue
        room = x1 - x0 - 2 * TEXT_PAD
        lod = "m" if vn.kind in ("module", "folded") else "o"
        cx, cy = cv.x((x0 + x1) / 2), (y0 + y1) / 2
        main = fit_text(node_text(vn), room, LABEL_PT)
        sub = fit_text(vn.sublabel, room, SUB_PT) if details and vn.sublabel else ""
        tstyle = "" if bp is None else f' style="fill:{bp.text}"'
        if sub and y1 - y0 >= LABEL_PT * 1.2 + SUB_PT * 1.2 + 4:
            layers[_LABELS].append(
                (
                    box,
                    f'<text x="{cx}" y="{cv.y(cy + SUB_PT * 0.6)}" class="t {lod} {k}t{fd}"{tstyle}>'
                    f'{e(main)}</text><text x="{cx}" y="{cv.y(cy - LABEL_PT * 0.65)}" '
                    f'class="s {k}t{fd}"{tstyle}>{e(sub)}</text>',
                )
            )
        elif main:
            layers[_LABELS].append(
                (box, f'<text x="{cx}" y="{cv.y(cy)}" class="t {lod} {k}t{fd}"{tstyle}>{e(main)}</text>')
            )
    rules: Callable[[float], str] = lambda vw: ""  # noqa: E731
    if labels:
        placed, ranges = place_overview(vg, layout, ext)
        layers[_OVERVIEW] = [
            (
                p.reach,
                overview_element(cv.x(p.rect[0]), cv.y((p.rect[1] + p.rect[3]) / 2), p.band, p.text, p.small),
            )
            for p in placed
        ]
        rules = overview_css(ranges)
    return _Items(cv, kinds, layers, rules)


def picture_svg(
    vg: VisibleGraph,
    layout: Layout,
    th: Theme,
    ext: Box,
    *,
    labels: bool = True,
    details: bool = True,
    paint: Paint | None = None,
) -> str:
    """The view as one SVG document covering ``ext`` (points): clusters, edges, boxes, labels, headers.

    ``labels=False`` draws no text at all; ``details=False`` no shape lines or edge labels. Either way the
    level of detail then follows the zoom as the module docstring says. ``paint`` recolours some boxes and
    outlines some clusters (inline styles over the kind classes: colour by cost, a diff)."""
    return picture_pieces(vg, layout, th, ext, labels=labels, details=details, paint=paint)[0].svg


def picture_pieces(
    vg: VisibleGraph,
    layout: Layout,
    th: Theme,
    ext: Box,
    *,
    labels: bool = True,
    details: bool = True,
    paint: Paint | None = None,
    tile: float | None = None,
) -> list[Piece]:
    """The view as SVG pieces that together cover ``ext``: one piece (``picture_svg``) when ``tile`` is None
    or the view is small, else the tiles of a grid of at least ``tile`` points square over the drawing, at
    most ``tiles.MAX_TILES`` (``tiles.py``: why), empty tiles left out."""
    items = _items(vg, layout, th, ext, labels=labels, details=details, paint=paint)
    cv, kinds, ov_rules = items.canvas, items.kinds, items.overview_rules
    grid = tiles.Grid.bounded(ext, extent(layout, 0.0), tile, len(vg.nodes))
    buckets = grid.sort(items.layers)
    out: list[Piece] = []
    for cell, layers in sorted(buckets.items()):
        box = grid.box(cell)
        vw = box[2] - box[0]
        # tiles are opaque: where neighbours overlap, the upper one covers the lower one's translucent cluster
        # fills instead of darkening them twice (a seam); the background reaches past the tile, so that only
        # the image's own edge is smoothed there, not a shape's edge under another's (a light seam)
        parts = (
            []
            if len(grid) == 1
            else [
                f'<rect x="{cv.x(box[0] - 8)}" y="{cv.y(box[3] + 8)}" '
                f'width="{_n(vw + 16)}" height="{_n(box[3] - box[1] + 16)}" '
                f'style="fill:{th.paper}"/>'
            ]
        )
        for (kind, cls), elems in zip(LAYER_KINDS, layers, strict=True):
            if not elems:
                continue
            parts.append(f'<path d="{"".join(elems)}" class="{cls}"/>' if kind == "path" else "".join(elems))
        # no width/height: an SVG image without its own size takes the size it is drawn at as its viewport,
        # which is what the level-of-detail media queries read
        svg = (
            f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="{cv.x(box[0])} {cv.y(box[3])} {_n(vw)} '
            f'{_n(box[3] - box[1])}" preserveAspectRatio="none">'
            f"<style>{_css(th, vw, kinds)}.ov{{fill:{th.font};stroke:{th.paper}}}{ov_rules(vw)}</style>"
            + "".join(parts)
            + "</svg>"
        )
        out.append(Piece(svg, box))
    if not out:  # nothing drawn at all: still one (empty) picture covering the canvas
        out.append(
            Piece(
                f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {_n(cv.width)} {_n(cv.height)}" '
                f'preserveAspectRatio="none"><style>{_css(th, cv.width, kinds)}</style></svg>',
                ext,
            )
        )
    return out


def data_uri(svg: str) -> str:
    """The SVG as a ``data:`` URI for a plotly layout image (self-contained: works in exported HTML too)."""
    return "data:image/svg+xml;base64," + base64.b64encode(svg.encode("utf-8")).decode("ascii")
