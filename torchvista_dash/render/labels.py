"""The picture's text: how big each kind of label is, where the level of detail drops it, how it is shortened
to its room, and which labels are drawn at all so that none covers another, a box or a header.

Box labels and headers are shortened with "…" to the room the layout sized for (``fit_text``, the layout's own
glyph estimate). Edge labels keep Graphviz's place, and one that would cover a box, a header or an earlier
edge label is left out (``edge_labels``: Graphviz can set two edges' labels on top of each other). Zoomed out,
map-style overview labels name the modules (``place_overview``): per band of zoom, a closed module's name
inside its box, an open one's on the highest of its rows free of boxes, inner clusters and names placed
before, else just above it, else level with its top beside it or beside its parent, else not at all.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Iterable
from typing import NamedTuple

from torchvista_dash.layout.textmetrics import CHAR_EM, EDGE_PT, HEADER_PT
from torchvista_dash.layout.types import Box, EdgePath, Layout
from torchvista_dash.render.style import CLOSE_MARK
from torchvista_dash.view.types import VisibleGraph

# Text sizes and the glyph estimate are the layout's (layout/textmetrics.py): text is shortened to the room
# the layout sized for it.
TEXT_PAD = 4.0  # points kept free on each side of a label inside its box
HEADER_INSET = 6.0  # header text: points right of the cluster's left edge
HEADER_BASE = 13.0  # header baseline: points below the cluster's top edge

# Level of detail: the smallest scale (px per point) at which each class of text is drawn, chosen by its size
# on screen: shape lines (9 pt) from about 7 px, op names (11 pt) from 8 px, module names and headers (10 pt)
# from 7 px; smaller text is not readable, so it is not drawn. Below that, overview labels take over
# (``overview``).
LOD_SCALE: dict[str, float] = {"s": 0.8, "o": 0.72, "m": 0.7}  # shape lines + edge labels, op names, modules
OVERVIEW_PX = 11.0  # an overview label's size on screen at the low end of its band (up to √2 times that)
OVERVIEW_STEP = 2**0.5
# a closed box's overview label where one at OVERVIEW_PX has no room (a fitted tall stack: boxes a few pixels
# high, a few pixels apart): at this size, with a 1 px halo, spilling over its box onto nothing else
SMALL_PX = 7.0
OVERVIEW_MIN_PX = 300.0  # overview bands go down to the zoom where the whole picture is this many pixels
OVERVIEW_BANDS = 18
OVERVIEW_ROWS = 12  # rows (half a label's height apart) tried from a region's top for its overview label
MAX_TEXT_PX = 24.0  # a main label stops growing at about this many pixels
TEXT_BANDS = (2.0, 2.8, 4.0, 5.6, 8.0, 11.0, 16.0, 22.0, 32.0)

_n = "{:.1f}".format  # SVG numbers: one decimal (a tenth of a point), formatted fast (tens of thousands)

# Bold sans-serif advance widths (em, Helvetica / Liberation Sans Bold), for overview labels: a wide glyph
# estimate would drop names that fit, a narrow one would let them collide.
_BOLD = {
    **dict.fromkeys("ijl.,:;'|!", 0.28),
    **dict.fromkeys("ftI()[] ", 0.34),
    "r": 0.39,
    **dict.fromkeys("mMW", 0.89),
    "w": 0.78,
    **dict.fromkeys("ABCDEGHKNOQRSUVXY", 0.74),
    **dict.fromkeys("FLPTZJ", 0.62),
    "…": 1.0,
    "⊖": 0.8,
    "⊕": 0.8,
}


def bold_em(text: str) -> float:
    """``text``'s width in em, set in bold (an upper estimate of the common fonts')."""
    return sum(_BOLD.get(ch, 0.61) for ch in text) * 1.04


def fit_text(text: str, width_pt: float, size_pt: float) -> str:
    """``text`` shortened with "…" so that it fits ``width_pt`` at ``size_pt`` (the layout's glyph
    estimate)."""
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
    """Boxes in a grid of ``cell``-point squares: which ones a rectangle meets, without a scan of all of them
    (the cell about the size of the rectangles asked about)."""

    def __init__(self, cell: float, boxes: Iterable[Box] = ()) -> None:
        self.cell = cell
        self.grid: dict[tuple[int, int], list[Box]] = {}
        for b in boxes:
            self.add(b)

    def _keys(self, r: Box) -> list[tuple[int, int]]:
        c = self.cell
        i0, i1, j0, j1 = int(r[0] // c), int(r[2] // c), int(r[1] // c), int(r[3] // c)
        if i0 == i1 and j0 == j1:
            return [(i0, j0)]
        return [(i, j) for i in range(i0, i1 + 1) for j in range(j0, j1 + 1)]

    def add(self, b: Box) -> None:
        for key in self._keys(b):
            self.grid.setdefault(key, []).append(b)

    def meeting(self, r: Box) -> list[Box]:
        keys = self._keys(r)
        if len(keys) == 1:
            return [b for b in self.grid.get(keys[0], ()) if _meets(b, r)]
        return list(dict.fromkeys(b for key in keys for b in self.grid.get(key, ()) if _meets(b, r)))

    def meets(self, r: Box) -> bool:
        return any(_meets(b, r) for key in self._keys(r) for b in self.grid.get(key, ()))


def edge_labels(
    edges: Iterable[EdgePath], nodes: Boxes, headers: Iterable[Box]
) -> list[tuple[Box, EdgePath]]:
    """The edge labels drawn, each with where it lies: in layout order, those that cover no box (``nodes``),
    no header and no edge label drawn before them."""
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
    parent's (``self_attn`` inside ``layers.0``); a folded run's count alone (``×32``), a grouped output's
    name alone (``cache``)."""
    qual, _, cls = label.partition(": ")
    if qual.startswith("("):  # the root, "(root): GridNet": its class name
        return [cls] if cls else [label]
    out = [label, qual]
    head, sep, count = label.rpartition(" ×")
    if sep and count.isdigit() and " " not in head:
        out.append(f"×{count}")
    if " · " in label:
        out.append(label.split(" · ")[0])
    if parent_label is not None:
        pq = parent_label.split(": ")[0] + "."
        if qual.startswith(pq) and len(qual) > len(pq):
            out.append(qual[len(pq) :])
    return list(dict.fromkeys(out))


