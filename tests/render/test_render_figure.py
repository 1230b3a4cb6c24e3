"""make_figure on hand-built views and layouts: the picture (SVG layout image), the click targets, hover,
themes, failures."""

from __future__ import annotations

import base64
import dataclasses
import json
import math
import re

import pytest
from support_render import SVG_NS as NS
from support_render import grid_case
from support_render import picture_of as svg_of
from support_render import picture_texts as texts

from torchvista_dash.layout.types import Layout
from torchvista_dash.render import UIREVISION, hits, make_figure
from torchvista_dash.render.figure import FAILED_WINDOW, TILE_PT
from torchvista_dash.render.hits import header_rows
from torchvista_dash.render.labels import Boxes, edge_labels
from torchvista_dash.render.svg.picture import LOD_SCALE, OVERVIEW_PX, extent, fit_text
from torchvista_dash.render.viewport import (
    NOMINAL_PLOT_PX,
    READABLE_SCALE,
    START_SCALE,
    fit_scale,
    start_window,
)


def ids_in(fig, names) -> list[str]:
    """Every customdata id carried by the named traces."""
    return [i for t in fig.data if t.name in set(names) and t.customdata is not None for i in t.customdata]


def by_name(fig, name):
    matches = [t for t in fig.data if t.name == name]
    assert len(matches) == 1, f"expected one trace named {name!r}, got {[t.name for t in fig.data]}"
    return matches[0]


def bar_box(t, i):
    return (t.x[i] - t.width[i] / 2, t.base[i], t.x[i] + t.width[i] / 2, t.base[i] + t.y[i])


@pytest.fixture(scope="module")
def case30():
    return grid_case(30)


def test_every_box_is_one_invisible_target_exactly_its_size(case30):
    g, vg, lay = case30
    fig = make_figure(g, vg, lay)
    boxes = by_name(fig, "nodes:labels")
    assert boxes.type == "bar" and boxes.marker.color == "rgba(0,0,0,0)"
    assert list(boxes.customdata) == [n.id for n in vg.nodes]
    for i, vid in enumerate(boxes.customdata):
        assert bar_box(boxes, i) == pytest.approx(lay.nodes[vid], abs=0.01)
    assert fig.layout.barmode == "overlay"


def test_header_rows_span_their_cluster_above_its_contents(case30):
    g, vg, lay = case30
    fig = make_figure(g, vg, lay)
    rows = by_name(fig, "clusters:headers")
    assert list(rows.customdata) == [c.id for c in vg.clusters]
    targets = [bar_box(rows, i) for i in range(len(rows.x))]
    targets += [bar_box(by_name(fig, "nodes:labels"), i) for i in range(len(vg.nodes))]
    for i, (cid, row) in enumerate(zip(rows.customdata, targets, strict=False)):
        x0, y0, x1, y1 = lay.clusters[cid]
        assert row[0] == pytest.approx(x0) and row[2] == pytest.approx(x1) and row[3] == pytest.approx(y1)
        assert y1 - 25 <= row[1] < y1 - 7
        for j, other in enumerate(targets):  # no other target shares a point with a header row
            if j != i:
                assert other[2] <= row[0] or row[2] <= other[0] or other[3] <= row[1] or row[3] <= other[1], (
                    cid,
                    j,
                )
    assert header_rows(vg, lay)[rows.customdata[0]] == pytest.approx(targets[0])


def test_the_picture_is_one_image_in_data_coordinates(case30):
    g, vg, lay = case30
    fig = make_figure(g, vg, lay)
    (img,) = fig.layout.images
    assert (img.xref, img.yref, img.sizing, img.layer, img.xanchor, img.yanchor) == (
        "x",
        "y",
        "stretch",
        "below",
        "left",
        "top",
    )
    svg = svg_of(fig)
    vb = [float(v) for v in svg.get("viewBox").split()]
    assert vb[2] == pytest.approx(img.sizex) and vb[3] == pytest.approx(img.sizey)  # one unit per point
    x0, y0, x1, y1 = fig.layout.meta["torchvista_dash"]["bounds"]
    assert img.x < x0 and img.x + img.sizex > x1 and img.y > y1 and img.y - img.sizey < y0
    shapes = [
        e for e in svg if e.tag in (f"{NS}rect", f"{NS}path") and (e.get("class") or "").startswith("k")
    ]
    assert len([e for e in shapes if not e.get("class").endswith("i")]) == len(vg.nodes)
    edges = next(e for e in svg if e.get("class") == "e")
    params = [e for e in svg if e.get("class") == "e ep"]
    assert edges.get("d").count("M") + sum(p.get("d").count("M") for p in params) == len(lay.edges)
    heads = next(e for e in svg if e.get("class") == "a")
    assert heads.get("d").count("M") == len(lay.edges)
    # edge labels: those that cover no box and no other label (render/labels.py edge_labels; this grid's
    # labels sit mostly over the next box)
    drawn, kept = texts(svg, "el"), edge_labels(lay.edges, Boxes(150.0, lay.nodes.values()), [])
    assert drawn and sorted(drawn) == sorted(ed.label for _, ed in kept)


