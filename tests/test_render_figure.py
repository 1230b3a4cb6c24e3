"""make_figure on hand-built views and layouts: structure, ids, labels, hover, themes, failures."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
from support_render import grid_case

from torchvista_dash.layout.types import Layout
from torchvista_dash.render import UIREVISION, make_figure
from torchvista_dash.render.figure import DETAIL_LIMIT, FAILED_WINDOW, LABEL_PX_RANGE, ids_in, label_px


def by_name(fig, name):
    matches = [t for t in fig.data if t.name == name]
    assert len(matches) == 1, f"expected one trace named {name!r}, got {[t.name for t in fig.data]}"
    return matches[0]


def n_parts(trace) -> int:
    """How many None-separated polygons/polylines a path trace holds."""
    return int(np.isnan(np.asarray(trace.x, dtype=float)).sum())


@pytest.fixture(scope="module")
def case30():
    return grid_case(30)


def test_one_label_point_per_visible_node_with_its_id(case30):
    g, vg, lay = case30
    fig = make_figure(g, vg, lay)
    labels = by_name(fig, "nodes:labels")
    assert list(labels.customdata) == [n.id for n in vg.nodes]
    assert len(labels.x) == len(vg.nodes)
    # each label point sits at the centre of its box
    for vid, x, y in zip(labels.customdata, labels.x, labels.y, strict=True):
        x0, y0, x1, y1 = lay.nodes[vid]
        assert x0 < x < x1 and y0 < y < y1


def test_node_boxes_are_one_polygon_per_node_grouped_by_kind(case30):
    g, vg, lay = case30
    fig = make_figure(g, vg, lay)
    kinds: dict[str, int] = {}
    for n in vg.nodes:
        kinds[n.kind] = kinds.get(n.kind, 0) + 1
    for kind, count in kinds.items():
        t = by_name(fig, f"nodes:{kind}")
        assert t.fill == "toself"
        assert n_parts(t) == count
    assert n_parts(by_name(fig, "nodes:folded-inner")) == kinds["folded"]


def test_edges_arrowheads_and_edge_labels(case30):
    g, vg, lay = case30
    fig = make_figure(g, vg, lay)
    drawn = n_parts(by_name(fig, "edges")) + n_parts(by_name(fig, "edges:params"))
    assert drawn == len(lay.edges)
    assert n_parts(by_name(fig, "arrowheads")) == len(lay.edges)
    assert list(by_name(fig, "edges:labels").text) == [e.label for e in lay.edges]
    # arrow tips are the edges' last points
    heads = by_name(fig, "arrowheads")
    tips = {(heads.x[i], heads.y[i]) for i in range(0, len(heads.x), 5)}
    assert tips == {(round(e.points[-1][0], 1), round(e.points[-1][1], 1)) for e in lay.edges}


def test_labels_marks_and_clickable_cluster_headers(case30):
    g, vg, lay = case30
    fig = make_figure(g, vg, lay)
    text = dict(zip(by_name(fig, "nodes:labels").customdata, by_name(fig, "nodes:labels").text, strict=True))
    assert text["mod:enc.block"].startswith("⊕ block: Block")
    assert "⊕ Layer ×3" in text["fold:mod:enc.layers.0"]
    assert text["n:0"] == "input_0"
    assert "1×8×64" in text["n:6"]                  # sublabel on the second line
    headers = by_name(fig, "clusters:headers")
    toggles = by_name(fig, "clusters:toggles")
    ids = [c.id for c in vg.clusters]
    assert list(headers.customdata) == ids and list(toggles.customdata) == ids
    assert all(t == "⊖" for t in toggles.text)
    assert "enc: Encoder" in headers.text[1]
    # headers sit inside the top of their cluster
    for cid, x, y in zip(headers.customdata, headers.x, headers.y, strict=True):
        x0, y0, x1, y1 = lay.clusters[cid]
        assert x0 < x < x1 and y1 - 20 < y < y1
    assert set(ids_in(fig, ["nodes:labels", "clusters:headers", "clusters:toggles"])) == (
        {n.id for n in vg.nodes} | set(ids))


def test_every_point_with_customdata_is_a_visible_id(case30):
    g, vg, lay = case30
    fig = make_figure(g, vg, lay)
    visible = {n.id for n in vg.nodes} | {c.id for c in vg.clusters}
    for t in fig.data:
        if t.customdata is not None:
            assert set(t.customdata) <= visible, t.name
        else:   # no id ⇒ never a hover/click target
            assert t.hoverinfo == "skip", t.name


def test_trace_count_is_bounded_not_per_node():
    small = make_figure(*grid_case(30))
    big = make_figure(*grid_case(2000))
    assert len(big.data) <= len(small.data) <= 25
    assert len(by_name(big, "nodes:labels").x) == 2000
    assert n_parts(by_name(big, "nodes:op")) == sum(1 for n in grid_case(2000)[1].nodes if n.kind == "op")


def test_large_views_draw_one_line_labels_and_no_edge_labels():
    g, vg, lay = grid_case(DETAIL_LIMIT + 50)
    fig = make_figure(g, vg, lay)
    assert "edges:labels" not in [t.name for t in fig.data]
    assert not any("<br>" in t for t in by_name(fig, "nodes:labels").text)
    assert "shapes are in the hover" in fig.layout.annotations[0].text
    assert all("outputs: 1×8×64" in h for h in by_name(fig, "nodes:labels").hovertext[5:50])
    forced = make_figure(g, vg, lay, details=True)
    assert len(by_name(forced, "edges:labels").text) == len(lay.edges)
    small = make_figure(*grid_case(30), details=False)
    assert "edges:labels" not in [t.name for t in small.data]


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


def test_themes_follow_plotly_templates(case30):
    g, vg, lay = case30
    light = make_figure(g, vg, lay, theme="light")
    dark = make_figure(g, vg, lay, theme="dark")
    assert light.layout.template.layout.paper_bgcolor == "white"
    assert dark.layout.template.layout.paper_bgcolor == "rgb(17,17,17)"
    assert by_name(light, "nodes:op").fillcolor != by_name(dark, "nodes:op").fillcolor
    with pytest.raises(ValueError, match="light, dark"):
        make_figure(g, vg, lay, theme="solarized")


def test_hover_text_names_module_shapes_source(case30):
    g, vg, lay = case30
    fig = make_figure(g, vg, lay)
    hover = dict(zip(by_name(fig, "nodes:labels").customdata, by_name(fig, "nodes:labels").hovertext, strict=True))
    op = hover["n:5"]
    assert "<b>linear</b> (op)" in op
    assert "module: enc (Encoder)" in op
    assert "outputs: 1×8×64 float32" in op and "inputs: 1×8×64 float32" in op
    assert "model.py:15" in op
    assert "parameters: 4,160" in op             # w (64×64) + b (64) of the root call
    assert "module: enc.block (Block)" in hover["mod:enc.block"] and "parameters: 100" in hover["mod:enc.block"]
    assert "3 repeated calls folded" in hover["fold:mod:enc.layers.0"]
    headers = by_name(fig, "clusters:headers")
    assert "module: enc (Encoder)" in headers.hovertext[1]


def test_failed_op_and_modules_in_red_hover_error_and_view_centred():
    g, vg, lay = grid_case(30, failed=True)
    fig = make_figure(g, vg, lay)
    failed = [n for n in vg.nodes if n.failed]
    assert n_parts(by_name(fig, "nodes:op:failed")) == len(failed) == 1
    assert n_parts(by_name(fig, "clusters:failed")) == 2
    red = by_name(fig, "nodes:op:failed").line.color
    assert red == by_name(fig, "clusters:failed").line.color
    assert set(by_name(fig, "clusters:headers").textfont.color) == {red}
    hover = dict(zip(by_name(fig, "nodes:labels").customdata, by_name(fig, "nodes:labels").hovertext, strict=True))
    assert "error:" in hover[failed[0].id] and "&lt;bad&gt;" in hover[failed[0].id]   # escaped, not HTML
    x0, y0, x1, y1 = lay.nodes[failed[0].id]
    (xa, xb), (ya, yb) = fig.layout.xaxis.range, fig.layout.yaxis.range
    assert abs((xa + xb) / 2 - (x0 + x1) / 2) < 1 and abs((ya + yb) / 2 - (y0 + y1) / 2) < 1


def test_highlight_outlines_a_node_or_cluster_and_rejects_hidden_ids(case30):
    g, vg, lay = case30
    fig = make_figure(g, vg, lay, highlight="n:7")
    hl = by_name(fig, "highlight")
    x0, y0, x1, y1 = lay.nodes["n:7"]
    xs = [v for v in hl.x if not np.isnan(v)]
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


def test_label_size_fits_small_views_and_clamps_large_ones():
    assert label_px((0, 0, 300, 200)) == LABEL_PX_RANGE[1]
    assert label_px((0, 0, 40000, 30000)) == LABEL_PX_RANGE[0]
    mid = label_px((0, 0, 1200, 800))
    assert LABEL_PX_RANGE[0] < mid < LABEL_PX_RANGE[1]


def test_webgl_variant_keeps_text_svg_and_ids(case30):
    g, vg, lay = case30
    fig = make_figure(g, vg, lay, webgl=True)
    types = {t.name: t.type for t in fig.data}
    assert types["nodes:op"] == "scattergl" and types["edges"] == "scattergl"
    assert types["nodes:labels"] == "scatter"
    assert list(by_name(fig, "nodes:labels").customdata) == [n.id for n in vg.nodes]


def test_empty_view_is_an_empty_figure_not_an_error():
    g, vg, _ = grid_case(12)
    empty = dataclasses.replace(vg, nodes=(), edges=(), clusters=())
    fig = make_figure(g, empty, Layout(nodes={}, clusters={}, parent={}, edges=(), width=0.0, height=0.0))
    assert len(fig.data) == 0 and fig.layout.yaxis.scaleanchor == "x"


def test_user_text_is_escaped_in_labels_and_hover(case30):
    g, vg, lay = case30
    nodes = tuple(dataclasses.replace(n, label="<script>x</script>") if n.id == "n:6" else n for n in vg.nodes)
    fig = make_figure(g, dataclasses.replace(vg, nodes=nodes), lay)
    text = dict(zip(by_name(fig, "nodes:labels").customdata, by_name(fig, "nodes:labels").text, strict=True))
    assert text["n:6"].startswith("&lt;script&gt;x&lt;/script&gt;")


def test_labels_start_hidden_only_when_too_zoomed_out_to_read():
    g, vg, lay = grid_case(300, cols=2)                   # 150 rows: ~0.06 px per point at the fit
    fig = make_figure(g, vg, lay)
    assert fig.layout.meta["torchvista_dash"]["labels"] is False
    assert by_name(fig, "nodes:labels").mode == "none"                  # no SVG element per point
    assert list(by_name(fig, "nodes:labels").customdata) == [n.id for n in vg.nodes]   # still hover/click targets
    (menu,) = fig.layout.updatemenus
    show = menu.buttons[0].args
    names = [fig.data[i].name for i in show[1]]
    assert {"nodes:labels", "clusters:headers"} <= set(names) and show[0]["mode"] == "text"
    assert menu.active == -1                              # the first click applies ``args`` (show)
    assert make_figure(g, vg, lay, labels=True).layout.updatemenus == ()
    assert by_name(make_figure(g, vg, lay, labels=True), "nodes:labels").mode == "text"
    small = make_figure(*grid_case(30))
    assert small.layout.meta["torchvista_dash"]["labels"] is True and small.layout.updatemenus == ()


def test_failed_view_shows_everything_around_the_failure_when_readable():
    g, vg, lay = grid_case(12, failed=True)                # small: the whole graph fits, centred on the op
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
    assert fig.layout.meta["torchvista_dash"]["labels"] is True     # readable at that zoom