class _Few(NamedTuple):
    """A few boxes, read by a scan (cheaper than a grid for a cluster's handful of children)."""

    boxes: list[Box]

    def meeting(self, r: Box) -> list[Box]:
        return [b for b in self.boxes if _meets(b, r)]


class _Region(NamedTuple):
    depth: int
    box: Box  # the module's cluster, or its closed box
    outers: tuple[Box, ...]  # the clusters it is in, innermost first, and the canvas
    kids: tuple[Boxes | _Few, ...]  # what lies directly in it (boxes, clusters), then directly in each outer
    names: list[str]
    ems: list[float]  # their widths in em (bold)
    closed: bool  # a closed module box (its label goes inside it, over nothing else)


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
    small: bool = False  # set at SMALL_PX, not OVERVIEW_PX: a closed box's name in a tight stack


def place_overview(
    vg: VisibleGraph, layout: Layout, ext: Box
) -> tuple[list[Placed], list[tuple[int, float, float]]]:
    """Where the overview labels go, and per band ``(index, low, high)``: the scales (px per point) between
    which its labels are drawn.

    Per band of zoom (each √2 wide, from the module-name threshold down), the modules that have room for a
    name at ``OVERVIEW_PX``–√2× that on screen, shallow ones first, the longest form that fits: a closed
    module box holds its name inside itself; an open cluster's name goes on the highest of its rows free of
    boxes, of the clusters inside it and of the names already placed, else just above the cluster (within its
    parent), else level with its top right of it or right of its parent, clear of other clusters, else
    nowhere. Each place is tried with every form of the name before the next place. A module smaller than its
    name is not named."""
    w, h = ext[2] - ext[0], ext[3] - ext[1]
    bands = overview_bands(w, h)
    if not bands:
        return [], []
    labels = {c.id: c.label for c in vg.clusters}
    depth = cluster_depths(vg, layout)
    # what lies directly in each cluster (None: on the canvas): everything deeper lies in one of those
    # clusters, so a name clear of these is clear of every box and cluster there
    lists: dict[str | None, list[Box]] = {}
    for vid, box in (*layout.nodes.items(), *layout.clusters.items()):
        par = layout.parent.get(vid)
        lists.setdefault(par if par in layout.clusters else None, []).append(box)
    kids = {k: _Few(v) if len(v) <= 32 else Boxes(400.0, v) for k, v in lists.items()}
    nothing = _Few([])

    def region(vid: str, box: Box, parent: str | None, closed: bool, d: int, label: str) -> _Region:
        names = _names(label, labels.get(parent or ""))
        outer: list[Box] = []
        inner: list[Boxes | _Few] = [nothing if closed else kids.get(vid, nothing)]
        while parent is not None and parent in layout.clusters and len(outer) < 64:
            outer.append(layout.clusters[parent])
            inner.append(kids.get(parent, nothing))
            parent = layout.parent.get(parent)
        return _Region(
            d,
            box,
            (*outer, ext),
            (*inner, kids.get(None, nothing)),
            names,
            [bold_em(t) for t in names],
            closed,
        )

    regions = [
        region(cl.id, layout.clusters[cl.id], cl.parent, False, depth[cl.id], cl.label) for cl in vg.clusters
    ]
    regions += [
        region(
            vn.id,
            layout.nodes[vn.id],
            vn.parent,
            True,
            depth.get(vn.parent, -1) + 1 if vn.parent else 0,
            vn.label,
        )
        for vn in vg.nodes
        if vn.kind in ("module", "folded")
    ]
    regions.sort(key=lambda r: (r.depth, -r.box[3], r.box[0]))
    out: list[Placed] = []
    ranges: list[tuple[int, float, float]] = []
    blocked: set[tuple[int, int, int]] = (
        set()
    )  # (region, place, name) with no room at a size: none at larger ones
    hi = LOD_SCALE["m"]
    for k, s in enumerate(bands):
        f = OVERVIEW_PX / s  # the font size in points that is OVERVIEW_PX on screen at the band's low end
        hgt, m = f * 1.3, 3.0 / s  # a line's height; the halo, 3 px
        taken = Boxes(hgt * 4)
        for ri, r in enumerate(regions):
            # a name never stands for an open region smaller than itself; a closed box's name may spill over
            # its box, onto nothing but it (at a fitted tall view a box is a few pixels high)
            if r.box[3] - r.box[1] < hgt and not r.closed:
                continue
            # the first place that holds a form of its name, the longest form there
            found = None
            for ni, (t, em) in enumerate(zip(r.names, r.ems, strict=True)):
                if (ri, -1, ni) in blocked:
                    continue
                spot = _inside(r, em * f, hgt, m, taken)
                if spot is BLOCKED:
                    blocked.add((ri, -1, ni))
                elif spot is not None:
                    found = (t, em * f, spot)
                    break
            if found is None:
                found = (_spill if r.closed else _outside)(r, ri, f, hgt, m, taken, blocked)
            if found is None:
                continue
            small = len(found) == 4
            text, tw, rect = found[:3]
            mk = m / 3 if small else m
            taken.add((rect[0] - mk, rect[1] - mk, rect[2] + mk, rect[3] + mk))
            # where it may draw: its halo, glyphs a little wider than the estimate
            reach = (rect[0] - mk - tw * 0.1, rect[1] - mk, rect[2] + mk + tw * 0.1, rect[3] + mk)
            out.append(Placed(rect, reach, k, text, small))
        ranges.append((k, s, hi))
        hi = s
    return out, ranges