def test_labels_marks_and_headers(case30):
    g, vg, lay = case30
    svg = svg_of(make_figure(g, vg, lay))
    main = texts(svg, "t")
    assert any(t.startswith("⊕ block: Bl") for t in main)  # shortened: the grid's boxes are 90 points wide
    assert "⊕ Layer ×3" in main and "input_0" in main
    assert "1×8×64" in texts(svg, "s")  # the shape line
    assert "⊖ enc: Encoder" in texts(svg, "h")
    assert len(texts(svg, "m")) == 2 and "⊕ Layer ×3" in texts(svg, "m")  # module names: last to drop out
    assert "linear" in texts(svg, "o")


def test_level_of_detail_and_text_cap_follow_the_drawn_width(case30):
    g, vg, lay = case30
    fig = make_figure(g, vg, lay)
    css = svg_of(fig).find(f"{NS}style").text
    width = fig.layout.images[0].sizex
    for key, hides in (("s", ".s,.el"), ("o", ".o"), ("m", ".m,.h")):
        assert f"@media (max-width:{width * LOD_SCALE[key]:.1f}".rstrip("0").rstrip(".") in css
        assert re.search(r"@media \(max-width:[\d.]+px\)\{" + re.escape(hides) + r"\{display:none\}\}", css)
    assert LOD_SCALE["s"] > LOD_SCALE["o"] > LOD_SCALE["m"]  # shape lines go first, module names last
    assert "@media (min-width:" in css  # zoomed far in, text stops growing


def test_text_is_shortened_to_fit_its_box_and_headers_to_their_cluster(case30):
    assert fit_text("short", 100, 11) == "short"
    cut = fit_text("a_really_long_module_name: SomeClass", 90, 11)
    assert cut.endswith("…") and len(cut) * 11 * 0.6 <= 90
    g, vg, lay = case30
    long = "encoder.layers.0.self_attention.output_projection: NonDynamicallyQuantizableLinear"
    nodes = tuple(dataclasses.replace(n, label=long) if n.id == "n:6" else n for n in vg.nodes)
    clusters = tuple(dataclasses.replace(c, label=long * 4) if c.id == "mod:enc" else c for c in vg.clusters)
    fig = make_figure(g, dataclasses.replace(vg, nodes=nodes, clusters=clusters), lay)
    svg = svg_of(fig)
    node_text = next(t for t in texts(svg, "t") if t.startswith("encoder."))
    assert node_text.endswith("…") and len(node_text) * 11 * 0.6 <= lay.nodes["n:6"][2] - lay.nodes["n:6"][0]
    header = next(t for t in texts(svg, "h") if "encoder." in t)
    box = lay.clusters["mod:enc"]
    assert header.endswith("…") and len(header) * 10 * 0.6 <= box[2] - box[0]
    rows = by_name(fig, "clusters:headers")
    assert long * 4 in rows.hovertext[list(rows.customdata).index("mod:enc")]  # whole on hover


def test_labels_and_details_can_be_left_out(case30):
    g, vg, lay = case30
    assert texts(svg_of(make_figure(g, vg, lay, labels=False))) == []
    plain = svg_of(make_figure(g, vg, lay, details=False))
    assert texts(plain, "s") == [] and texts(plain, "el") == [] and texts(plain, "t")


def test_every_point_with_customdata_is_a_visible_id(case30):
    g, vg, lay = case30
    fig = make_figure(g, vg, lay, highlight="n:7")
    visible = {n.id for n in vg.nodes} | {c.id for c in vg.clusters}
    for t in fig.data:
        if t.name == hits.EDGES:  # an edge's hover targets: they hover, and a click on one opens nothing
            assert set(t.customdata) == {""} and t.hoverinfo == "text"
        elif t.customdata is not None:
            assert set(t.customdata) <= visible, t.name
        else:  # no id ⇒ never a hover/click target
            assert t.hoverinfo == "skip", t.name
    assert set(ids_in(fig, ["nodes:labels", "clusters:headers"])) == visible


