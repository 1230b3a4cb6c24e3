"""The picture's text: how big each kind of label is, where the level of detail drops it, how it is shortened to
its room, and which labels are drawn at all so that none covers another, a box or a header.

Box labels and headers are shortened with "…" to the room the layout sized for (``fit_text``, the layout's own
glyph estimate). Edge labels keep Graphviz's place, and one that would cover a box, a header or an earlier edge
label is left out (``edge_labels``): parallel edges carry the same shapes, side by side. Zoomed out, map-style
overview labels name the modules (``overview``): per band of zoom, a module's name is set inside its region, on
the highest row free of boxes and of the labels already placed, or just above the region, else not at all.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Iterable
from typing import NamedTuple

from ..layout.dot import CHAR_WIDTH
from ..layout.types import Box, EdgePath, Layout
from ..view_types import VisibleGraph
from .style import CLOSE_MARK

FONT_FAMILY = "Helvetica, Arial, 'Liberation Sans', 'DejaVu Sans', sans-serif"
LABEL_PT = 11.0        # the layout sizes boxes for labels at this size (layout/dot.py FONT_SIZE)
SUB_PT = 9.0
HEADER_PT = 10.0       # the layout reserves cluster headers for this size
EDGE_PT = 8.0
CHAR_EM = CHAR_WIDTH   # the layout's glyph width estimate (em): text is shortened to the room it sized for
TEXT_PAD = 4.0         # points kept free on each side of a label inside its box
HEADER_INSET = 6.0     # header text: points right of the cluster's left edge
HEADER_BASE = 13.0     # header baseline: points below the cluster's top edge

# Level of detail: the smallest scale (px per point) at which each class of text is drawn, chosen by its size on
# screen: shape lines (9 pt) from about 7 px, op names (11 pt) from 8 px, module names and headers (10 pt) from
# 7 px; smaller text is not readable, so it is not drawn. Below that, overview labels take over (``overview``).
LOD_SCALE: dict[str, float] = {"s": 0.8, "o": 0.72, "m": 0.7}   # shape lines + edge labels, op names, modules
OVERVIEW_PX = 11.0     # an overview label's size on screen at the low end of its band (up to √2 times that)
OVERVIEW_STEP = 2 ** 0.5
OVERVIEW_MIN_PX = 300.0   # overview bands go down to the zoom where the whole picture is this many pixels
OVERVIEW_BANDS = 18
OVERVIEW_ROWS = 12     # rows (half a label's height apart) tried from a region's top for its overview label
MAX_TEXT_PX = 24.0     # a main label stops growing at about this many pixels
TEXT_BANDS = (2.0, 2.8, 4.0, 5.6, 8.0, 11.0, 16.0, 22.0, 32.0)

_n = "{:.1f}".format    # SVG numbers: one decimal (a tenth of a point), formatted fast (tens of thousands)

# Bold sans-serif advance widths (em, Helvetica / Liberation Sans Bold), for overview labels: a wide glyph
# estimate would drop names that fit, a narrow one would let them collide.
_BOLD = {**dict.fromkeys("ijl.,:;'|!", 0.28), **dict.fromkeys("ftI()[] ", 0.34), "r": 0.39,
         **dict.fromkeys("mMW", 0.89), "w": 0.78, **dict.fromkeys("ABCDEGHKNOQRSUVXY", 0.74),
         **dict.fromkeys("FLPTZJ", 0.62), "…": 1.0, "⊖": 0.8, "⊕": 0.8}


def bold_em(text: str) -> float:
    """``text``'s width in em, set in bold (an upper estimate of the common fonts')."""
    return sum(_BOLD.get(ch, 0.61) for ch in text) * 1.04


def fit_text(text: str, width_pt: float, size_pt: float) -> str:
    """``text`` shortened with "…" so that it fits ``width_pt`` at ``size_pt`` (the layout's glyph estimate)."""
    room = int(max(width_pt, 0.0) / (size_pt * CHAR_EM))
    if len(text) <= room:
        return text
    if room <= 1:
        return ""
    return text[: room - 1].rstrip() + "…"


def header_text(label: str, box: Box) -> str:
    """A cluster header as drawn: the ⊖ toggle mark and the label, shortened to the cluster's width."""
    return fit_text(f"{CLOSE_MARK} {label}", box[2] - box[0] - 2 * HEADER_INSET, HEADER_PT)


def header_rect(text: str, box: Box) -> Box:
    """Where a cluster's drawn header text lies (points, y up), its glyphs' whole height."""
    x0, y1 = box[0] + HEADER_INSET, box[3] - HEADER_BASE
    return (x0, y1 - HEADER_PT * 0.3, x0 + bold_em(text) * HEADER_PT, y1 + HEADER_PT * 0.95)


def _meets(a: Box, b: Box) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


class Boxes:
    """Boxes in a grid of ``cell``-point squares: which ones a rectangle meets, without a scan of all of them."""

    def __init__(self, cell: float, boxes: Iterable[Box] = ()) -> None:
        self.cell = cell
        self.grid: dict[tuple[int, int], list[Box]] = {}
        for b in boxes:
            self.add(b)

    def _keys(self, r: Box) -> list[tuple[int, int]]:
        c = self.cell
        return [(i, j) for i in range(int(r[0] // c), int(r[2] // c) + 1) for j in range(int(r[1] // c), int(r[3] // c) + 1)]

    def add(self, b: Box) -> None:
        for key in self._keys(b):
            self.grid.setdefault(key, []).append(b)

    def meeting(self, r: Box) -> list[Box]:
        out: dict[Box, None] = {}
        for key in self._keys(r):
            for b in self.grid.get(key, ()):
                if _meets(b, r):
                    out[b] = None
        return list(out)

    def meets(self, r: Box) -> bool:
        return any(_meets(b, r) for key in self._keys(r) for b in self.grid.get(key, ()))


def edge_labels(edges: Iterable[EdgePath], nodes: Boxes, headers: Iterable[Box]) -> list[tuple[Box, EdgePath]]:
    """The edge labels drawn, each with where it lies: in layout order, those that cover no box (``nodes``), no
    header and no edge label drawn before them."""
    taken = Boxes(40.0, headers)
    out: list[tuple[Box, EdgePath]] = []
    for ed in edges:
        if not ed.label or ed.label_pos is None:
            continue
        lx, ly = ed.label_pos
        half, tall = len(ed.label) * EDGE_PT * CHAR_EM / 2 + 1.0, EDGE_PT * 0.65
        rect = (lx - half, ly - tall, lx + half, ly + tall)
        if nodes.meets(rect) or taken.meets(rect):
            continue
        taken.add(rect)
        out.append((rect, ed))
    return out


def overview_bands(width: float, height: float) -> list[float]:
    """The low ends (px per point) of the overview bands, from the module-name threshold down to the zoom at
    which the whole picture is ``OVERVIEW_MIN_PX`` across."""
    low = OVERVIEW_MIN_PX / max(width, height, 1.0)
    out: list[float] = []
    s = LOD_SCALE["m"]
    while s > low and len(out) < OVERVIEW_BANDS:
        s /= OVERVIEW_STEP
        out.append(s)
    return out


def _names(label: str, parent_label: str | None) -> list[str]:
    """An overview label's candidates, longest first: the whole label, its qualname, the qualname below its
    parent's (``self_attn`` inside ``layers.0``)."""
    qual, _, cls = label.partition(": ")
    if qual.startswith("("):          # the root, "(root): GridNet": its class name
        return [cls] if cls else [label]
    out = [label, qual]
    if parent_label is not None:
        pq = parent_label.split(": ")[0] + "."
        if qual.startswith(pq) and len(qual) > len(pq):
            out.append(qual[len(pq):])
    return list(dict.fromkeys(out))


class _Region(NamedTuple):
    depth: int
    box: Box          # the module's cluster, or its closed box
    outers: tuple[Box, ...]   # the clusters it is in, innermost first, and the canvas
    names: list[str]
    ems: list[float]  # their widths in em (bold)
    closed: bool      # a closed module box (its label goes inside it, over nothing else)


def _free_x(lo: float, hi: float, need: float, blocks: list[Box]) -> float | None:
    """The leftmost x in [lo, hi - need] where ``need`` points are free of every block's x range."""
    x = lo
    for b in sorted(blocks):
        if b[0] >= x + need:
            break
        x = max(x, b[2])
    return x if x + need <= hi else None


def cluster_depths(vg: VisibleGraph, layout: Layout) -> dict[str, int]:
    """How deep each open cluster is nested (the root's 0)."""
    depth: dict[str, int] = {}
    for cl in vg.clusters:
        d, cur = 0, layout.parent.get(cl.id)
        while cur is not None and d < 64:
            d, cur = d + 1, layout.parent.get(cur)
        depth[cl.id] = d
    return depth


class Placed(NamedTuple):
    """An overview label: its text's box and where it may draw (its halo; points, y up), its band of zoom."""

    rect: Box
    reach: Box
    band: int
    text: str


def place_overview(vg: VisibleGraph, layout: Layout, ext: Box
                   ) -> tuple[list[Placed], list[tuple[int, float, float]]]:
    """Where the overview labels go, and per band ``(index, low, high)``: the scales (px per point) between
    which its labels are drawn.

    Per band of zoom (each √2 wide, from the module-name threshold down), the modules that have room for a name
    at ``OVERVIEW_PX``–√2× that on screen, shallow ones first, the longest form that fits: a closed module box
    holds its name inside itself; an open cluster's name goes on the highest of its rows free of boxes, of the
    clusters inside it and of the names already placed, else just above the cluster or beside its top (within
    its parent, clear of other clusters), else nowhere. A module smaller than its name is not named."""
    w, h = ext[2] - ext[0], ext[3] - ext[1]
    bands = overview_bands(w, h)
    if not bands:
        return [], []
    labels = {c.id: c.label for c in vg.clusters}
    depth = cluster_depths(vg, layout)
    def outers(parent: str | None) -> tuple[Box, ...]:
        out: list[Box] = []
        while parent is not None and parent in layout.clusters and len(out) < 64:
            out.append(layout.clusters[parent])
            parent = layout.parent.get(parent)
        return (*out, ext)

    regions: list[_Region] = []
    for cl in vg.clusters:
        names = _names(cl.label, labels.get(cl.parent or ""))
        regions.append(_Region(depth[cl.id], layout.clusters[cl.id], outers(cl.parent), names,
                               [bold_em(t) for t in names], False))
    for vn in vg.nodes:
        if vn.kind in ("module", "folded"):
            d = depth.get(vn.parent, -1) + 1 if vn.parent else 0
            names = _names(vn.label, labels.get(vn.parent or ""))
            regions.append(_Region(d, layout.nodes[vn.id], outers(vn.parent), names, [bold_em(t) for t in names],
                                   True))
    regions.sort(key=lambda r: (r.depth, -r.box[3], r.box[0]))
    nodes = Boxes(150.0, layout.nodes.values())
    clusters = Boxes(400.0, layout.clusters.values())
    out: list[Placed] = []
    ranges: list[tuple[int, float, float]] = []
    hi = LOD_SCALE["m"]
    for k, s in enumerate(bands):
        f = OVERVIEW_PX / s          # the font size in points that is OVERVIEW_PX on screen at the band's low end
        hgt, m = f * 1.3, 3.0 / s     # a line's height; the halo, 3 px
        taken = Boxes(hgt * 4)
        for r in regions:
            if r.box[3] - r.box[1] < hgt:      # a name never stands for a region smaller than itself
                continue
            # the first place that holds a form of its name, the longest form there
            found = next(((t, em * f, spot) for where in _PLACES for t, em in zip(r.names, r.ems, strict=True)
                          if (spot := where(r, em * f, hgt, m, nodes, clusters, taken)) is not None), None)
            if found is None:
                continue
            text, tw, rect = found
            taken.add((rect[0] - m, rect[1] - m, rect[2] + m, rect[3] + m))
            # where it may draw: its halo, glyphs a little wider than the estimate
            reach = (rect[0] - m - tw * 0.1, rect[1] - m, rect[2] + m + tw * 0.1, rect[3] + m)
            out.append(Placed(rect, reach, k, text))
        ranges.append((k, s, hi))
        hi = s
    return out, ranges


def _inside(r: _Region, tw: float, hgt: float, m: float, nodes: Boxes, clusters: Boxes, taken: Boxes
            ) -> Box | None:
    """A name ``tw`` × ``hgt`` points inside region ``r``: a closed box's in its middle, an open cluster's on
    the highest of its rows where no box, cluster inside it or name is (``place_overview``)."""
    x0, y0, x1, y1 = r.box
    if tw + 2 * m > x1 - x0:
        return None
    if r.closed:        # inside its own box, which nothing else covers: only other names can be in the way
        if y1 - y0 < hgt:
            return None
        cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
        rect = (cx - tw / 2, cy - hgt / 2, cx + tw / 2, cy + hgt / 2)
        return None if taken.meets(rect) else rect
    top = y1 - m
    for _ in range(OVERVIEW_ROWS):
        if top - hgt < y0 + m:
            break
        band = (x0 + m, top - hgt - m, x1 - m, top + m)
        inner = [c for c in clusters.meeting(band) if not _holds(c, r.box)]     # the clusters inside it
        blocks = [(b[0] - m, b[1], b[2] + m, b[3]) for b in nodes.meeting(band) + taken.meeting(band) + inner]
        x = _free_x(x0 + m, x1 - m, tw, blocks)
        if x is not None:
            return (x, top - hgt, x + tw, top)
        top -= hgt / 2
    return None


def _above(r: _Region, tw: float, hgt: float, m: float, nodes: Boxes, clusters: Boxes, taken: Boxes
           ) -> Box | None:
    """Just above an open cluster, within its parent."""
    if r.closed:
        return None
    x0, _, _, y1 = r.box
    rect = (x0 + m, y1 + m, x0 + m + tw, y1 + m + hgt)
    return rect if _clear(rect, r.outers[0], r.box, m, nodes, clusters, taken) else None


def _beside(r: _Region, tw: float, hgt: float, m: float, nodes: Boxes, clusters: Boxes, taken: Boxes
            ) -> Box | None:
    """Level with an open cluster's top, right of it within its parent, else right of its parent (a stack of
    layers as wide as their parent: their names in the margin beside it)."""
    if r.closed:
        return None
    y1 = r.box[3]
    for edge, within in list(zip((r.box, *r.outers[:-1]), r.outers, strict=True))[:2]:
        rect = (edge[2] + m, y1 - m - hgt, edge[2] + m + tw, y1 - m)
        if _clear(rect, within, r.box, m, nodes, clusters, taken):
            return rect
    return None


_PLACES = (_inside, _above, _beside)


def _clear(rect: Box, within: Box, own: Box, m: float, nodes: Boxes, clusters: Boxes, taken: Boxes) -> bool:
    """A name set at ``rect`` for the region ``own``, outside it: inside ``within``, clear of boxes, names and
    clusters other than those that hold ``own``."""
    if rect[0] < within[0] + m or rect[2] > within[2] - m or rect[1] < within[1] + m or rect[3] > within[3] - m:
        return False
    clear = (rect[0] - m, rect[1] - m, rect[2] + m, rect[3] + m)
    if nodes.meets(clear) or taken.meets(clear):
        return False
    return all(_holds(c, own) for c in clusters.meeting(clear))


def overview_css(ranges: list[tuple[int, float, float]]) -> Callable[[float], str]:
    """The overview labels' CSS for an image ``vw`` points wide: band k's labels (class ``o{k}``) are drawn
    between its scales, at ``OVERVIEW_PX`` on screen at the band's low end, with a 3 px halo."""
    fixed = ".ov{display:none;font-weight:bold;text-anchor:start;dominant-baseline:central;paint-order:stroke;" \
            "stroke-linejoin:round}" + "".join(f".o{k}{{font-size:{_n(OVERVIEW_PX / lo)}px;stroke-width:{_n(6.0 / lo)}px}}"
                                               for k, lo, _ in ranges)

    def rules(vw: float) -> str:
        return fixed + "".join(f"@media (min-width:{_n(vw * lo)}px) and (max-width:{_n(vw * up - 0.01)}px)"
                               f"{{.o{k}{{display:inline}}}}" for k, lo, up in ranges)
    return rules


def overview_element(cv_x: str, cv_y: str, band: int, text: str) -> str:
    """One overview label's SVG text element, at SVG coordinates already mapped."""
    return f'<text x="{cv_x}" y="{cv_y}" class="ov o{band}">{html.escape(text)}</text>'


def _holds(outer: Box, inner: Box) -> bool:
    return outer[0] <= inner[0] and outer[1] <= inner[1] and inner[2] <= outer[2] and inner[3] <= outer[3]