BLOCKED: Box = (0.0, 0.0, 0.0, 0.0)  # no room for a name of that size among the boxes and clusters alone


def _inside(r: _Region, tw: float, hgt: float, m: float, taken: Boxes) -> Box | None:
    """A name ``tw`` × ``hgt`` points inside region ``r``: a closed box's in its middle, an open cluster's on
    the highest of its first rows where no box, cluster inside it or name is (``place_overview``); BLOCKED
    when the boxes and clusters alone leave it no room (a larger name then has none either, or hardly: its
    rows reach a little deeper)."""
    x0, y0, x1, y1 = r.box
    if tw + 2 * m > x1 - x0:
        return BLOCKED
    if r.closed:  # inside its own box, which nothing else covers: only other names can be in the way
        if y1 - y0 < hgt:
            return BLOCKED
        cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
        rect = (cx - tw / 2, cy - hgt / 2, cx + tw / 2, cy + hgt / 2)
        return None if taken.meets(rect) else rect
    top, room = y1 - m, False
    for _ in range(OVERVIEW_ROWS):
        if top - hgt < y0 + m:
            break
        lo, hi = top - hgt - m, top + m
        row = (x0 + m, lo, x1 - m, hi)
        blocks = [(b[0] - m, b[1], b[2] + m, b[3]) for b in r.kids[0].meeting(row)]
        if _free_x(x0 + m, x1 - m, tw, blocks) is not None:
            room = True
            blocks += [(b[0] - m, b[1], b[2] + m, b[3]) for b in taken.meeting(row)]
            x = _free_x(x0 + m, x1 - m, tw, blocks)
            if x is not None:
                return (x, top - hgt, x + tw, top)
        top -= hgt / 2
    return None if room else BLOCKED


def _outside(
    r: _Region, ri: int, f: float, hgt: float, m: float, taken: Boxes, blocked: set[tuple[int, int, int]]
) -> tuple[str, float, Box] | None:
    """An open cluster's name outside it: just above it within its parent, else level with its top right of
    it within its parent, else right of its parent (a stack of layers as wide as their parent: their names in
    the margin beside it); clear of names and of what lies in that parent. A place that the boxes and clusters
    there leave no room in at font size ``f`` has none at a larger one either (the name only grows about the
    same corner): ``blocked`` remembers it across the bands, which come in growing sizes (``f``)."""
    x0, _, x1, y1 = r.box
    # (left edge, top, the cluster it lies in, what lies directly there): above it, then beside it, its parent
    places = [(x0, y1 + m + hgt, r.outers[0], r.kids[1])]
    places += [
        (edge[2], y1 - m, within, inside)
        for edge, within, inside in zip((r.box, *r.outers[:-1]), r.outers[:2], r.kids[1:3], strict=False)
    ]
    for pi, (left, top, within, inside) in enumerate(places):
        for ni, em in enumerate(r.ems):
            if (ri, pi, ni) in blocked:
                continue
            tw = em * f
            text = r.names[ni]
            rect = (left + m, top - hgt, left + m + tw, top)
            fits = _fits(rect, within, inside, r.box, m)
            if not fits:
                blocked.add((ri, pi, ni))
            elif not taken.meets((rect[0] - m, rect[1] - m, rect[2] + m, rect[3] + m)):
                return text, tw, rect
    return None