def test_trace_count_is_bounded_not_per_node():
    big = make_figure(*grid_case(2000))
    x0, y0, x1, y1 = big.layout.meta["torchvista_dash"]["picture"]
    tiles = math.ceil((x1 - x0) / TILE_PT) * math.ceil((y1 - y0) / TILE_PT)
    assert len(big.data) <= 3 and 1 < len(big.layout.images) <= tiles  # images: tiles of the picture
    assert len(by_name(big, "nodes:labels").x) == 2000


def test_equal_aspect_hidden_axes_uirevision_and_fit(case30):
    g, vg, lay = case30
    fig = make_figure(g, vg, lay)
    assert fig.layout.yaxis.scaleanchor == "x" and fig.layout.yaxis.scaleratio == 1
    assert fig.layout.xaxis.visible is False and fig.layout.yaxis.visible is False
    assert fig.layout.uirevision == UIREVISION
    assert make_figure(g, vg, lay, uirevision="other").layout.uirevision == "other"
    (xa, xb), (ya, yb) = fig.layout.xaxis.range, fig.layout.yaxis.range
    for x0, y0, x1, y1 in list(lay.nodes.values()) + list(lay.clusters.values()):
        assert xa <= x0 and x1 <= xb and ya <= y0 and y1 <= yb


def test_themes_follow_plotly_templates_and_colour_the_picture(case30):
    g, vg, lay = case30
    light = make_figure(g, vg, lay, theme="light")
    dark = make_figure(g, vg, lay, theme="dark")
    assert light.layout.template.layout.paper_bgcolor == "white"
    assert dark.layout.template.layout.paper_bgcolor == "rgb(17,17,17)"
    assert ".kop{fill:#dbe9f6" in svg_of(light).find(f"{NS}style").text
    assert ".kop{fill:#1f3a57" in svg_of(dark).find(f"{NS}style").text
    with pytest.raises(ValueError, match="light, dark"):
        make_figure(g, vg, lay, theme="solarized")


def test_hover_text_names_module_shapes_source(case30):
    g, vg, lay = case30
    fig = make_figure(g, vg, lay)
    hover = dict(
        zip(by_name(fig, "nodes:labels").customdata, by_name(fig, "nodes:labels").hovertext, strict=True)
    )
    op = hover["n:5"]
    assert "<b>linear</b> (op)" in op
    assert "module: enc (Encoder)" in op
    assert "outputs: 1×8×64 float32" in op and "inputs: 1×8×64 float32" in op
    assert "model.py:15" in op
    assert "parameters: 4,160" in op  # w (64×64) + b (64) of the root call
    assert (
        "module: enc.block (Block)" in hover["mod:enc.block"] and "parameters: 100" in hover["mod:enc.block"]
    )
    assert "3 repeated calls folded" in hover["fold:mod:enc.layers.0"]
    headers = by_name(fig, "clusters:headers")
    assert "module: enc (Encoder)" in headers.hovertext[1]


def test_failed_op_and_modules_in_red_hover_error_and_view_centred():
    g, vg, lay = grid_case(30, failed=True)
    fig = make_figure(g, vg, lay)
    svg = svg_of(fig)
    failed = [n for n in vg.nodes if n.failed]
    assert len([e for e in svg if e.get("class") == "kopf"]) == len(failed) == 1
    assert len([e for e in svg if e.get("class") == "cf"]) == 2
    css = svg.find(f"{NS}style").text
    red = re.search(r"\.cf\{fill:none;stroke:([^;]+);", css).group(1)
    assert f".kopf{{fill:#fbd0d0;stroke:{red}" in css and f".hf{{fill:{red}}}" in css
    assert len([t for t in svg.iter(f"{NS}text") if "hf" in t.get("class").split()]) == 2
    hover = dict(
        zip(by_name(fig, "nodes:labels").customdata, by_name(fig, "nodes:labels").hovertext, strict=True)
    )
    assert "error:" in hover[failed[0].id] and "&lt;bad&gt;" in hover[failed[0].id]  # escaped, not HTML
    x0, y0, x1, y1 = lay.nodes[failed[0].id]
    (xa, xb), (ya, yb) = fig.layout.xaxis.range, fig.layout.yaxis.range
    assert abs((xa + xb) / 2 - (x0 + x1) / 2) < 1 and abs((ya + yb) / 2 - (y0 + y1) / 2) < 1


