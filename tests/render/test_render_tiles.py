"""The picture cut into tiles (render/svg/tiles.py): one layout image per tile, each element in every tile it
draws in, each tile's level of detail read from its own width; small views stay one image."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from support_render import SVG_NS as NS
from support_render import grid_case, picture_pieces

from torchvista_dash.layout.textmetrics import SUB_PT
from torchvista_dash.render import make_figure
from torchvista_dash.render.figure import TILE_PT
from torchvista_dash.render.style import get_theme
from torchvista_dash.render.svg.picture import LOD_SCALE, picture_svg
from torchvista_dash.render.svg.tiles import MAX_TILES, MIN_TILED_BOXES, OVERLAP, Grid


def _img_box(img) -> tuple[float, float, float, float]:
    return (img.x, img.y - img.sizey, img.x + img.sizex, img.y)


def test_a_small_view_is_one_image_the_whole_picture():
    g, vg, lay = grid_case(30)
    fig = make_figure(g, vg, lay)
    (img,) = fig.layout.images
    ext = fig.layout.meta["torchvista_dash"]["picture"]
    assert [round(v, 1) for v in _img_box(img)] == ext
    svg = ET.tostring(picture_pieces(fig)[0], encoding="unicode")
    th = get_theme("light")
    assert ET.tostring(ET.fromstring(picture_svg(vg, lay, th, tuple(ext))), encoding="unicode") == svg


def test_a_big_view_is_tiles_that_cover_it_each_with_what_it_draws():
    g, vg, lay = grid_case(1000)
    fig = make_figure(g, vg, lay)
    ext = fig.layout.meta["torchvista_dash"]["picture"]
    grid = Grid.bounded(tuple(ext), tuple(fig.layout.meta["torchvista_dash"]["bounds"]), TILE_PT, 1000)
    images, pieces = list(fig.layout.images), picture_pieces(fig)
    assert 4 <= len(images) <= len(grid) <= MAX_TILES
    cells = {grid.box((i, j)) for i in range(grid.nx) for j in range(grid.ny)}
    assert all(tuple(round(v, 1) for v in _img_box(i)) in cells for i in images)
    for img, svg in zip(images, pieces, strict=True):
        x0, y0, x1, y1 = _img_box(img)
        # the tile's viewBox is its box, in the whole picture's units (points from the canvas's top left)
        vb = [float(v) for v in svg.get("viewBox").split()]
        assert abs(vb[0] - (x0 - ext[0])) < 0.06 and abs(vb[1] - (ext[3] - y1)) < 0.06
        assert abs(vb[2] - (x1 - x0)) < 0.06 and abs(vb[3] - (y1 - y0)) < 0.06
        # its level of detail reads its own width: shape lines go below LOD_SCALE["s"] px per point
        css = svg.find(f"{NS}style").text
        assert f"@media (max-width:{vb[2] * LOD_SCALE['s']:.1f}px){{.s,.el{{display:none}}}}" in css
        # opaque, so that where neighbours overlap, translucent cluster fills are not drawn twice
        assert svg.find(f"{NS}rect").get("style") == "fill:#ffffff"
    # every box's label is in each tile its box reaches into (so it is drawn whole across a border), and every
    # box is in some tile
    labels = [
        {(t.get("x"), t.get("y")) for t in svg.iter(f"{NS}text") if "t" in (t.get("class") or "").split()}
        for svg in pieces
    ]
    boxes = [_img_box(i) for i in images]
    across = 0
    for vn in vg.nodes:
        bx0, by0, bx1, by1 = lay.nodes[vn.id]
        cx, cy = f"{(bx0 + bx1) / 2 - ext[0]:.1f}", (by0 + by1) / 2
        at = {(cx, f"{ext[3] - cy:.1f}"), (cx, f"{ext[3] - cy - SUB_PT * 0.6:.1f}")}
        reach = [k for k, b in enumerate(boxes) if b[0] < bx1 and bx0 < b[2] and b[1] < by1 and by0 < b[3]]
        assert reach and all(at & labels[k] for k in reach), vn.id
        across += len(reach) > 1
    assert across >= 10, "some boxes lie across a border between tiles"


def test_overview_labels_switch_on_at_the_same_zoom_in_every_tile():
    g, vg, lay = grid_case(MIN_TILED_BOXES, cols=2)
    fig = make_figure(g, vg, lay)
    pieces = picture_pieces(fig)
    assert len(pieces) > 1
    bands: dict[str, list[tuple[float, float]]] = {}
    for svg in pieces:
        vw = float(svg.get("viewBox").split()[2])
        css = svg.find(f"{NS}style").text
        for lo, hi, band in re.findall(
            r"@media \(min-width:([\d.]+)px\) and \(max-width:([\d.]+)px\)\{\.(o\d+)", css
        ):
            bands.setdefault(band, []).append((float(lo) / vw, float(hi) / vw))
    # each band's zoom range (px per point) is the same whichever tile shows it (to the CSS's tenth of a
    # pixel)
    assert len(bands) >= 3
    for band, ranges in bands.items():
        assert len(ranges) == len(pieces), band
        for k in (0, 1):
            vals = [r[k] for r in ranges]
            assert max(vals) - min(vals) <= 0.01 * max(vals) + 1e-3, (band, vals)


def test_an_empty_part_of_the_canvas_is_no_image():
    g, vg, lay = grid_case(900)
    ext = tuple(make_figure(g, vg, lay).layout.meta["torchvista_dash"]["picture"])
    grid = Grid(ext, 400.0)
    cells = grid.sort([[((ext[0] + 10, ext[3] - 20, ext[0] + 30, ext[3] - 10), "a")]])
    assert list(cells) == [(0, 0)] and cells[(0, 0)] == [["a"]]
    # an element across a border is in both tiles
    b = grid.box((0, 0))
    cells = grid.sort([[((b[2] - OVERLAP - 5, ext[3] - 20, b[2] - OVERLAP + 5, ext[3] - 10), "x")]])
    assert sorted(cells) == [(0, 0), (1, 0)]


def test_tiles_are_bounded_in_number_and_bytes_on_a_long_column():
    """A 32-layer every-op model is a column far taller than wide, on a canvas widened to the plot's aspect:
    its tiles are at most MAX_TILES, rows over the drawing (the padding beside it joins the outer cells), and
    together not much more SVG than the one image (elements near a border are in both tiles)."""
    g, vg, lay = grid_case(2000, cols=3)
    one = make_figure(g, vg, lay, tile=None)
    tiled = make_figure(g, vg, lay)
    ext = tiled.layout.meta["torchvista_dash"]["picture"]
    images = list(tiled.layout.images)
    assert 2 <= len(images) <= MAX_TILES
    assert all(round(i.x, 1) == ext[0] and round(i.x + i.sizex, 1) == ext[2] for i in images)  # whole rows
    size = sum(len(i.source) for i in images)
    assert size <= 2.5 * len(one.layout.images[0].source)


def test_a_view_under_the_threshold_is_one_image_however_big_its_canvas():
    g, vg, lay = grid_case(MIN_TILED_BOXES - 1, cols=2)
    assert len(make_figure(g, vg, lay).layout.images) == 1