def _spill(
    r: _Region, ri: int, f: float, hgt: float, m: float, taken: Boxes, blocked: set[tuple[int, int, int]]
) -> tuple[str, float, Box] | tuple[str, float, Box, bool] | None:
    """A closed box's name where it does not fit inside the box: centred on it and spilling over its edges,
    else level with it right of it, else just above it; inside its parent and clear of everything else that
    lies there and of names (``blocked`` as in ``_outside``, places numbered after its). Failing all, centred
    at ``SMALL_PX`` with a thin halo (a 4-tuple, its last item True)."""
    x0, y0, x1, y1 = r.box
    cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
    small = SMALL_PX / OVERVIEW_PX
    places = (("centre", 1.0), ("right", 1.0), ("above", 1.0), ("centre", small))
    for pi, (place, z) in enumerate(places, start=8):
        h_z, m_z = hgt * z, m if z == 1.0 else m / 3
        for ni, em in enumerate(r.ems):
            if (ri, pi, ni) in blocked:
                continue
            tw = em * f * z
            if place == "centre":
                rect = (cx - tw / 2, cy - h_z / 2, cx + tw / 2, cy + h_z / 2)
            elif place == "right":
                rect = (x1 + m, cy - h_z / 2, x1 + m + tw, cy + h_z / 2)
            else:
                rect = (x0, y1 + m, x0 + tw, y1 + m + h_z)
            if not _fits(rect, r.outers[0], r.kids[1], r.box, m_z):
                blocked.add((ri, pi, ni))
            elif not taken.meets((rect[0] - m_z, rect[1] - m_z, rect[2] + m_z, rect[3] + m_z)):
                return (r.names[ni], tw, rect) if z == 1.0 else (r.names[ni], tw, rect, True)
    return None


def _fits(rect: Box, within: Box, inside: Boxes | _Few, own: Box, m: float) -> bool:
    """A name set at ``rect`` for the region ``own``, outside it: inside ``within``, clear of what lies
    directly in ``within`` (``inside``: boxes and clusters) but for what holds ``own``."""
    if (
        rect[0] < within[0] + m
        or rect[2] > within[2] - m
        or rect[1] < within[1] + m
        or rect[3] > within[3] - m
    ):
        return False
    clear = (rect[0] - m, rect[1] - m, rect[2] + m, rect[3] + m)
    return all(_holds(b, own) for b in inside.meeting(clear))


def overview_css(ranges: list[tuple[int, float, float]]) -> Callable[[float], str]:
    """The overview labels' CSS for an image ``vw`` points wide: band k's labels (class ``o{k}``) are drawn
    between its scales, at ``OVERVIEW_PX`` on screen at the band's low end, with a 3 px halo."""
    fixed = (
        ".ov{display:none;font-weight:bold;text-anchor:start;dominant-baseline:central;paint-order:stroke;"
        "stroke-linejoin:round}"
        + "".join(
            f".o{k}{{font-size:{_n(OVERVIEW_PX / lo)}px;stroke-width:{_n(6.0 / lo)}px}}"
            f".o{k}.q{{font-size:{_n(SMALL_PX / lo)}px;stroke-width:{_n(2.0 / lo)}px}}"
            for k, lo, _ in ranges
        )
    )

    def rules(vw: float) -> str:
        return fixed + "".join(
            f"@media (min-width:{_n(vw * lo)}px) and (max-width:{_n(vw * up - 0.01)}px)"
            f"{{.o{k}{{display:inline}}}}"
            for k, lo, up in ranges
        )

    return rules


def overview_element(cv_x: str, cv_y: str, band: int, text: str, small: bool = False) -> str:
    """One overview label's SVG text element, at SVG coordinates already mapped (``small``: at
    ``SMALL_PX``)."""
    return f'<text x="{cv_x}" y="{cv_y}" class="ov o{band}{" q" if small else ""}">{html.escape(text)}</text>'


def _holds(outer: Box, inner: Box) -> bool:
    return outer[0] <= inner[0] and outer[1] <= inner[1] and inner[2] <= outer[2] and inner[3] <= outer[3]