def test_highlight_outlines_a_node_or_cluster_and_rejects_hidden_ids(case30):
    g, vg, lay = case30
    fig = make_figure(g, vg, lay, highlight="n:7")
    hl = by_name(fig, "highlight")
    x0, y0, x1, y1 = lay.nodes["n:7"]
    xs = [v for v in hl.x if v is not None]
    assert min(xs) < x0 and max(xs) > x1
    assert "highlight" in [t.name for t in make_figure(g, vg, lay, highlight="mod:enc").data]
    assert "highlight" not in [t.name for t in make_figure(g, vg, lay).data]
    with pytest.raises(ValueError, match="not drawn in this view"):
        make_figure(g, vg, lay, highlight="n:999")


def test_layout_not_matching_the_view_is_a_clear_error(case30):
    g, vg, lay = case30
    _, _, other = grid_case(12)
    with pytest.raises(ValueError, match="does not match the view"):
        make_figure(g, vg, other)


def test_same_input_same_json(case30):
    g, vg, lay = case30
    a = make_figure(g, vg, lay).to_json()
    b = make_figure(g, vg, lay).to_json()
    assert a == b
    json.loads(a)


def test_empty_view_is_an_empty_figure_not_an_error():
    g, vg, _ = grid_case(12)
    empty = dataclasses.replace(vg, nodes=(), edges=(), clusters=())
    fig = make_figure(g, empty, Layout(nodes={}, clusters={}, parent={}, edges=(), width=0.0, height=0.0))
    assert len(fig.data) == 0 and fig.layout.yaxis.scaleanchor == "x"


def test_user_text_is_escaped_in_the_picture_and_hover(case30):
    g, vg, lay = case30
    nodes = tuple(dataclasses.replace(n, label="<i>&x") if n.id == "n:6" else n for n in vg.nodes)
    fig = make_figure(g, dataclasses.replace(vg, nodes=nodes), lay)
    assert "<i>&x" in texts(svg_of(fig), "t")  # parsed back as text: it was escaped
    assert "<i>" not in base64.b64decode(fig.layout.images[0].source.split(",", 1)[1]).decode()
    hover = dict(
        zip(by_name(fig, "nodes:labels").customdata, by_name(fig, "nodes:labels").hovertext, strict=True)
    )
    assert "&lt;i&gt;" in hover["n:6"] or "<i>" not in hover["n:6"]


def test_failed_view_shows_everything_around_the_failure_when_readable():
    g, vg, lay = grid_case(12, failed=True)  # small: the whole graph fits, centred on the op
    fig = make_figure(g, vg, lay)
    failed = next(n.id for n in vg.nodes if n.failed)
    x0, y0, x1, y1 = lay.nodes[failed]
    (xa, xb), (ya, yb) = fig.layout.xaxis.range, fig.layout.yaxis.range
    assert abs((xa + xb) / 2 - (x0 + x1) / 2) < 1 and abs((ya + yb) / 2 - (y0 + y1) / 2) < 1
    for bx0, by0, bx1, by1 in lay.nodes.values():
        assert xa <= bx0 and bx1 <= xb and ya <= by0 and by1 <= yb


def test_failed_view_of_a_large_graph_zooms_to_a_window_on_the_failure():
    g, vg, lay = grid_case(400, failed=True)
    fig = make_figure(g, vg, lay)
    failed = next(n.id for n in vg.nodes if n.failed)
    x0, y0, x1, y1 = lay.nodes[failed]
    (xa, xb), (ya, yb) = fig.layout.xaxis.range, fig.layout.yaxis.range
    assert (xb - xa, yb - ya) == pytest.approx(FAILED_WINDOW, abs=0.2)
    assert abs((xa + xb) / 2 - (x0 + x1) / 2) < 1 and abs((ya + yb) / 2 - (y0 + y1) / 2) < 1


def _window_scale(win: tuple[float, float, float, float]) -> float:
    return min(NOMINAL_PLOT_PX[0] / (win[2] - win[0]), NOMINAL_PLOT_PX[1] / (win[3] - win[1]))


def test_a_view_that_reads_whole_starts_whole() -> None:
    g, vg, lay = grid_case(30)
    assert start_window(lay) is None
    fig = make_figure(g, vg, lay)
    xs = [c for b in lay.nodes.values() for c in (b[0], b[2])]
    assert fig.layout.xaxis.range[0] < min(xs) and fig.layout.xaxis.range[1] > max(xs)


def test_a_view_just_readable_at_the_nominal_plot_size_starts_readable_in_a_real_one() -> None:
    """Fitted whole at a scale just above the op names' threshold on the nominal plot, a view would show no
    text at all in a real plot a little smaller (CLIP from its config did, at 1400 x 900): it starts at a
    window."""
    for n in range(40, 400, 4):
        g, vg, lay = grid_case(n, cols=4)
        fit = fit_scale(extent(lay, 0.0))
        if LOD_SCALE["o"] <= fit < READABLE_SCALE:
            break
    else:
        pytest.fail("no grid case between the threshold and READABLE_SCALE")
    win = start_window(lay)
    assert win is not None and _window_scale(win) >= READABLE_SCALE
    assert NOMINAL_PLOT_PX[0] / (win[2] - win[0]) * 0.85 >= LOD_SCALE["o"]  # still drawn 15 % smaller


def test_a_tall_view_starts_readable_at_its_first_rank_and_fits_its_width() -> None:
    g, vg, lay = grid_case(600, cols=3)  # 200 rows: whole, it is a few pixels per box
    x0 = min(b[0] for b in lay.nodes.values())
    x1 = max(b[2] for b in lay.nodes.values())
    top = max(b[3] for b in lay.nodes.values())
    assert fit_scale((x0, 0.0, x1, top)) < LOD_SCALE["o"]
    win = start_window(lay)
    assert win is not None
    assert START_SCALE <= _window_scale(win) <= 1.0 + 1e-6  # op names and shape lines are drawn there
    assert win[0] <= x0 and win[2] >= x1  # the whole width: three columns fit
    drawing_top = extent(lay, 0.0)[3]  # the root cluster's top, above the first box
    assert win[3] >= drawing_top and win[3] - drawing_top < 30  # the top of the graph, not its middle
    fig = make_figure(g, vg, lay)
    assert list(fig.layout.yaxis.range) == [win[1], win[3]]


def test_a_long_left_to_right_view_starts_at_its_left_end() -> None:
    g, vg, lay = grid_case(600, cols=3)
    # the same boxes turned a quarter: 200 columns of 3, ranks running left to right
    turn = {k: (b[1], -b[2], b[3], -b[0]) for k, b in lay.nodes.items()}
    lr = dataclasses.replace(
        lay,
        nodes=turn,
        clusters={k: (b[1], -b[2], b[3], -b[0]) for k, b in lay.clusters.items()},
        edges=(),
        rankdir="LR",
    )
    win = start_window(lr)
    assert win is not None
    left = extent(lr, 0.0)[0]
    assert win[0] <= left and left - win[0] < 30
    assert _window_scale(win) >= START_SCALE


def test_zoomed_out_the_picture_names_modules_in_overview_labels_by_band():
    g, vg, lay = grid_case(300, cols=2)
    svg = svg_of(make_figure(g, vg, lay, tile=None))  # one picture (tests/test_render_tiles.py: cut in tiles)
    css = svg.find(f"{NS}style").text
    over = [t for t in svg.iter(f"{NS}text") if "ov" in (t.get("class") or "").split()]
    names = [c.label for c in vg.clusters] + [n.label for n in vg.nodes if n.kind in ("module", "folded")]
    assert over and all(any(t.text in name for name in names) for t in over), [t.text for t in over]
    assert "(root)" not in {t.text for t in over}
    bands = sorted({c for t in over for c in t.get("class").split() if c[0] == "o" and c[1:].isdigit()})
    assert bands
    for band in bands:  # each band: its own size, shown only in its zoom range
        m = re.search(r"\." + band + r"\{font-size:([\d.]+)px", css)
        assert m and re.search(
            r"@media \(min-width:[\d.]+px\) and \(max-width:[\d.]+px\)\{\." + band + r"\{display:inline\}\}",
            css,
        )
    # the first band starts where module names and headers drop out, and its text is OVERVIEW_PX there
    top = re.search(r"\.o0\{font-size:([\d.]+)px", css)
    if top:
        assert abs(float(top.group(1)) * LOD_SCALE["m"] / 2**0.5 - OVERVIEW_PX) < 0.2
